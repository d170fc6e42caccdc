//go:build unix

package confined

import (
	"fmt"
	"os"
	"syscall"
)

// fileID is a directory's device and inode.
func fileID(fi os.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", uint64(st.Dev), uint64(st.Ino))
	}
	return ""
}

const nonBlocking = syscall.O_NONBLOCK
