package confined

import (
	"fmt"
	"os"
	"path/filepath"
)

// Identity names the checkout at tree: the device and inode of its root directory and its
// absolute path, links resolved. State bound to it (the stamps of `mpspatch run`) belongs
// to this directory only: a copy of the whole checkout (cp -a, rsync, a restored backup)
// is a new directory with a new inode, and a checkout moved elsewhere has a new path, so
// the state they carry is not theirs and is not trusted. An identifier stored inside the
// tree could not do this: a copy would carry it along.
func Identity(tree *os.Root, treePath string) (string, error) {
	fi, err := tree.Stat(".")
	if err != nil {
		return "", fmt.Errorf("identify %s: %w", treePath, err)
	}
	abs, err := filepath.Abs(treePath)
	if err != nil {
		return "", fmt.Errorf("identify %s: %w", treePath, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return fileID(fi) + ":" + abs, nil
}
