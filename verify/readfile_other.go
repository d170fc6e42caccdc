//go:build !unix

package verify

import (
	"os"

	"github.com/mpspatch/mpspatch/internal/confined"
)

// openRegular opens name for reading after checking, before the open (which for a FIFO
// would wait for a writer), and again after it, that it is a regular file.
func openRegular(name string) (*os.File, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, confined.NotRegular(fi.Mode())
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
