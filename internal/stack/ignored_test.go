package stack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIgnoredDirectory: a tracked file inside a .gitignore'd directory (fzf keeps
// bin/fzf-tmux so) and a new file there are committed by apply --commit and by rebase,
// as git am and git rebase commit them: the patch names the path, so it is the
// series' to add whatever the ignore rules say.
func TestIgnoredDirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	root := t.TempDir()
	up := filepath.Join(root, "up")
	write(t, filepath.Join(up, ".gitignore"), "bin/\n")
	write(t, filepath.Join(up, "bin", "tool"), lines("tool", 20))
	write(t, filepath.Join(up, "a.c"), lines("a", 20))
	e.git(up, "init", "-q")
	e.git(up, "add", "-A")
	e.git(up, "add", "-f", "bin/tool")
	e.git(up, "commit", "-q", "-m", "upstream base")
	e.git(up, "tag", "v1")
	e.git(up, "checkout", "-q", "-b", "dev")
	write(t, filepath.Join(up, "bin", "tool"), strings.Replace(lines("tool", 20), "tool line 3\n", "tool line 3 PATCHED\n", 1))
	write(t, filepath.Join(up, "bin", "new"), "new helper\n")
	e.git(up, "add", "-f", "bin/tool", "bin/new")
	e.git(up, "commit", "-q", "-m", "bin: patch the tool, add a helper")
	patches := filepath.Join(root, "patches")
	ctx := context.Background()
	if _, err := Export(ctx, e.g, ExportOptions{Tree: up, Base: "v1", Dir: patches}); err != nil {
		t.Fatal(err)
	}
	want := e.git(up, "rev-parse", "dev^{tree}")
	e.git(up, "checkout", "-q", "main")
	e.git(up, "commit", "-q", "--allow-empty", "-m", "upstream: v2")
	e.git(up, "tag", "v2")

	f := &fixture{env: e, up: up, patches: patches}
	tree := f.clone("v1")
	if _, err := ApplyCommits(ctx, e.g, openRoot(t, tree), f.series(), ApplyCommitsOptions{Tree: tree}); err != nil {
		t.Fatalf("apply --commit: %v", err)
	}
	if have := e.git(tree, "rev-parse", "HEAD^{tree}"); have != want {
		t.Errorf("apply --commit tree %s, want the dev branch's %s", have, want)
	}
	res, err := Rebase(ctx, e.g, openRoot(t, tree), RebaseOptions{Tree: tree, Base: "v1", Onto: "v2", Intents: testIntents})
	if err != nil {
		t.Fatalf("rebase: %v", err)
	}
	if !res.Done {
		t.Fatalf("rebase stopped: %+v", res.State.Outcomes)
	}
	if have := e.git(tree, "show", "HEAD:bin/new"); have != "new helper" {
		t.Errorf("rebased HEAD:bin/new = %q", have)
	}
	if _, err := os.Stat(filepath.Join(tree, "bin", "new")); err != nil {
		t.Errorf("bin/new not in the work tree after rebase: %v", err)
	}
}
