//go:build unix

package statekey

import (
	"fmt"
	"os"
	"syscall"
)

// checkPrivate refuses a key directory or file that another user owns, that is a
// symbolic link, or that others may write (a directory) or read (the key).
func checkPrivate(p string, dir bool) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("state key %s: is a symbolic link; refusing it", p)
	case dir && !fi.IsDir():
		return fmt.Errorf("state key directory %s: not a directory", p)
	case ok && int(st.Uid) != os.Getuid():
		return fmt.Errorf("state key %s: owned by uid %d, not by you (uid %d); refusing it", p, st.Uid, os.Getuid())
	case dir && fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("state key directory %s: others may write it (mode %o); refusing it", p, fi.Mode().Perm())
	case !dir && fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("state key %s: others may read it (mode %o); want 0600", p, fi.Mode().Perm())
	}
	return nil
}
