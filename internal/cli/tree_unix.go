//go:build unix

package cli

import (
	"io/fs"
	"syscall"
)

// sameDevice says whether a and b are on one file system (findTreeTop stops where the
// device changes, as git does without GIT_DISCOVERY_ACROSS_FILESYSTEM).
func sameDevice(a, b fs.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 {
		return true
	}
	return uint64(sa.Dev) == uint64(sb.Dev) //nolint:unconvert // Dev is int32 on darwin
}
