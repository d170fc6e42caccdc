package synthtree

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/series"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestSeriesAppliesWithGitAndLints: git apply takes every patch in order, the index lines
// chain (each patch's old blob is what git finds in the tree), and mpspatch's linter
// accepts the series.
func TestSeriesAppliesWithGitAndLints(t *testing.T) {
	work := t.TempDir()
	dir, pdir := filepath.Join(work, "tree"), filepath.Join(work, "patches")
	spec := Spec{Files: 80, Bytes: 1 << 20, MPS: 4, Patches: 10}
	tree, err := Write(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	if tree.Files != 80 || len(tree.MPS) != 4 {
		t.Fatalf("tree: %d files, %d MPS", tree.Files, len(tree.MPS))
	}
	if tree.Bytes < 1<<19 || tree.Bytes > 2<<20 {
		t.Errorf("tree bytes %d, want about %d", tree.Bytes, 1<<20)
	}
	if err := WriteSeries(pdir, spec); err != nil {
		t.Fatal(err)
	}
	s, err := series.Load(os.DirFS(pdir), ".", pdir)
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	if len(s.Patches) != 10 {
		t.Fatalf("%d patches", len(s.Patches))
	}
	for _, p := range s.Patches {
		for _, f := range p.Files {
			// Each patch's old blob is the file as git sees it before that patch.
			have := strings.TrimSpace(gitIn(t, dir, "hash-object", f.OldName))
			if have != f.OldOIDPrefix {
				t.Fatalf("%s: index line says %s, the tree has %s", p.Name, f.OldOIDPrefix, have)
			}
			gitIn(t, dir, "apply", filepath.Join(pdir, p.Name))
			have = strings.TrimSpace(gitIn(t, dir, "hash-object", f.NewName))
			if have != f.NewOIDPrefix {
				t.Fatalf("%s: index line says %s after, the tree has %s", p.Name, f.NewOIDPrefix, have)
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, tree.MPS[0]))
	if err != nil {
		t.Fatal(err)
	}
	// File 0 had patches 1, 5 and 9: three rounds of three locks.
	if n := strings.Count(string(data), "std::lock_guard"); n != 9 {
		t.Errorf("%s holds %d locks, want 9", tree.MPS[0], n)
	}
}

func TestWriteSeriesRefusesMorePatchesThanFunctions(t *testing.T) {
	if err := WriteSeries(t.TempDir(), Spec{MPS: 1, Patches: 200, Lines: 100}); err == nil {
		t.Error("want an error")
	}
}
