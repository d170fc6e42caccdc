package series

import (
	"errors"
	"fmt"
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
