package series

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// choices turns fuzz bytes into small decisions; once the bytes run out every choice is 0.
type choices struct{ b []byte }

func (c *choices) next(n int) int {
	if n <= 1 || len(c.b) == 0 {
		return 0
	}
	v := int(c.b[0]) % n
	c.b = c.b[1:]
	return v
}

// fuzzFile builds a file of a few short lines from a small alphabet (so that hunks have
// look-alike positions), each ending in LF or CRLF, the last one possibly in neither.
func fuzzFile(c *choices) []string {
	n := c.next(24)
	var lines []string
	for i := 0; i < n; i++ {
		text := string(rune('a' + c.next(4)))
		if c.next(2) == 1 {
			text += string(rune('a' + c.next(4)))
		}
		eol := "\n"
		if c.next(3) == 0 {
			eol = "\r\n"
		}
		lines = append(lines, text+eol)
	}
	if n > 0 && c.next(3) == 0 {
		lines[n-1] = trimEOL(lines[n-1])
	}
	return lines
}

// fuzzDiff writes a unified diff of hunks cut from lines themselves, so every hunk lands
// exactly where its header says: context and removed lines are the file's own bytes,
// added lines are new, with either ending.
func fuzzDiff(c *choices, lines []string) string {
	var b strings.Builder
	b.WriteString("diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n")
	pos, delta := 0, 0
	for h := 0; h < 3 && pos <= len(lines); h++ {
		s := pos + c.next(4)
		if s > len(lines) {
			break
		}
		e := s + c.next(7)
		if e > len(lines) {
			e = len(lines)
		}
		cb := c.next(e - s + 1)
		d := c.next(e - s - cb + 1)
		ca := e - s - cb - d
		k := c.next(4)
		if d+k == 0 {
			k = 1 // a hunk must change something
		}
		if cb+d+ca == 0 && s == 0 {
			if len(lines) == 0 {
				break
			}
			// An insertion at the top of an existing file carries the line after it as
			// context (@@ -0,0 is a new file's header).
			e, ca = 1, 1
		}
		if ca == 0 && cb > 0 && e < len(lines) {
			// As diff writes them: a hunk with leading context lacks trailing context only
			// at the end of the file.
			e, ca = e+1, 1
		}
		noNLAtEnd := e == len(lines) && e > 0 && !strings.HasSuffix(lines[e-1], "\n")
		if noNLAtEnd && ca == 0 && d == 0 && k > 0 {
			// The last line lacks a newline: lines can only follow it if it is removed.
			if cb == 0 {
				k = 0
			} else {
				cb, d = cb-1, 1
			}
		}
		if d+k == 0 {
			break
		}
		var added []string
		for i := 0; i < k; i++ {
			eol := "\n"
			if c.next(3) == 0 {
				eol = "\r\n"
			}
			added = append(added, fmt.Sprintf("new%d%s", c.next(5), eol))
		}
		// The new side's last line may lack a newline only at the end of the file.
		if k > 0 && ca == 0 && e == len(lines) && c.next(3) == 0 {
			added[k-1] = trimEOL(added[k-1])
		}
		oldLen, newLen := cb+d+ca, cb+k+ca
		oldStart, newStart := s+1, s+1+delta
		if oldLen == 0 {
			oldStart = s
		}
		if newLen == 0 {
			newStart = s + delta
		}
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", oldStart, oldLen, newStart, newLen)
		line := func(prefix, l string) {
			b.WriteString(prefix + l)
			if !strings.HasSuffix(l, "\n") {
				b.WriteString("\n\\ No newline at end of file\n")
			}
		}
		for _, l := range lines[s : s+cb] {
			line(" ", l)
		}
		for _, l := range lines[s+cb : s+cb+d] {
			line("-", l)
		}
		for _, l := range added {
			line("+", l)
		}
		for _, l := range lines[s+cb+d : e] {
			line(" ", l)
		}
		delta += k - d
		pos = e + 1 // keep a line between hunks
	}
	return b.String()
}

