package series

import "os"

// Lock takes the tree's exclusive writer lock, as Apply does, for writers outside this
// package that call Recover and Commit themselves (internal/stack: apply --commit and
// rebase). It waits up to LockWait for another mpspatch; the returned function releases
// the lock.
func Lock(root *os.Root) (func(), error) { return lockTree(root, true, LockWait) }
