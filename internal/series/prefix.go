package series

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// A diff's file headers name each path with a prefix: `diff --git a/x.c b/x.c` is git's
// default, diff.mnemonicPrefix writes c/ i/ o/ w/, and diff.noprefix (or
// format.noprefix) writes none. The engine reads paths as git apply -p1 does, dropping
// the first component, so a mail without prefixes would patch `new.txt` where it means
// `src/new.txt`. DiffPrefixes tells the style from the headers themselves (the
// `diff --git` line with the ---/+++ and rename/copy lines that must agree with it),
// so that import can rewrite such a mail and lint can refuse one.

// PrefixStyle is the pair of prefixes a diff's headers use ("a/", "b/"; "", "" for none).
type PrefixStyle struct{ Src, Dst string }

// GitDefault is `a/` `b/`, the only style the series holds.
var GitDefault = PrefixStyle{"a/", "b/"}

// candidateStyles are the styles git writes: its default, the mnemonic pairs, none.
var candidateStyles = []PrefixStyle{GitDefault, {"c/", "w/"}, {"c/", "i/"}, {"i/", "w/"}, {"o/", "w/"}, {"1/", "2/"}, {"", ""}}

// FileHeader is what one file's headers say, the prefixes taken off.
type FileHeader struct {
	Line     int    // 1-based line of its `diff --git`
	Old, New string // paths without prefix; empty for /dev/null on that side
}

// headerSection is one file's header lines as written.
type headerSection struct {
	line          int
	gitLine       string // after "diff --git "
	minus, plus   string // after "--- " / "+++ ", tab suffix removed; "" when absent
	from, to      string // rename or copy from/to, unquoted; "" when absent
	hasFrom, hasT bool
}

// DiffPrefixes finds the one prefix style under which every file header of raw agrees
// with itself, and the paths it names. It prefers git's default when that fits; it
// fails, naming the line, when no style or more than one other style fits.
func DiffPrefixes(raw []byte) (PrefixStyle, []FileHeader, error) {
	secs := headerSections(raw)
	if len(secs) == 0 {
		return GitDefault, nil, nil
	}
	var fits []PrefixStyle
	var heads [][]FileHeader
	for _, st := range candidateStyles {
		if hs, ok := fitStyle(secs, st); ok {
			if st == GitDefault {
				return st, hs, nil
			}
			fits = append(fits, st)
			heads = append(heads, hs)
		}
	}
	if len(fits) == 1 {
		return fits[0], heads[0], nil
	}
	if len(fits) == 0 {
		return PrefixStyle{}, nil, &PrefixError{Line: secs[0].line, Msg: "the file headers (`diff --git`, ---/+++, rename lines) do not agree on one path under any prefix style; want `diff --git a/PATH b/PATH` as git format-patch writes it"}
	}
	return PrefixStyle{}, nil, &PrefixError{Line: secs[0].line, Msg: fmt.Sprintf("cannot tell the path prefixes of this diff (it reads as %q/%q and as %q/%q); re-export it with git format-patch's default a/ b/ prefixes", fits[0].Src, fits[0].Dst, fits[1].Src, fits[1].Dst)}
}

// PrefixError says at which `diff --git` line the prefixes could not be told.
type PrefixError struct {
	Line int
	Msg  string
}

func (e *PrefixError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// headerSections reads each file's header lines (up to its first hunk or binary patch).
func headerSections(raw []byte) []headerSection {
	var secs []headerSection
	var cur *headerSection
	lineNo := 0
	for len(raw) > 0 {
		var l []byte
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			l, raw = raw[:i], raw[i+1:]
		} else {
			l, raw = raw, nil
		}
		lineNo++
		s := string(l)
		if rest, ok := strings.CutPrefix(s, "diff --git "); ok {
			secs = append(secs, headerSection{line: lineNo, gitLine: rest})
			cur = &secs[len(secs)-1]
			continue
		}
		if cur == nil {
			continue
		}
		switch {
		case strings.HasPrefix(s, "@@ ") || strings.HasPrefix(s, "GIT binary patch") || strings.HasPrefix(s, "Binary files "):
			cur = nil
		case strings.HasPrefix(s, "--- "):
			cur.minus = strings.TrimSuffix(s[4:], "\t")
		case strings.HasPrefix(s, "+++ "):
			cur.plus = strings.TrimSuffix(s[4:], "\t")
		case strings.HasPrefix(s, "rename from "), strings.HasPrefix(s, "copy from "):
			_, v, _ := strings.Cut(s, " from ")
			cur.from, cur.hasFrom = unquoteGitPath(v), true
		case strings.HasPrefix(s, "rename to "), strings.HasPrefix(s, "copy to "):
			_, v, _ := strings.Cut(s, " to ")
			cur.to, cur.hasT = unquoteGitPath(v), true
		}
	}
	return secs
}

