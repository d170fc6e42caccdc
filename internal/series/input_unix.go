//go:build unix

package series

import "syscall"

// openNonblock makes opening a FIFO return at once instead of waiting for a writer; on a
// regular file it changes nothing.
const openNonblock = syscall.O_NONBLOCK
