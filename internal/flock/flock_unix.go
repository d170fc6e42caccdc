//go:build unix

package flock

import (
	"errors"
	"syscall"
	"time"
)

// ErrBusy is returned by Acquire when another process held the lock for longer than the
// wait allowed.
var ErrBusy = errors.New("locked by another process")

// Acquire locks fd, exclusive or shared. With wait < 0 it blocks until the lock is free;
// otherwise it polls for up to wait and then returns ErrBusy. An interrupted system call
// is retried.
func Acquire(fd uintptr, exclusive bool, wait time.Duration) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if wait < 0 {
		for {
			if err := syscall.Flock(int(fd), how); err != syscall.EINTR {
				return err
			}
		}
	}
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; ; delay = min(2*delay, 10*time.Millisecond) {
		err := syscall.Flock(int(fd), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		if time.Now().After(deadline) {
			return ErrBusy
		}
		time.Sleep(delay)
	}
}

// Release unlocks fd (closing the file releases it too).
func Release(fd uintptr) error { return syscall.Flock(int(fd), syscall.LOCK_UN) }
