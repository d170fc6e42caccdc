//go:build !unix

package metalcheck

import (
	"io"
	"os"
)

// readInto reads the file at name into buf (grown as needed) and returns the filled slice.
func readInto(buf []byte, name string) ([]byte, error) {
	// Checked before the open, which for a FIFO would wait for a writer.
	if fi, err := os.Stat(name); err != nil {
		return nil, err
	} else if err := checkSource(fi.Mode(), fi.Size()); err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkSource(fi.Mode(), fi.Size()); err != nil {
		return nil, err
	}
	buf = readBuffer(buf, int(fi.Size()))
	for {
		if buf, err = room(buf); err != nil {
			return nil, err
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
