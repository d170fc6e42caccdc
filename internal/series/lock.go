package series

import (
	"errors"
	"fmt"
	"os"
)

// Lock takes the tree's exclusive writer lock, as Apply does, for writers outside this
// package that call Recover and Commit themselves (internal/stack: apply --commit and
// rebase). It waits up to LockWait for another mpspatch; the returned function releases
// the lock.
func Lock(root *os.Root) (func(), error) { return lockTree(root, true, LockWait) }

// TreeLock is the tree's exclusive writer lock held across several steps by one caller:
// `mpspatch run` holds it from before its apply stage reads the tree's state until its
// audit and build have read the files, so that no other mpspatch unapplies the tree in
// between. Apply, Unapply and InspectLocked given the lock (Options.Held) take none of
// their own: the lock is on the tree's directory, and a second lock on it by the same
// process would wait for the first.
type TreeLock struct {
	dir     os.FileInfo // the locked directory, to check a root against
	release func()
}

// Hold takes the tree's writer lock, waiting up to LockWait (then ErrBusy).
func Hold(root *os.Root) (*TreeLock, error) {
	fi, err := root.Stat(".")
	if err != nil {
		return nil, fmt.Errorf("lock the tree: %w", err)
	}
	release, err := lockTree(root, true, LockWait)
	if err != nil {
		return nil, err
	}
	return &TreeLock{dir: fi, release: release}, nil
}

// Release gives the lock back; releasing twice is harmless.
func (l *TreeLock) Release() {
	if l != nil && l.release != nil {
		l.release()
		l.release = nil
	}
}

// errLockElsewhere refuses a held lock that is not the lock of the tree at hand.
var errLockElsewhere = errors.New("the lock passed in is not held on this tree")

// acquire takes the tree's lock (exclusive for a writer) unless held is this tree's lock,
// still held: then there is nothing to take and nothing to release.
func acquire(root *os.Root, exclusive bool, held *TreeLock) (func(), error) {
	if held == nil {
		return lockTree(root, exclusive, LockWait)
	}
	fi, err := root.Stat(".")
	if err != nil {
		return nil, fmt.Errorf("lock the tree: %w", err)
	}
	if held.release == nil || !os.SameFile(fi, held.dir) {
		return nil, fmt.Errorf("lock the tree: %w", errLockElsewhere)
	}
	return func() {}, nil
}
