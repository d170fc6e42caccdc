package series

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// CheckPath refuses a patch path that could write outside the tree or into git's own
// data: absolute paths, `..` components, anything under a `.git` directory, NUL bytes,
// backslashes (a Windows separator smuggled past the `/` checks) and empty components.
func CheckPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%q: path contains a NUL byte", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%s: absolute paths are refused; want a path relative to the tree", p)
	case strings.Contains(p, `\`):
		return fmt.Errorf("%s: backslashes are refused in paths", p)
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == "" || c == ".":
			return fmt.Errorf("%s: empty or `.` path component", p)
		case c == "..":
			return fmt.Errorf("%s: `..` components are refused; the path would leave the tree", p)
		case strings.EqualFold(c, ".git"):
			return fmt.Errorf("%s: paths under .git are refused", p)
		}
	}
	if path.Clean(p) != p {
		return fmt.Errorf("%s: path is not clean", p)
	}
	return nil
}

// checkNoSymlink refuses a path whose parent directories or the file itself are symbolic
// links inside the tree. os.Root already refuses links that leave the tree; this also
// refuses links that stay inside it, because a patch must name the file it changes.
func checkNoSymlink(root *os.Root, p string) error {
	parts := strings.Split(p, "/")
	for i := 1; i <= len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		fi, err := root.Lstat(prefix)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // nothing further exists to be a link
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if i == len(parts) {
				return fmt.Errorf("%s: is a symbolic link in the tree; refusing to patch through it", p)
			}
			return fmt.Errorf("%s: %s is a symbolic link in the tree; refusing to patch through it", p, prefix)
		}
		if i < len(parts) && !fi.IsDir() {
			return fmt.Errorf("%s: %s is not a directory", p, prefix)
		}
		if i == len(parts) && !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
	}
	return nil
}
