//go:build unix

package metalcheck

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// readInto reads the file at name into buf (grown as needed) and returns the filled slice.
// It makes the system calls itself: os.Open readies every file for the network poller
// (four fcntl and an epoll_ctl that fails for a regular file), twice the calls of the
// open, fstat, read and close that reading a source needs, a hundred times per audit.
func readInto(buf []byte, name string) ([]byte, error) {
	var fd int
	var err error
	for {
		// O_NONBLOCK: opening a FIFO would otherwise wait for a writer; it is refused
		// below, and a regular file reads the same either way.
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	for {
		err = syscall.Fstat(fd, &st)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return nil, &os.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	if err := checkSource(fileMode(uint32(st.Mode)), st.Size); err != nil {
		return nil, err
	}
	buf = readBuffer(buf, int(st.Size))
	for {
		if buf, err = room(buf); err != nil {
			return nil, err
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// fileMode is the type part of a stat mode as io/fs spells it.
func fileMode(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	}
	return fs.ModeIrregular
}
