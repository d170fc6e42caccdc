package stack

import (
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// maxRangeDiffLines bounds the excerpt a report shows per patch.
const maxRangeDiffLines = 16

// rangeDiff compares two mails' diffs as `git range-diff` does, ignoring what only a move
// changes (blob IDs, hunk line numbers, the diffstat), and returns a short unified diff
// of the diffs, or "" when the patch's content is the same. go-difflib computes it: the
// standard library has no line diff.
func rangeDiff(old, new []byte) string {
	a, b := normalisedDiff(old), normalisedDiff(new)
	if strings.Join(a, "\n") == strings.Join(b, "\n") {
		return ""
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(strings.Join(a, "\n") + "\n"), B: difflib.SplitLines(strings.Join(b, "\n") + "\n"),
		FromFile: "old", ToFile: "new", Context: 1})
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	// Drop the ---/+++ file header: the report names the patch already.
	if len(lines) > 2 {
		lines = lines[2:]
	}
	if len(lines) > maxRangeDiffLines {
		n := len(lines) - maxRangeDiffLines
		lines = append(lines[:maxRangeDiffLines], "... ("+plural(n, "more line")+")")
	}
	return strings.Join(lines, "\n")
}