// fitStyle says whether every section reads consistently under st, and the paths.
func fitStyle(secs []headerSection, st PrefixStyle) ([]FileHeader, bool) {
	var out []FileHeader
	for _, s := range secs {
		h, ok := fitSection(s, st)
		if !ok {
			return nil, false
		}
		out = append(out, h)
	}
	return out, true
}

func fitSection(s headerSection, st PrefixStyle) (FileHeader, bool) {
	h := FileHeader{Line: s.line}
	// The ---/+++ lines, when present, name each side (or /dev/null).
	side := func(v, prefix string) (string, bool, bool) { // path, isNull, ok
		if v == "" {
			return "", false, true
		}
		if v == "/dev/null" {
			return "", true, true
		}
		p := unquoteGitPath(v)
		rest, ok := strings.CutPrefix(p, prefix)
		return rest, false, ok && rest != ""
	}
	oldP, oldNull, ok1 := side(s.minus, st.Src)
	newP, newNull, ok2 := side(s.plus, st.Dst)
	if !ok1 || !ok2 {
		return h, false
	}
	// The diff --git line: two names, each possibly quoted; unquoted names may hold
	// spaces, so every split is tried.
	for _, pair := range splitGitLine(s.gitLine) {
		a, okA := strings.CutPrefix(pair[0], st.Src)
		b, okB := strings.CutPrefix(pair[1], st.Dst)
		if !okA || !okB || a == "" || b == "" {
			continue
		}
		switch {
		case s.hasFrom || s.hasT:
			if a != s.from || b != s.to {
				continue
			}
		case a != b:
			continue
		}
		if (s.minus != "" && !oldNull && oldP != a) || (s.plus != "" && !newNull && newP != b) {
			continue
		}
		h.Old, h.New = a, b
		if oldNull {
			h.Old = ""
		}
		if newNull {
			h.New = ""
		}
		return h, true
	}
	return h, false
}

// splitGitLine returns the ways the rest of a `diff --git` line splits into two names.
func splitGitLine(rest string) [][2]string {
	if strings.HasPrefix(rest, `"`) {
		if end := closingQuote(rest); end > 0 && end+1 < len(rest) && rest[end+1] == ' ' {
			return [][2]string{{unquoteGitPath(rest[:end+1]), unquoteGitPath(rest[end+2:])}}
		}
		return nil
	}
	if i := strings.Index(rest, ` "`); i >= 0 && strings.HasSuffix(rest, `"`) {
		return [][2]string{{rest[:i], unquoteGitPath(rest[i+1:])}}
	}
	var out [][2]string
	for i := 0; i < len(rest); i++ {
		if rest[i] == ' ' {
			out = append(out, [2]string{rest[:i], rest[i+1:]})
		}
	}
	return out
}

func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// unquoteGitPath undoes git's C-style quoting of a path ("a/na\303\257ve.txt"); an
// unquoted path comes back as it is.
func unquoteGitPath(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// RewritePrefixes rewrites the file headers of raw from style st to git's default a/
// b/, keeping every hunk as it is. It is for a mail that DiffPrefixes read as st.
func RewritePrefixes(raw []byte, st PrefixStyle, heads []FileHeader) []byte {
	if st == GitDefault {
		return raw
	}
	lines := strings.SplitAfter(string(raw), "\n")
	byLine := map[int]FileHeader{}
	for _, h := range heads {
		byLine[h.Line] = h
	}
	var cur *FileHeader
	for i, l := range lines {
		body, nl := strings.CutSuffix(l, "\n")
		if h, ok := byLine[i+1]; ok {
			cur = &h
			old, nw := h.Old, h.New
			if old == "" {
				old = nw
			}
			if nw == "" {
				nw = old
			}
			body = "diff --git " + QuotePath("a/"+old) + " " + QuotePath("b/"+nw)
		} else if cur != nil {
			switch {
			case strings.HasPrefix(body, "@@ ") || strings.HasPrefix(body, "GIT binary patch") || strings.HasPrefix(body, "Binary files "):
				cur = nil
			case strings.HasPrefix(body, "--- ") && cur.Old != "":
				body = "--- " + headerName("a/"+cur.Old)
			case strings.HasPrefix(body, "+++ ") && cur.New != "":
				body = "+++ " + headerName("b/"+cur.New)
			}
		}
		if nl {
			body += "\n"
		}
		lines[i] = body
	}
	return []byte(strings.Join(lines, ""))
}

// headerName writes a ---/+++ name as git does: quoted when it must be, and followed by
// a tab when it holds a space.
func headerName(p string) string {
	q := QuotePath(p)
	if strings.Contains(q, " ") && !strings.HasPrefix(q, `"`) {
		return q + "\t"
	}
	return q
}
