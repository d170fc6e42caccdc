//go:build !unix

package stack

// openStateFlags: elsewhere there is no O_NOFOLLOW or O_NONBLOCK; readStateFile's fstat
// still refuses anything but a regular file.
const openStateFlags = 0
