//go:build unix

package flock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func open(t *testing.T, p string) *os.File {
	t.Helper()
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Two open file descriptions of one file conflict like two processes would.
func TestExclusiveExcludesAndSharedShares(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	a, b := open(t, p), open(t, p)
	if err := Acquire(a.Fd(), true, 0); err != nil {
		t.Fatal(err)
	}
	if err := Acquire(b.Fd(), false, 30*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Fatalf("shared lock under an exclusive one: have %v, want ErrBusy", err)
	}
	if err := Release(a.Fd()); err != nil {
		t.Fatal(err)
	}
	if err := Acquire(b.Fd(), false, 0); err != nil {
		t.Fatalf("after release: %v", err)
	}
	if err := Acquire(a.Fd(), false, 0); err != nil {
		t.Fatalf("two shared locks: %v", err)
	}
}

func TestBlockingAcquireWaitsForRelease(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	a, b := open(t, p), open(t, p)
	if err := Acquire(a.Fd(), true, -1); err != nil {
		t.Fatal(err)
	}
	fd, released := a.Fd(), make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(50 * time.Millisecond)
		Release(fd)
	}()
	if err := Acquire(b.Fd(), true, -1); err != nil {
		t.Fatal(err)
	}
	<-released
}
