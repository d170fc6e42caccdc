package series

import (
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

func frags(t *testing.T, diff string) []*gitdiff.TextFragment {
	t.Helper()
	files, _, err := gitdiff.Parse(strings.NewReader("diff --git a/f b/f\n--- a/f\n+++ b/f\n" + diff))
	if err != nil || len(files) != 1 {
		t.Fatalf("parse: %v (%d files)", err, len(files))
	}
	return files[0].TextFragments
}

func TestApplyFragments(t *testing.T) {
	base := "a\nb\nc\nd\ne\nf\ng\n"
	tests := []struct {
		name     string
		in       string
		diff     string
		want     string
		offsets  []int
		failHunk int // 1-based; 0 means success
	}{
		{name: "exact", in: base, diff: "@@ -3,3 +3,3 @@\n c\n-d\n+D\n e\n",
			want: "a\nb\nc\nD\ne\nf\ng\n", offsets: []int{0}},
		{name: "shifted down", in: "x\ny\nz\n" + base, diff: "@@ -3,3 +3,3 @@\n c\n-d\n+D\n e\n",
			want: "x\ny\nz\na\nb\nc\nD\ne\nf\ng\n", offsets: []int{3}},
		{name: "shifted up", in: "c\nd\ne\nf\ng\n", diff: "@@ -3,3 +3,3 @@\n c\n-d\n+D\n e\n",
			want: "c\nD\ne\nf\ng\n", offsets: []int{-2}},
		{name: "nearest of two candidates", in: "c\nd\ne\nq\nq\nq\nc\nd\ne\n", diff: "@@ -6,3 +6,3 @@\n c\n-d\n+D\n e\n",
			want: "c\nd\ne\nq\nq\nq\nc\nD\ne\n", offsets: []int{1}},
		{name: "context mismatch", in: "a\nb\nc\nX\ne\nf\ng\n", diff: "@@ -3,3 +3,3 @@\n c\n-d\n+D\n e\n", failHunk: 1},
		{name: "no fuzz: one context line differs", in: "a\nb\nC\nd\ne\nf\ng\n", diff: "@@ -3,3 +3,3 @@\n c\n-d\n+D\n e\n", failHunk: 1},
		{name: "two hunks, second fails", in: base, diff: "@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -5,3 +5,3 @@\n e\n-nope\n+F\n g\n", failHunk: 2},
		{name: "two hunks", in: base, diff: "@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -5,3 +5,3 @@\n e\n-f\n+F\n g\n",
			want: "A\nb\nc\nd\ne\nF\ng\n", offsets: []int{0, 0}},
		{name: "crlf file keeps crlf", in: strings.ReplaceAll(base, "\n", "\r\n"), diff: "@@ -3,3 +3,4 @@\n c\n-d\n+D\n+D2\n e\n",
			want: "a\r\nb\r\nc\r\nD\r\nD2\r\ne\r\nf\r\ng\r\n", offsets: []int{0}},
		{name: "anchored at beginning", in: "z\n" + base, diff: "@@ -1,2 +1,2 @@\n-a\n+A\n b\n", failHunk: 1},
		{name: "anchored at end", in: base + "h\n", diff: "@@ -6,2 +6,2 @@\n f\n-g\n+G\n", failHunk: 1},
		{name: "insert into empty file", in: "", diff: "@@ -0,0 +1,2 @@\n+x\n+y\n", want: "x\ny\n", offsets: []int{0}},
		{name: "no newline at end", in: "a\nb", diff: "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
			want: "a\nb\n", offsets: []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, places, fail := applyFragments([]byte(tt.in), frags(t, tt.diff))
			if tt.failHunk > 0 {
				if fail == nil {
					t.Fatalf("applied (%q), want hunk %d to fail", out, tt.failHunk)
				}
				if fail.index+1 != tt.failHunk {
					t.Errorf("failed hunk: have %d, want %d", fail.index+1, tt.failHunk)
				}
				return
			}
			if fail != nil {
				t.Fatalf("hunk %d failed: found %q", fail.index+1, fail.found)
			}
			if string(out) != tt.want {
				t.Errorf("have %q, want %q", out, tt.want)
			}
			var offs []int
			for _, p := range places {
				offs = append(offs, p.Offset)
			}
			if len(offs) != len(tt.offsets) {
				t.Fatalf("offsets: have %v, want %v", offs, tt.offsets)
			}
			for i := range offs {
				if offs[i] != tt.offsets[i] {
					t.Errorf("offsets: have %v, want %v", offs, tt.offsets)
				}
			}
		})
	}
}

func TestReverseFileUndoes(t *testing.T) {
	in := []byte("a\nb\nc\nd\ne\nf\ng\n")
	fr := frags(t, "@@ -2,3 +2,4 @@\n b\n-c\n+C\n+C2\n d\n")
	out, _, fail := applyFragments(in, fr)
	if fail != nil {
		t.Fatal("forward failed")
	}
	f := &gitdiff.File{OldName: "f", NewName: "f", TextFragments: fr}
	back, _, fail := applyFragments(out, reverseFile(f).TextFragments)
	if fail != nil || string(back) != string(in) {
		t.Fatalf("reverse: have %q (fail %v), want %q", back, fail, in)
	}
}

func TestDescribeFailureFindsClosest(t *testing.T) {
	lines := splitLines([]byte("p\nq\nc\nX\ne\nr\n"))
	f := describeFailure(lines, splitLines([]byte("c\nd\ne\n")), 0, 0, 0, "", 0)
	if f.foundLine != 3 || f.matched != 2 {
		t.Errorf("closest: have line %d with %d matching, want line 3 with 2", f.foundLine, f.matched)
	}
	if have := diffWindow(f.expected, f.found); have != "      c\n    - d\n    + X\n      e\n" {
		t.Errorf("diff window:\n%s", have)
	}
}
