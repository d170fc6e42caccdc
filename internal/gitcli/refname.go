package gitcli

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadBranchName is wrapped by CheckBranchName's refusals.
var ErrBadBranchName = errors.New("not a valid branch name")

// CheckBranchName refuses a name that git would not accept as a branch: what
// `git check-ref-format --branch` refuses (a leading dash, "HEAD", and every rule of
// check-ref-format for refs/heads/NAME), and "@", which git reads as HEAD. A name that
// passes can never be taken for an option or a revision expression by git, so it is safe
// wherever git expects a branch. Written here rather than asked of git, because it guards
// names read back from state files before any git process sees them; the tests compare it
// with git's own check on many names.
func CheckBranchName(name string) error {
	bad := func(why string) error { return fmt.Errorf("%q: %w (%s)", name, ErrBadBranchName, why) }
	switch {
	case name == "":
		return bad("empty")
	case name == "HEAD" || name == "@":
		return bad("git reads it as HEAD")
	case name[0] == '-':
		return bad("starts with a dash, which git would take for an option")
	}
	if why := checkRefName("refs/heads/" + name); why != "" {
		return bad(why)
	}
	return nil
}

// checkRefName applies git's check_refname_format rules (without the pattern and
// one-level options) to a full reference name, and says which rule it breaks ("" when
// none).
func checkRefName(ref string) string {
	if ref == "@" {
		return "is the single character @"
	}
	if strings.HasSuffix(ref, ".") {
		return "ends with a dot"
	}
	for _, comp := range strings.Split(ref, "/") {
		switch {
		case comp == "":
			return "has an empty path component (a leading, trailing or doubled slash)"
		case comp[0] == '.':
			return "has a component that starts with a dot"
		case strings.HasSuffix(comp, ".lock"):
			return "has a component that ends with .lock"
		}
	}
	if strings.Contains(ref, "..") {
		return "contains .."
	}
	if strings.Contains(ref, "@{") {
		return "contains @{"
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		switch {
		case c < 0x20 || c == 0x7f:
			return "contains a control character"
		case strings.IndexByte(" ~^:?*[\\", c) >= 0:
			return fmt.Sprintf("contains %q", string(c))
		}
	}
	return ""
}
