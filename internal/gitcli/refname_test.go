package gitcli

import (
	"context"
	"errors"
	"math/rand"
	"os"
	"strings"
	"testing"
)

// TestCheckBranchNameAgreesWithGit compares CheckBranchName with
// `git check-ref-format --branch` on hand-picked names and on random ones made of the
// characters the rules are about.
func TestCheckBranchNameAgreesWithGit(t *testing.T) {
	g := newGit(t)
	repo := newRepo(t, g, map[string]string{"a": "a\n"})
	names := []string{
		"main", "mpspatch/series", "a/b/c", "-x", "--upload-pack=touch /tmp/x", "HEAD", "a/HEAD",
		"a.lock", "a.lock/b", "a.lockx", ".a", "a/.b", "a..b", "a/", "a//b", "a.", "a b", "a*b",
		"a\\b", "a\x7fb", "a\tb", "é", "a@b", "a@{b", "{a", "a}", "a/.", "@@", "refs/heads/x",
		"a?b", "a[b", "a~1", "a^", "a:b", "/a", "a/-b",
	}
	rng := rand.New(rand.NewSource(19))
	const alphabet = "ab-./@{}~^:?*[\\ \x01\x7fé"
	for range 150 {
		n := 1 + rng.Intn(6)
		b := make([]rune, n)
		runes := []rune(alphabet)
		for i := range b {
			b[i] = runes[rng.Intn(len(runes))]
		}
		name := string(b)
		if name[0] == '@' {
			continue // --branch expands @ and @{-N}; CheckBranchName refuses "@" on purpose
		}
		names = append(names, name)
	}
	for _, name := range names {
		_, gerr := g.exec(context.Background(), call{op: "check-ref-format", dir: repo, args: []string{"check-ref-format", "--branch", name}})
		err := CheckBranchName(name)
		if (gerr == nil) != (err == nil) {
			t.Errorf("%q: git says valid=%v, CheckBranchName says %v", name, gerr == nil, err)
		}
		if err != nil && !errors.Is(err, ErrBadBranchName) {
			t.Errorf("%q: %v does not wrap ErrBadBranchName", name, err)
		}
	}
	if err := CheckBranchName("@"); err == nil {
		t.Error(`"@" passes, but git reads it as HEAD`)
	}
}

// TestOptionLikeNamesNeverReachGit: a branch or revision that git would read as an option
// is refused before git runs, by every operation that passes one to git.
func TestOptionLikeNamesNeverReachGit(t *testing.T) {
	g := newGit(t)
	repo := newRepo(t, g, map[string]string{"a": "a\n"})
	head := git(t, g, repo, "rev-parse", "HEAD")
	evil := "--upload-pack=touch pwned"
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"Switch":       func() error { return g.Switch(ctx, repo, evil, true) },
		"SetBranch":    func() error { return g.SetBranch(ctx, repo, evil, head, "", "test") },
		"AttachHead":   func() error { return g.AttachHead(ctx, repo, evil, "test") },
		"BranchCommit": func() error { _, err := g.BranchCommit(ctx, repo, evil); return err },
		"Detach":       func() error { return g.Detach(ctx, repo, "--orphan=x", true) },
		"ResetHard":    func() error { return g.ResetHard(ctx, repo, "--merge") },
	} {
		logBefore, _ := os.ReadFile(g.LogPath)
		err := call()
		if err == nil || !strings.Contains(err.Error(), "dash") {
			t.Errorf("%s: have %v, want a refusal that names the dash", name, err)
		}
		if logAfter, _ := os.ReadFile(g.LogPath); len(logAfter) != len(logBefore) {
			t.Errorf("%s: git ran:\n%s", name, logAfter[len(logBefore):])
		}
	}
}
