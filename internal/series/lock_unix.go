//go:build unix

package series

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
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
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; ; delay = min(2*delay, 10*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock the tree: %w", err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, ErrBusy
		}
		time.Sleep(delay)
	}
}
