//go:build !unix

package statekey

import (
	"os"
)

// checkPrivate has no owner to check off unix; mpspatch targets macOS and Linux.
func checkPrivate(p string, dir bool) error {
	_, err := os.Lstat(p)
	return err
}
