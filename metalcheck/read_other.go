//go:build !unix

package metalcheck

import (
	"io"
	"os"
)

// readInto reads the file at name into buf (grown as needed) and returns the filled slice.
func readInto(buf []byte, name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := int(fi.Size())
	buf = readBuffer(buf, size)
	for {
		buf = room(buf)
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
