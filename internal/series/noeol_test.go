package series

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostileApplyConfig is a user git config that sets what could change git apply's
// answer or output; the reference run pins whitespace handling and line-end conversion
// on its command line (the engine has no such settings).
const hostileApplyConfig = `[apply]
	whitespace = error-all
	ignoreWhitespace = change
[core]
	autocrlf = true
	eol = crlf
	safecrlf = true
	whitespace = trailing-space,space-before-tab,indent-with-non-tab,blank-at-eof,cr-at-eol
	quotePath = false
[diff]
	noprefix = true
	mnemonicPrefix = true
`

const noEOLHeader = `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Test Author <author@example.invalid>
Date: Sun, 14 Dec 2025 12:00:00 +0000
Subject: [PATCH] edit a

---
`

// TestUnterminatedLastLineMatchesGitApply: a patch whose last line belongs to a hunk
// and ends without a newline, with no `\ No newline at end of file` after it, is what
// git apply calls a corrupt patch; lint refuses it, naming the line. Each case runs
// through `git apply --check` under a hostile user config, and lint must refuse exactly
// the ones git calls corrupt; where both accept, applying gives the same bytes.
func TestUnterminatedLastLineMatchesGitApply(t *testing.T) {
	const base = "one\ntwo\nthree\n"
	hunkEdit := "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three"
	hunkLast := "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n two\n-three\n+THREE"
	hunkDrop := "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,2 @@\n one\n two\n-three"
	hunkNew := "diff --git a/b.txt b/b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1,2 @@\n+first\n+second"
	two := "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n" + hunkNew
	cases := []struct {
		name, diff string
		corrupt    bool
	}{
		{"context line unterminated", hunkEdit, true},
		{"added line unterminated", hunkLast, true},
		{"removed line unterminated", hunkDrop, true},
		{"new file's last line unterminated", hunkNew, true},
		{"second file's last line unterminated", two, true},
		{"terminated", hunkEdit + "\n", false},
		{"marker after the added line", hunkLast + "\n\\ No newline at end of file\n", false},
		{"marker unterminated", hunkLast + "\n\\ No newline at end of file", false},
		{"signature unterminated", hunkEdit + "\n-- \n2.39.5", false},
		{"new file with marker unterminated", hunkNew + "\n\\ No newline at end of file", false},
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(hostileApplyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := noEOLHeader + c.diff
			dir := t.TempDir()
			gitTree, ourTree := filepath.Join(dir, "git"), filepath.Join(dir, "ours")
			writeFiles(t, gitTree, map[string]string{"a.txt": base})
			writeFiles(t, ourTree, map[string]string{"a.txt": base})
			patch := filepath.Join(dir, "0001-edit-a.patch")
			if err := os.WriteFile(patch, []byte(raw), 0o644); err != nil {
				t.Fatal(err)
			}
			pin := []string{"-c", "core.autocrlf=false", "-c", "core.eol=lf", "apply", "--whitespace=nowarn"}
			check := exec.Command("git", append(pin, "--check", patch)...)
			check.Dir = gitTree
			check.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_GLOBAL="+filepath.Join(home, ".gitconfig"),
				"GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES="+dir)
			out, gitErr := check.CombinedOutput()
			gitCorrupt := strings.Contains(string(out), "corrupt patch")
			if gitCorrupt != c.corrupt {
				t.Fatalf("git apply --check: corrupt=%v, the case says %v:\n%s", gitCorrupt, c.corrupt, out)
			}

			probs := ParsePatch(&Patch{Name: "0001-edit-a.patch", Raw: []byte(raw)})
			var ours bool
			for _, p := range probs {
				if strings.Contains(p.Msg, "corrupt patch") {
					ours = true
					if want := strings.Count(raw, "\n") + 1; p.Line != want {
						t.Errorf("refusal names line %d, want %d (the last): %s", p.Line, want, p)
					}
				}
			}
			if ours != gitCorrupt {
				t.Fatalf("lint corrupt=%v, git corrupt=%v\nlint: %v\ngit: %s", ours, gitCorrupt, probs, out)
			}
			if gitCorrupt {
				return
			}
			if gitErr != nil || len(probs) > 0 {
				t.Fatalf("git: %v %s; lint: %v", gitErr, out, probs)
			}
			apply := exec.Command("git", append(pin, patch)...)
			apply.Dir, apply.Env = gitTree, check.Env
			if out, err := apply.CombinedOutput(); err != nil {
				t.Fatalf("git apply: %v\n%s", err, out)
			}
			pdir := filepath.Join(dir, "patches")
			writeFiles(t, pdir, map[string]string{"series": "0001-edit-a.patch\n", "0001-edit-a.patch": raw})
			s, err := Load(os.DirFS(pdir), ".", pdir)
			if err != nil {
				t.Fatal(err)
			}
			root, err := os.OpenRoot(ourTree)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			if _, err := Apply(root, s, Options{}); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"a.txt", "b.txt"} {
				want, werr := os.ReadFile(filepath.Join(gitTree, p))
				have, herr := os.ReadFile(filepath.Join(ourTree, p))
				if string(want) != string(have) || (werr == nil) != (herr == nil) {
					t.Errorf("%s: git apply wrote %q (%v), the engine %q (%v)", p, want, werr, have, herr)
				}
			}
		})
	}
}