// FuzzApplyEngine checks the hunk engine on random files and hunks cut from them: it
// never panics; where it lands every hunk exactly, its result is go-gitdiff's strict
// result byte for byte (so every line keeps its own ending, and a last line keeps or
// lacks its newline as the patch says); and reversing the patch returns the input.
// A second pass perturbs the file (endings flipped, a line changed, the final newline
// dropped) to exercise offsets, the lenient CR match and the failure reports.
func FuzzApplyEngine(f *testing.F) {
	f.Add([]byte{12, 1, 0, 2, 1, 3, 0, 1, 2, 0, 1, 1, 0, 2, 2, 1, 0, 3, 1, 1, 2, 0, 4, 2, 1, 0})
	f.Add([]byte{5, 0, 0, 0, 1, 1, 0, 2, 0, 0, 3, 0, 0, 0, 0, 6, 1, 1, 2, 2, 0})
	f.Add([]byte{8, 3, 1, 2, 0, 0, 1, 1, 0, 1, 2, 0, 0, 2, 1, 0, 0, 0, 5, 0, 2, 3, 0, 1, 0, 0, 1})
	f.Add([]byte("mixed\r\nendings\nand no newline"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &choices{b: data}
		lines := fuzzFile(c)
		in := []byte(strings.Join(lines, ""))
		diff := fuzzDiff(c, lines)
		files, _, err := gitdiff.Parse(strings.NewReader(diff))
		if err != nil || len(files) != 1 {
			t.Fatalf("generated diff does not parse (%v):\n%s", err, diff)
		}
		file := files[0]
		if len(file.TextFragments) == 0 {
			return
		}
		out, places, fail := applyFragments(in, file.TextFragments)
		var strict bytes.Buffer
		serr := gitdiff.Apply(&strict, bytes.NewReader(in), file)
		exact := fail == nil
		for _, p := range places {
			exact = exact && p.Offset == 0
		}
		// A hunk cut from the file lands where its header says, unless it has no trailing
		// context away from the end (then, as git apply, it must match at the end).
		if fail != nil && fail.anchored == "" {
			t.Fatalf("a hunk cut from the file did not apply: hunk %d\nfile %q\n%s", fail.index+1, in, diff)
		}
		// go-gitdiff places a hunk with no old (or no new) lines, as git diff -U0 writes
		// them, one line early, or reads it as a whole-file deletion; git
		// apply --unidiff-zero agrees with this engine (TestZeroContextInsertionAsGit), so
		// such diffs are compared for the round trip only.
		for _, fr := range file.TextFragments {
			exact = exact && fr.OldLines > 0 && fr.NewLines > 0
		}
		if exact {
			if serr != nil {
				t.Fatalf("landed exactly but go-gitdiff refuses: %v\nfile %q\n%s", serr, in, diff)
			}
			if !bytes.Equal(out, strict.Bytes()) {
				t.Fatalf("result differs from go-gitdiff's strict apply\nfile   %q\nours   %q\nstrict %q\n%s", in, out, strict.Bytes(), diff)
			}
		}
		if fail == nil {
			back, _, rfail := applyFragments(out, reverseFile(file).TextFragments)
			if rfail != nil {
				t.Fatalf("reverse does not apply to the result: hunk %d\nresult %q\n%s", rfail.index+1, out, diff)
			}
			if !bytes.Equal(back, in) {
				t.Fatalf("apply then unapply does not return the input\nin   %q\nback %q\n%s", in, back, diff)
			}
		}

		// Perturb and apply again: no panic; where we land exactly and go-gitdiff agrees
		// the patch applies, the results are the same.
		mut := append([]string(nil), lines...)
		for i := c.next(4); i > 0 && len(mut) > 0; i-- {
			j := c.next(len(mut))
			switch c.next(4) {
			case 0:
				if strings.HasSuffix(mut[j], "\r\n") {
					mut[j] = strings.TrimSuffix(mut[j], "\r\n") + "\n"
				} else if strings.HasSuffix(mut[j], "\n") {
					mut[j] = strings.TrimSuffix(mut[j], "\n") + "\r\n"
				}
			case 1:
				mut[j] = "x" + mut[j]
			case 2:
				mut = append(mut[:j], append([]string{"ins\n"}, mut[j:]...)...)
			case 3:
				mut[len(mut)-1] = trimEOL(mut[len(mut)-1])
			}
		}
		min := []byte(strings.Join(mut, ""))
		mout, mplaces, mfail := applyFragments(min, file.TextFragments)
		if mfail != nil {
			_ = describeFailure(splitLines(min), mfail.expected, mfail.index, 0, 0, mfail.anchored, 0)
			return
		}
		// Whatever lands where its headers say reverses to its input: no line ending and no
		// final newline is lost. (After offsets, a reversed hunk may find an earlier
		// look-alike position first, with git as here.)
		// The lenient CR match of an autocrlf checkout is left out: once a patch deletes
		// every CRLF line of such a file, nothing says the file was CRLF.
		moved := allCRLF(splitLines(min)) && patchHasLF(file.TextFragments)
		for _, p := range mplaces {
			moved = moved || p.Offset != 0
		}
		back, _, rfail := applyFragments(mout, reverseFile(file).TextFragments)
		if !moved && (rfail != nil || !bytes.Equal(back, min)) {
			t.Fatalf("perturbed file: apply then unapply does not return the input\nin   %q\nback %q (fail %v)\n%s", min, back, rfail, diff)
		}
		strict.Reset()
		if gitdiff.Apply(&strict, bytes.NewReader(min), file) != nil {
			return
		}
		for _, p := range mplaces {
			if p.Offset != 0 {
				return
			}
		}
		for _, fr := range file.TextFragments {
			if fr.OldLines == 0 || fr.NewLines == 0 {
				return
			}
		}
		if !bytes.Equal(mout, strict.Bytes()) {
			t.Fatalf("perturbed file: result differs from go-gitdiff's\nfile   %q\nours   %q\nstrict %q\n%s", min, mout, strict.Bytes(), diff)
		}
	})
}
