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

type mapSource map[string]string

func (m mapSource) ReadFile(p string) (series.File, error) {
	d, ok := m[p]
	return series.File{Exists: ok, Data: []byte(d), Mode: 0o644}, nil
}

// deleted, as a file's content in a step, deletes the file.
const deleted = "\x00deleted"

// stepSeries exports one patch per step, each step a set of whole-file writes on top of
// the one before, starting from base.
func stepSeries(t *testing.T, base map[string]string, steps ...map[string]string) *series.Series {
	t.Helper()
	work, pdir := t.TempDir(), t.TempDir()
	g := func(args ...string) { t.Helper(); gitIn(t, work, args...) }
	write := func(files map[string]string) {
		for p, d := range files {
			if d == deleted {
				os.Remove(filepath.Join(work, p))
				continue
			}
			os.WriteFile(filepath.Join(work, p), []byte(d), 0o644)
		}
	}
	g("init", "-q", "-b", "main")
	write(base)
	g("add", "-A")
	g("commit", "-q", "-m", "base")
	var order []string
	for i, st := range steps {
		write(st)
		g("add", "-A")
		g("commit", "-q", "-m", "step "+string(rune('a'+i)))
		order = append(order, "000"+string(rune('1'+i))+"-step-"+string(rune('a'+i))+".patch")
	}
	g("format-patch", "-q", "--full-index", "--zero-commit", "--no-signature", "-o", pdir, "main~"+string(rune('0'+len(steps))))
	os.WriteFile(filepath.Join(pdir, "series"), []byte(strings.Join(order, "\n")+"\n"), 0o644)
	s, err := series.Load(os.DirFS(pdir), ".", pdir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestClassifyCarriesMergesForward: a patch taken by a three-way merge is laid over the
// tree, so the next patch, whose context holds the first one's change, applies exactly;
// a patch that creates a file is absorbed where upstream added that very file and a
// conflict where it added another.
func TestClassifyCarriesMergesForward(t *testing.T) {
	t.Parallel()
	x := numbered("x", 30)
	base := map[string]string{"x.txt": join(x)}
	p1 := with(x, 10, "x PATCHED 10")
	p2 := with(p1, 8, "x PATCHED 8")
	s := stepSeries(t, base,
		map[string]string{"x.txt": join(p1)},
		map[string]string{"x.txt": join(p2)},
		map[string]string{"new.txt": "a new file\n"},
	)
	merge := func(ctx context.Context, path string, cur, base, other []byte) ([]byte, bool, error) {
		res, err := (&gitcli.Git{}).MergeFile(ctx, gitcli.MergeInput{Data: cur}, gitcli.MergeInput{Data: base}, gitcli.MergeInput{Data: other})
		return res.Merged, res.Conflicts == 0, err
	}
	baseSrc := func() (series.FileSource, error) { return mapSource(base), nil }

	tests := []struct {
		name string
		ref  mapSource
		want string
	}{
		{"merged, then exact on the merge, new file absorbed",
			mapSource{"x.txt": join(with(x, 13, "x upstream 13")), "new.txt": "a new file\n"},
			"3-way needed | exact | absorbed"},
		{"new file exists with other content",
			mapSource{"x.txt": join(x), "new.txt": "upstream's own\n"},
			"exact | exact | conflict (file already exists)"},
		{"no base: the merge is not tried",
			mapSource{"x.txt": join(with(x, 13, "x upstream 13"))},
			"conflict (hunk 1/1) | conflict (hunk 1/1) | exact"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := baseSrc
			if strings.HasPrefix(tt.name, "no base") {
				b = func() (series.FileSource, error) { return nil, nil }
			}
			cells, err := Classify(context.Background(), tt.ref, s.Patches, b, merge)
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

// TestClassifyMergesPatchesThatCreateOrDeleteFiles: a patch whose context moved on is a
// three-way merge even when it also creates or deletes a file, as git apply --3way (what
// a rebase runs) takes it: that file's diff applies directly (a created file REF lacks, a
// deleted file REF holds unchanged), and a created file REF already has merges against an
// empty base. The patch after it sees the merge, created file included.
func TestClassifyMergesPatchesThatCreateOrDeleteFiles(t *testing.T) {
	t.Parallel()
	x := numbered("x", 30)
	gone := join(numbered("g", 5))
	base := map[string]string{"x.txt": join(x), "gone.txt": gone}
	s := stepSeries(t, base,
		map[string]string{"x.txt": join(with(x, 10, "x PATCHED 10")), "new.txt": "a new file\n", "gone.txt": deleted},
		map[string]string{"new.txt": "a new file\nand a second line\n"},
	)
	merge := func(ctx context.Context, path string, cur, base, other []byte) ([]byte, bool, error) {
		res, err := (&gitcli.Git{}).MergeFile(ctx, gitcli.MergeInput{Data: cur}, gitcli.MergeInput{Data: base}, gitcli.MergeInput{Data: other})
		return res.Merged, res.Conflicts == 0, err
	}
	moved := join(with(x, 13, "x upstream 13"))
	tests := []struct {
		name string
		ref  mapSource
		want string
	}{
		{"created file absent, deleted file unchanged", mapSource{"x.txt": moved, "gone.txt": gone}, "3-way needed | exact"},
		{"created file there with the same content", mapSource{"x.txt": moved, "gone.txt": gone, "new.txt": "a new file\n"}, "3-way needed | exact"},
		{"created file there with other content", mapSource{"x.txt": moved, "gone.txt": gone, "new.txt": "upstream's own\n"}, "conflict (file already exists) | conflict (hunk 1/1)"},
		{"deleted file changed", mapSource{"x.txt": moved, "gone.txt": gone + "g upstream\n"}, "conflict (the file holds more than the patch deletes) | missing file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells, err := Classify(context.Background(), tt.ref, s.Patches, func() (series.FileSource, error) { return mapSource(base), nil }, merge)
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
