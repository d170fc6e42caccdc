//go:build unix

package verify

import (
	"os"
	"syscall"
)

// openRegular opens name for reading without blocking: O_NONBLOCK, because opening a FIFO
// would otherwise wait for a writer (and a FIFO is refused right after, by fstat on what
// was opened, so nothing can be swapped in between).
func openRegular(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
