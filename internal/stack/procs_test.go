package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/gitcli"
)

// rebaseGitProcesses rebases a series of n patches that all apply cleanly (each changes
// its own file, two of them in a new directory, one deletes a file) onto an upstream
// commit that changed another file, and returns how many git processes the rebase
// started (GIT_TRACE) and the rebased tree; git rebase's tree is checked against it.
func rebaseGitProcesses(t *testing.T, n int) int {
	t.Helper()
	e := newEnv(t, true)
	dir := filepath.Join(t.TempDir(), "up")
	for i := 0; i < n+1; i++ {
		write(t, filepath.Join(dir, fmt.Sprintf("src/d%d/f%03d.c", i%4, i)), lines(fmt.Sprint("f", i), 30))
	}
	e.git(dir, "init", "-q")
	e.git(dir, "add", "-A")
	e.git(dir, "commit", "-q", "-m", "base")
	e.git(dir, "tag", "v1")
	e.git(dir, "checkout", "-q", "-b", "series")
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("src/d%d/f%03d.c", i%4, i))
		switch i {
		case 1:
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		case 2, 3:
			write(t, filepath.Join(dir, fmt.Sprintf("new/dir%d/n.c", i)), "new\n")
		default:
			write(t, p, replaceLine(read(t, p), fmt.Sprintf("f%d line 10", i), "changed by the series"))
		}
		e.git(dir, "add", "-A")
		e.git(dir, "commit", "-q", "-m", fmt.Sprintf("patch %d", i))
	}
	e.git(dir, "checkout", "-q", "main")
	last := filepath.Join(dir, fmt.Sprintf("src/d%d/f%03d.c", n%4, n))
	write(t, last, read(t, last)+"upstream\n")
	e.git(dir, "commit", "-q", "-a", "-m", "upstream")
	e.git(dir, "tag", "v2")
	theirs := filepath.Join(t.TempDir(), "theirs")
	e.git(filepath.Dir(theirs), "clone", "-q", "-b", "series", dir, theirs)
	e.git(theirs, "rebase", "-q", "--onto", "v2", "v1")
	e.git(dir, "checkout", "-q", "series")

	trace := filepath.Join(t.TempDir(), "trace")
	g := &gitcli.Git{Env: append(append([]string{}, e.vars...), "GIT_TRACE="+trace)}
	res, err := Rebase(context.Background(), g, openRoot(t, dir), RebaseOptions{Tree: dir, Base: "v1", Onto: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done {
		t.Fatal("the rebase did not finish")
	}
	if a, b := e.git(dir, "rev-parse", "HEAD^{tree}"), e.git(theirs, "rev-parse", "HEAD^{tree}"); a != b {
		t.Errorf("%d patches: mpspatch rebased to tree %s, git to %s", n, a, b)
	}
	if s := e.git(dir, "status", "--porcelain", "--untracked-files=all"); s != "" {
		t.Errorf("%d patches: tree not clean after the rebase:\n%s", n, s)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "trace: built-in: git ")
}

// TestRebaseGitProcessesPerPatch: a rebase whose patches all apply cleanly starts the same
// number of git processes for 4 patches as for 16: none per patch (the commit writer
// records them through processes that live for the whole rebase). It started three more
// per patch (add, write-tree, commit-tree) before.
func TestRebaseGitProcessesPerPatch(t *testing.T) {
	t.Parallel()
	few, many := rebaseGitProcesses(t, 4), rebaseGitProcesses(t, 16)
	if many != few {
		t.Errorf("git processes: %d for 4 patches, %d for 16; want the same (none per patch)", few, many)
	}
}
