//go:build unix

package gitcli

import "syscall"

// openNoFollowFlags open a state file without following a symbolic link in its last
// component and without waiting for a writer when it is a FIFO (fstat then refuses it).
const openNoFollowFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
