package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rebase --onto and check --upstream offer the tags and branches of the tree's repository
// (they offered nothing); outside a repository they offer nothing and say nothing.
func TestRefCompletion(t *testing.T) {
	isolateGit(t)
	// A hostile user config must not change what is offered: columns, colour, a pager.
	cfg := filepath.Join(t.TempDir(), "gitconfig")
	os.WriteFile(cfg, []byte("[column]\n\tui = always\n[color]\n\tui = always\n[core]\n\tpager = false\n[tag]\n\tsort = -refname\n"), 0o644)
	t.Setenv("GIT_CONFIG_GLOBAL", cfg)
	tree := t.TempDir()
	gitRun(t, tree, "init", "-q")
	os.WriteFile(filepath.Join(tree, "a"), []byte("a\n"), 0o644)
	gitRun(t, tree, "add", "-A")
	gitRun(t, tree, "commit", "-q", "-m", "a")
	gitRun(t, tree, "tag", "v2.9.1")
	gitRun(t, tree, "tag", "v2.10.0")
	gitRun(t, tree, "branch", "mpspatch/series")
	gitRun(t, tree, "update-ref", "refs/remotes/origin/main", "HEAD")

	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"rebase", "--tree", tree, "--onto", "v2."}, []string{"v2.10.0", "v2.9.1"}},
		{[]string{"rebase", "--tree", tree, "--onto", "mpspatch/"}, []string{"mpspatch/series"}},
		{[]string{"rebase", "--tree", tree, "--onto", "origin/"}, []string{"origin/main"}},
		{[]string{"check", tree, "--upstream", "v2.9"}, []string{"v2.9.1"}},
		{[]string{"check", "--tree", tree, "--upstream", "nope"}, nil},
		{[]string{"rebase", "--tree", t.TempDir(), "--onto", ""}, nil}, // not a repository
	}
	for _, tt := range tests {
		code, stdout, stderr := runMain(t, append([]string{"__complete"}, tt.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tt.args, code, stderr)
		}
		have := strings.Fields(stdout)
		if len(have) == 0 || have[len(have)-1] != ":4" {
			t.Fatalf("%v: have %q, want names then :4 (no file completion)", tt.args, have)
		}
		have = have[:len(have)-1]
		if strings.Join(sorted(have), " ") != strings.Join(sorted(tt.want), " ") {
			t.Errorf("%v: have %q, want %q", tt.args, have, tt.want)
		}
		if strings.Contains(stderr, "fatal") || strings.Contains(stderr, "git") {
			t.Errorf("%v: completion was loud: %s", tt.args, stderr)
		}
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// completion --help shows how to install it in each shell (it showed no example).
func TestCompletionExamples(t *testing.T) {
	code, stdout, stderr := runMain(t, "completion", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Examples:", "source <(mpspatch completion bash)", `mpspatch completion zsh > "${fpath[1]}/_mpspatch"`,
		"mpspatch completion fish > ~/.config/fish/completions/mpspatch.fish", "mpspatch completion powershell | Out-String | Invoke-Expression"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("completion --help lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = runMain(t, "completion", "fish", "--help")
	if code != 0 || !strings.Contains(stdout, "Examples:\n  mpspatch completion fish > ") {
		t.Errorf("completion fish --help: exit %d\n%s", code, stdout)
	}
}
