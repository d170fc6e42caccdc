package series

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// splitLines splits data into lines that keep their line endings, so that a file is
// rebuilt byte for byte from the lines the patch did not change.
//
// The lines share data's memory instead of copying it (string(data) would hold a second
// copy of every touched file for the whole run). The engine reuses a buffer only once
// the image it held has been replaced (computer.applyFile), and every line that outlives
// the call that split it (a conflict's report) is cloned, so no string ever sees its
// bytes change.
func splitLines(data []byte) []string { return appendLines(nil, data) }

// appendLines is splitLines into a caller's slice (truncated first), so that applying
// many patches to one file does not allocate a line table per patch.
func appendLines(lines []string, data []byte) []string {
	lines = lines[:0]
	if len(data) == 0 {
		return lines
	}
	if n := bytes.Count(data, []byte{'\n'}) + 1; cap(lines) < n {
		lines = make([]string, 0, n)
	}
	s := unsafe.String(unsafe.SliceData(data), len(data))
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// trimEOL drops a trailing "\n" or "\r\n", for display.
func trimEOL(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
}

// sameLine compares a file's line with a patch's: equal, or equal but for a CR before
// the newline (a checkout with core.autocrlf holds CRLF where the patch has LF). Whether
// the line ends in a newline at all counts, as in git: a last line without one is a
// different line, so the newline is neither lost nor gained across apply and unapply.
// Matching uses it only for a file that is CRLF throughout; conflict reports use it to
// find the closest candidate.
func sameLine(a, b string) bool {
	if a == b {
		return true
	}
	if !strings.HasSuffix(a, "\n") || !strings.HasSuffix(b, "\n") {
		return false
	}
	return strings.TrimSuffix(a[:len(a)-1], "\r") == strings.TrimSuffix(b[:len(b)-1], "\r")
}

// allCRLF says whether every line of the file that ends in a newline ends in CRLF.
func allCRLF(lines []string) bool {
	n := 0
	for _, l := range lines {
		if strings.HasSuffix(l, "\n") {
			if !strings.HasSuffix(l, "\r\n") {
				return false
			}
			n++
		}
	}
	return n > 0
}

// patchHasLF says whether some old line of the patch (context or removed) ends in a bare
// LF: the patch was made against the LF form of a file that holds CRLF.
func patchHasLF(frags []*gitdiff.TextFragment) bool {
	for _, f := range frags {
		for _, l := range f.Lines {
			if l.Old() && strings.HasSuffix(l.Line, "\n") && !strings.HasSuffix(l.Line, "\r\n") {
				return true
			}
		}
	}
	return false
}

// placement is where one hunk landed.
type placement struct {
	Line   int // 1-based line of the first pre-image line in the file as it was then
	Offset int // Line minus the line the hunk recorded
}

// hunkFailure describes a hunk that matched nowhere.
type hunkFailure struct {
	index       int // 0-based hunk index
	expected    []string
	found       []string
	foundLine   int // 1-based line of the closest candidate; 0 when the file is too short
	matched     int // how many lines of the closest candidate match
	searchFrom  int // offsets searched, relative to the recorded position
	searchTo    int
	anchored    string // "beginning" or "end" when the hunk must match there
	recordedPos int
}

// applyFragments applies text hunks to data, in order, locating each at its recorded line
// or the nearest offset where every context and removed line matches. It returns the new
// content and where each hunk landed, or the first hunk that could not be placed.
//
// Hunks are located in the original lines (their headers count in those coordinates) and
// the output is assembled in one pass, so a file costs one split and one copy however
// many hunks it has.
func applyFragments(data []byte, frags []*gitdiff.TextFragment) ([]byte, []placement, *hunkFailure) {
	var sc fragScratch
	return sc.apply(data, frags, nil)
}

// fragScratch holds the buffers applyFragments needs, for reuse across calls: the line
// table of the file and the old side of the current hunk.
type fragScratch struct {
	lines []string
	pre   []string
}

// apply is applyFragments writing into out's storage when it is large enough (out must
// not share memory with data). The returned content is out's storage or a new slice.
func (sc *fragScratch) apply(data []byte, frags []*gitdiff.TextFragment, out []byte) ([]byte, []placement, *hunkFailure) {
	sc.lines = appendLines(sc.lines, data)
	lines := sc.lines
	// Lines match exactly and added lines keep the ending the patch gives them, line by
	// line, as git does. Only a file that is CRLF throughout, patched by a diff made
	// against its LF form (a checkout with core.autocrlf), matches regardless of CR and
	// gets CRLF on the added lines too; then unapply restores CRLF on the removed lines,
	// and nothing is lost either way.
	crlf := allCRLF(lines) && patchHasLF(frags)
	var places []placement
	// A reused buffer that holds the old content is taken: the patches of a series rarely
	// grow a file by more than the eighth of slack a new buffer gets.
	if cap(out) < len(data) {
		out = make([]byte, 0, len(data)+len(data)/8)
	}
	out = out[:0]
	cursor := 0    // lines before cursor are already in out
	cursorOff := 0 // the byte offset in data where line cursor starts
	lastOff := 0   // offset of the previous hunk: the file tends to be shifted as a block

	for i, frag := range frags {
		pre := sc.pre[:0]
		for _, l := range frag.Lines {
			if l.Old() {
				pre = append(pre, l.Line)
			}
		}
		recorded := int(frag.OldPosition) - 1
		if frag.OldLines == 0 {
			recorded = int(frag.OldPosition) // pure insertion: after line OldPosition
		}
		// As git apply: a hunk at line <= 1 must match at the beginning, a hunk without
		// trailing context must match at the end. No context is ever dropped (zero fuzz).
		// A hunk with no context at all comes from `git diff -U0` and, as with git apply
		// --unidiff-zero, is not held to the end: otherwise reversing a pure insertion
		// (which gains a removed line and still no context) would fail.
		anchor := ""
		if frag.OldPosition <= 1 {
			anchor = "beginning"
		} else if frag.TrailingContext == 0 && frag.LeadingContext > 0 && len(pre) > 0 {
			anchor = "end"
		}
		// A hunk whose old or new side ends without a newline ends the file: placed
		// anywhere else it would join its last line to the next one.
		atEnd := false
		for j := len(frag.Lines) - 1; j >= 0; j-- {
			if l := frag.Lines[j]; l.Op != gitdiff.OpDelete && !strings.HasSuffix(l.Line, "\n") {
				atEnd = true
			}
			if frag.Lines[j].Op == gitdiff.OpContext {
				break
			}
		}
		if len(pre) > 0 && !strings.HasSuffix(pre[len(pre)-1], "\n") {
			atEnd = true
		}
		if atEnd && anchor == "" {
			anchor = "end"
		}
		expected := recorded + lastOff
		pos, ok := locate(lines, pre, expected, cursor, anchor, crlf)
		if ok && atEnd && pos+len(pre) != len(lines) {
			ok = false
		}
		if !ok {
			return nil, places, describeFailure(lines, pre, i, expected, cursor, anchor, recorded)
		}
		lastOff = pos - recorded
		places = append(places, placement{Line: pos + 1, Offset: lastOff})

		// The lines the hunk does not touch are one run of data's bytes: one copy.
		posOff := cursorOff
		for _, l := range lines[cursor:pos] {
			posOff += len(l)
		}
		out = append(out, data[cursorOff:posOff]...)
		k := pos
		for _, l := range frag.Lines {
			switch l.Op {
			case gitdiff.OpContext:
				out = append(out, lines[k]...) // keep the file's own bytes
				k++
			case gitdiff.OpDelete:
				k++
			case gitdiff.OpAdd:
				if len(out) > 0 && out[len(out)-1] != '\n' {
					// Adding after a last line that lacks its newline would join the two.
					return nil, places, describeFailure(lines, pre, i, expected, cursor, "end", recorded)
				}
				text := l.Line
				if crlf && strings.HasSuffix(text, "\n") && !strings.HasSuffix(text, "\r\n") {
					out = append(out, text[:len(text)-1]...)
					out = append(out, '\r', '\n')
				} else {
					out = append(out, text...)
				}
			}
		}
		cursorOff = posOff
		for _, l := range lines[pos : pos+len(pre)] {
			cursorOff += len(l)
		}
		cursor = pos + len(pre)
		sc.pre = pre
	}
	out = append(out, data[cursorOff:]...)
	return out, places, nil
}

func matchesAt(lines, pre []string, pos int, crlf bool) bool {
	if pos < 0 || pos+len(pre) > len(lines) {
		return false
	}
	for i, p := range pre {
		if l := lines[pos+i]; l != p && !(crlf && sameLine(l, p)) {
			return false
		}
	}
	return true
}

// locate finds the start of pre in lines: at expected, else the nearest offset, trying
// the earlier candidate first on ties (as git does).
func locate(lines, pre []string, expected, minStart int, anchor string, crlf bool) (int, bool) {
	maxStart := len(lines) - len(pre)
	if len(pre) == 0 {
		pos := expected
		if pos < minStart || pos > len(lines) {
			return 0, false
		}
		return pos, true
	}
	switch anchor {
	case "beginning":
		return 0, minStart == 0 && matchesAt(lines, pre, 0, crlf)
	case "end":
		return maxStart, maxStart >= minStart && matchesAt(lines, pre, maxStart, crlf)
	}
	for d := 0; ; d++ {
		lo, hi := expected-d, expected+d
		inLo := lo >= minStart && lo <= maxStart
		inHi := hi >= minStart && hi <= maxStart
		if !inLo && !inHi && (lo < minStart && hi > maxStart) {
			return 0, false
		}
		if inLo && matchesAt(lines, pre, lo, crlf) {
			return lo, true
		}
		if d > 0 && inHi && matchesAt(lines, pre, hi, crlf) {
			return hi, true
		}
	}
}

// describeFailure finds the closest candidate (most matching lines, nearest on ties) so
// the conflict report can show what the patch expected against what the file holds.
func describeFailure(lines, pre []string, idx, expected, minStart int, anchor string, recorded int) *hunkFailure {
	// The report outlives the call: pre may be a reused scratch slice and lines share the
	// memory of a buffer the engine may reuse, so both are copied.
	f := &hunkFailure{index: idx, anchored: anchor, recordedPos: recorded + 1}
	if len(pre) > 0 {
		f.expected = slices.Clone(pre)
	}
	maxStart := len(lines) - len(pre)
	f.searchFrom, f.searchTo = minStart-expected, maxStart-expected
	if maxStart < minStart {
		f.searchFrom, f.searchTo = 0, 0
	}
	best, bestScore, bestDist := -1, -1, 0
	for p := minStart; p <= maxStart; p++ {
		score := 0
		for i, want := range pre {
			if sameLine(lines[p+i], want) {
				score++
			}
		}
		dist := p - expected
		if dist < 0 {
			dist = -dist
		}
		if score > bestScore || (score == bestScore && dist < bestDist) {
			best, bestScore, bestDist = p, score, dist
		}
	}
	if best < 0 {
		// The file is shorter than the hunk: show what is there from the expected spot.
		best = expected
		if best > len(lines) {
			best = len(lines)
		}
		if best < 0 {
			best = 0
		}
		bestScore = 0
	}
	end := best + len(pre)
	if end > len(lines) {
		end = len(lines)
	}
	for _, l := range lines[best:end] {
		f.found = append(f.found, strings.Clone(l))
	}
	f.foundLine = best + 1
	f.matched = bestScore
	return f
}

// diffWindow renders expected against found, line by line, as a small diff.
func diffWindow(expected, found []string) string {
	var b strings.Builder
	n := len(expected)
	if len(found) > n {
		n = len(found)
	}
	for i := 0; i < n; i++ {
		var e, f string
		he, hf := i < len(expected), i < len(found)
		if he {
			e = trimEOL(expected[i])
		}
		if hf {
			f = trimEOL(found[i])
		}
		switch {
		case he && hf && e == f:
			fmt.Fprintf(&b, "      %s\n", visible(e))
		default:
			if he {
				fmt.Fprintf(&b, "    - %s\n", visible(e))
			}
			if hf {
				fmt.Fprintf(&b, "    + %s\n", visible(f))
			} else {
				b.WriteString("    + (end of file)\n")
			}
		}
	}
	return b.String()
}

// visible escapes the control characters of a line quoted in a report (all but tab), so
// that file content or a hunk header cannot drive the terminal; the rest stays as is.
func visible(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			fmt.Fprintf(&b, "\\%03o", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isControl(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) }
