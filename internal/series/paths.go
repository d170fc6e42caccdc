package series

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest path component the engine writes: 255 bytes is the limit of
// APFS, HFS+, ext4 and most other filesystems. A longer name would fail halfway through
// the write phase, so the planner refuses it before anything is written.
const MaxNameLen = 255

// CheckPath refuses a patch path that could write outside the tree, into git's own data
// or into mpspatch's state: absolute paths, `..` components, anything under a `.git` or
// `.mpspatch` directory (at any depth, and under every spelling that a case-insensitive,
// HFS+ or NTFS filesystem treats as the same name, as git's core.protectHFS and
// core.protectNTFS do), NUL bytes, backslashes (a Windows separator smuggled past the `/`
// checks) and empty components. Journal entries go through the same check.
func CheckPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%s: path contains a NUL byte", QuotePath(p))
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%s: absolute paths are refused; want a path relative to the tree", QuotePath(p))
	case strings.Contains(p, `\`):
		return fmt.Errorf("%s: backslashes are refused in paths", QuotePath(p))
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == "" || c == ".":
			return fmt.Errorf("%s: empty or `.` path component", QuotePath(p))
		case c == "..":
			return fmt.Errorf("%s: `..` components are refused; the path would leave the tree", QuotePath(p))
		case foldsTo(c, ".git", "git~1"):
			return fmt.Errorf("%s: paths under .git are refused", QuotePath(p))
		case foldsTo(c, StateDir, "mpspat~1"):
			return fmt.Errorf("%s: paths under %s are refused; mpspatch keeps its journal there", QuotePath(p), StateDir)
		}
	}
	if path.Clean(p) != p {
		return fmt.Errorf("%s: path is not clean", QuotePath(p))
	}
	return nil
}

// NamesGitDir says whether a path component is git's own directory under any spelling
// that a case-insensitive, HFS+ or NTFS filesystem folds to `.git` (as CheckPath judges).
func NamesGitDir(component string) bool { return foldsTo(component, ".git", "git~1") }

// checkNameLengths refuses a path with a component longer than MaxNameLen bytes.
func checkNameLengths(p string) error {
	for _, c := range strings.Split(p, "/") {
		if len(c) > MaxNameLen {
			return fmt.Errorf("path component of %d bytes is longer than the %d bytes filesystems allow", len(c), MaxNameLen)
		}
	}
	return nil
}

// foldsTo says whether the path component c names the same directory as one of names
// on a filesystem that ignores case (APFS, HFS+, NTFS), drops the code points HFS+
// ignores (U+200C and friends), or drops trailing spaces and dots and reads `:` as the
// start of a stream name (NTFS). names are lowercase ASCII.
func foldsTo(c string, names ...string) bool {
	f := foldName(c)
	for _, n := range names {
		if f == n {
			return true
		}
	}
	return false
}

func foldName(c string) string {
	var b strings.Builder
	for _, r := range c {
		if hfsIgnorable(r) {
			continue
		}
		if r < utf8.RuneSelf && 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	s := b.String()
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i] // NTFS: `.git::$INDEX_ALLOCATION` is .git
	}
	return strings.TrimRight(s, " .")
}

// hfsIgnorable lists the code points HFS+ drops when it compares names (git's
// is_hfs_dotgit uses the same list).
func hfsIgnorable(r rune) bool {
	switch {
	case r == 0x200c, r == 0x200d, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x206a && r <= 0x206f:
		return true
	case r == 0xfeff:
		return true
	}
	return false
}

// QuotePath renders a path for a message as git does with core.quotePath (its default):
// a path holding control characters, a double quote, a backslash or any byte outside
// ASCII is written in double quotes with C escapes, so an escape sequence in a hostile
// file name is shown, never sent to the terminal.
func QuotePath(p string) string {
	need := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			need = true
			break
		}
	}
	if !need {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
