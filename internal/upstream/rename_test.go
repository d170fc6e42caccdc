package upstream

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/series"
)

// fileOp is one change of a step in renameSeries: from set renames (or, with copy,
// copies) from to path before data, when set, is written to path.
type fileOp struct {
	from, path, data string
	copy             bool
}

// renameSeries exports one patch per step from a repository holding base, with rename
// and copy detection (-M -C -C) as an author's format-patch may have it.
func renameSeries(t *testing.T, base map[string]string, steps ...[]fileOp) *series.Series {
	t.Helper()
	work, pdir := t.TempDir(), t.TempDir()
	g := func(args ...string) { t.Helper(); gitIn(t, work, args...) }
	g("init", "-q", "-b", "main")
	for p, d := range base {
		os.WriteFile(filepath.Join(work, p), []byte(d), 0o644)
	}
	g("add", "-A")
	g("commit", "-q", "-m", "base")
	var order []string
	for i, st := range steps {
		for _, op := range st {
			if op.from != "" {
				d, err := os.ReadFile(filepath.Join(work, op.from))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(work, op.path), d, 0o644)
				if !op.copy {
					os.Remove(filepath.Join(work, op.from))
				}
			}
			if op.data != "" {
				os.WriteFile(filepath.Join(work, op.path), []byte(op.data), 0o644)
			}
		}
		g("add", "-A")
		g("commit", "-q", "-m", "step "+string(rune('a'+i)))
		order = append(order, "000"+string(rune('1'+i))+"-step-"+string(rune('a'+i))+".patch")
	}
	g("format-patch", "-q", "-M", "-C", "-C", "--full-index", "--zero-commit", "--no-signature", "-o", pdir, "main~"+string(rune('0'+len(steps))))
	os.WriteFile(filepath.Join(pdir, "series"), []byte(strings.Join(order, "\n")+"\n"), 0o644)
	s, err := series.Load(os.DirFS(pdir), ".", pdir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Patches {
		for _, f := range p.Files {
			if f.IsRename || f.IsCopy {
				return s
			}
		}
	}
	t.Fatal("format-patch found no rename or copy: the test would not test them")
	return nil
}

// TestClassifyMergesRenamesAndCopies: a patch that renames or copies a file and changes
// it is a three-way merge when its content change merges into the file at the OLD path in
// REF, as git apply --3way (what a rebase runs) takes it: the merge lands at the new path
// and a rename deletes the old one. Each case's outcome was checked against
// `git apply --index --3way` (git 2.39.5) on the same patches and trees, except the one
// marked: where REF already has a file at the new path, git writes the merge over it and
// REF's file is lost; check --upstream calls that a conflict.
func TestClassifyMergesRenamesAndCopies(t *testing.T) {
	t.Parallel()
	a, x := numbered("a", 30), numbered("x", 30)
	base := map[string]string{"a.txt": join(a), "x.txt": join(x)}
	edited := join(with(a, 10, "a PATCHED 10"))
	renamed := renameSeries(t, base,
		[]fileOp{{from: "a.txt", path: "b.txt", data: edited}},
		[]fileOp{{path: "b.txt", data: join(with(with(a, 10, "a PATCHED 10"), 20, "a PATCHED 20"))}},
	)
	copied := renameSeries(t, base,
		[]fileOp{{from: "a.txt", path: "b.txt", data: edited, copy: true}},
	)
	pure := renameSeries(t, base,
		[]fileOp{{from: "a.txt", path: "b.txt"}, {path: "x.txt", data: join(with(x, 10, "x PATCHED 10"))}},
	)
	merge := func(ctx context.Context, path string, cur, base, other []byte) ([]byte, bool, error) {
		res, err := (&gitcli.Git{}).MergeFile(ctx, gitcli.MergeInput{Data: cur}, gitcli.MergeInput{Data: base}, gitcli.MergeInput{Data: other})
		return res.Merged, res.Conflicts == 0, err
	}
	a13 := join(with(a, 13, "a upstream 13"))
	tests := []struct {
		name string
		s    *series.Series
		ref  mapSource
		want string
	}{
		{"rename with an edit, old path moved on", renamed, mapSource{"a.txt": a13}, "3-way needed | exact"},
		{"rename with an edit, old path changed the same line", renamed, mapSource{"a.txt": join(with(a, 10, "a upstream 10"))}, "conflict (hunk 1/1) | missing file"},
		// git apply --3way takes this one, writing the merge over REF's b.txt.
		{"rename with an edit, new path already there", renamed, mapSource{"a.txt": a13, "b.txt": "upstream's own\n"}, "conflict (file already exists) | conflict (hunk 1/1)"},
		// Not a merge question (the old path is gone): unchanged by the rename rules.
		{"rename already upstream", renamed, mapSource{"b.txt": edited}, "missing file | exact"},
		{"copy with an edit, old path moved on", copied, mapSource{"a.txt": a13}, "3-way needed"},
		{"copy with an edit, old path changed the same line", copied, mapSource{"a.txt": join(with(a, 10, "a upstream 10"))}, "conflict (hunk 1/1)"},
		{"pure rename in a patch whose other file moved on", pure, mapSource{"a.txt": join(with(a, 20, "a upstream 20")), "x.txt": join(with(x, 13, "x upstream 13"))}, "3-way needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells, err := Classify(context.Background(), tt.ref, tt.s.Patches, func() (series.FileSource, error) { return mapSource(base), nil }, merge)
			if err != nil {
				t.Fatal(err)
			}
			var have []string
			for _, c := range cells {
				have = append(have, c.String())
			}
			if strings.Join(have, " | ") != tt.want {
				t.Errorf("have %s\nwant %s", strings.Join(have, " | "), tt.want)
			}
		})
	}
}
