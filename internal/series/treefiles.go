package series

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// treeFiles reads the series' files from a tree once: Inspect and Compute in one run
// share it, and the directories on a path are checked for symbolic links once each.
type treeFiles struct {
	root  *os.Root
	dirOK map[string]bool
	files map[string]treeFile
}

type treeFile struct {
	exists bool
	data   []byte
	mode   fs.FileMode // permission bits
}

func newTreeFiles(root *os.Root) *treeFiles {
	return &treeFiles{root: root, dirOK: map[string]bool{}, files: map[string]treeFile{}}
}

// read returns path's content after checking that it is a safe, symlink-free, regular
// file (or absent).
func (t *treeFiles) read(p string) (treeFile, error) {
	if f, ok := t.files[p]; ok {
		return f, nil
	}
	if err := CheckPath(p); err != nil {
		return treeFile{}, &UnsafePathError{Msg: err.Error()}
	}
	if err := t.checkDirs(p); err != nil {
		return treeFile{}, err
	}
	var f treeFile
	fi, err := t.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.files[p] = f
		return f, nil
	case err != nil:
		return f, fmt.Errorf("%s: %w", p, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return f, unsafePathf("%s: is a symbolic link in the tree; refusing to patch through it", p)
	case !fi.Mode().IsRegular():
		return f, unsafePathf("%s: not a regular file", p)
	}
	data, err := t.root.ReadFile(p)
	if err != nil {
		return f, fmt.Errorf("read %s: %w", p, err)
	}
	f = treeFile{exists: true, data: data, mode: fi.Mode().Perm()}
	t.files[p] = f
	return f, nil
}

// checkDirs refuses a path whose directories are symbolic links inside the tree. os.Root
// already refuses links that leave the tree; this also refuses links that stay inside it,
// because a patch must name the file it changes.
func (t *treeFiles) checkDirs(p string) error {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		if t.dirOK[prefix] {
			continue
		}
		fi, err := t.root.Lstat(prefix)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // nothing further exists to be a link
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return unsafePathf("%s: %s is a symbolic link in the tree; refusing to patch through it", p, prefix)
		}
		if !fi.IsDir() {
			return unsafePathf("%s: %s is not a directory", p, prefix)
		}
		t.dirOK[prefix] = true
	}
	return nil
}

// UnsafePathError is a tree path the engine refuses to read or write through: a symbolic
// link, a non-regular file, a path that would leave the tree. Nothing was written.
type UnsafePathError struct{ Msg string }

func (e *UnsafePathError) Error() string { return e.Msg }

func unsafePathf(format string, args ...any) error {
	return &UnsafePathError{Msg: fmt.Sprintf(format, args...)}
}
