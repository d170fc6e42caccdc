//go:build unix

package stack

import "syscall"

// openStateFlags open a state file without following a symbolic link in its last
// component (ELOOP instead) and without waiting for a writer when it is a FIFO: the file
// is then refused by what fstat says about it.
const openStateFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
