//go:build unix

package series

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mpspatch/mpspatch/internal/flock"
)

// lockTree takes an advisory lock (flock) on the tree's root directory: exclusive for a
// command that writes, shared for one that only reads. It is the directory itself that is
// locked, not a file in .mpspatch/, so that a read-only command writes nothing, and the
// kernel drops the lock when the process dies, so a crash never leaves a stale lock.
// It waits up to wait, then gives up with ErrBusy.
func lockTree(root *os.Root, exclusive bool, wait time.Duration) (func(), error) {
	f, err := root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("lock the tree: %w", err)
	}
	switch err := flock.Acquire(f.Fd(), exclusive, wait); {
	case errors.Is(err, flock.ErrBusy):
		f.Close()
		return nil, ErrBusy
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("lock the tree: %w", err)
	}
	return func() { f.Close() }, nil
}
