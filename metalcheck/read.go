package metalcheck

import (
	"fmt"
	"io/fs"

	"github.com/mpspatch/mpspatch/internal/confined"
)

// MaxSourceSize bounds a source file the audit reads: the MPS sources are well under a
// megabyte, and a planted multi-gigabyte file must not make the audit read without end.
const MaxSourceSize = 64 << 20

// checkSource refuses what the audit must not read: anything but a regular file (a FIFO
// would block the read forever, a device such as a link to /dev/zero would never end) and
// a file over MaxSourceSize.
func checkSource(mode fs.FileMode, size int64) error {
	if !mode.IsRegular() {
		return confined.NotRegular(mode)
	}
	if size > MaxSourceSize {
		return fmt.Errorf("%d bytes, over the %d MiB a source may have; refusing to read it", size, MaxSourceSize>>20)
	}
	return nil
}

// readBuffer returns buf emptied, with room for a file of size bytes plus the one more
// that the read seeing end-of-file needs; a buffer too small is replaced by one with a
// quarter's slack, so that the next file of a worker usually fits.
func readBuffer(buf []byte, size int) []byte {
	if cap(buf) < size+1 {
		buf = make([]byte, 0, size+size/4+512)
	}
	return buf[:0]
}

// room returns buf with at least one byte of spare capacity to read into: a file may
// have grown since its size was taken, though not past MaxSourceSize.
func room(buf []byte) ([]byte, error) {
	if len(buf) > MaxSourceSize {
		return nil, fmt.Errorf("grew over the %d MiB a source may have while it was read; refusing it", MaxSourceSize>>20)
	}
	if len(buf) == cap(buf) {
		buf = append(buf, 0)[:len(buf)]
	}
	return buf, nil
}
