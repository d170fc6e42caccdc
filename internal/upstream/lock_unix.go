//go:build unix

package upstream

import (
	"fmt"
	"os"

	"github.com/mpspatch/mpspatch/internal/flock"
)

// fileLock is an advisory lock on a file (flock): released when the process dies, so a
// killed run never leaves the cache locked.
type fileLock struct{ f *os.File }

func lockFile(path string, exclusive bool) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := flock.Acquire(f.Fd(), exclusive, -1); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &fileLock{f: f}, nil
}

func (l *fileLock) unlock() {
	if l != nil && l.f != nil {
		flock.Release(l.f.Fd())
		l.f.Close()
	}
}
