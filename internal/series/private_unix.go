//go:build unix

package series

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// checkPrivate refuses a key directory or file that another user owns, that is a
// symbolic link, or that others may write (a directory) or read (the key).
func checkPrivate(p string, dir bool) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("journal key %s: is a symbolic link; refusing it", p)
	case dir && !fi.IsDir():
		return fmt.Errorf("journal key directory %s: not a directory", p)
	case ok && int(st.Uid) != os.Getuid():
		return fmt.Errorf("journal key %s: owned by uid %d, not by you (uid %d); refusing it", p, st.Uid, os.Getuid())
	case dir && fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("journal key directory %s: others may write it (mode %o); refusing it", p, fi.Mode().Perm())
	case !dir && fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("journal key %s: others may read it (mode %o); want 0600", p, fi.Mode().Perm())
	}
	return nil
}

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
