//go:build unix

package cli

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mpspatch/mpspatch/internal/statekey"
)

// signRebaseState lays body out as mpspatch writes a rebase state: a MAC line made with
// the user's state key in the state's own domain, then the JSON. Spelled out here, not
// borrowed from the stack package, so that the format is pinned by a test.
func signRebaseState(t *testing.T, body []byte) []byte {
	t.Helper()
	key, err := statekey.Ensure()
	if err != nil {
		t.Fatal(err)
	}
	mac := statekey.MAC(key, "mpspatch rebase state v1", body)
	return append([]byte("mpspatch-rebase-state hmac-sha256="+hex.EncodeToString(mac)+"\n"), body...)
}

// TestHostileRebaseState: a rebase state that mpspatch did not write, or that says what
// no rebase could (an index out of range, a branch git would read as an option, another
// repository's state), or that is not a regular file of bounded size, is refused by
// --continue and --abort alike with exit 2 and a message naming the file and the field;
// nothing is run on its word and nothing panics. The fixtures in testdata/rebase-state
// are JSON bodies with placeholders, signed here with the test's key (valid.json, signed
// the same way, is accepted: the refusals are the fields', not the signing's).
func TestHostileRebaseState(t *testing.T) {
	isolateGit(t)
	tree := filepath.Join(t.TempDir(), "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRun(t, tree, "init", "-q")
	os.WriteFile(filepath.Join(tree, "a.txt"), []byte("one\n"), 0o644)
	gitRun(t, tree, "add", "-A")
	gitRun(t, tree, "commit", "-q", "-m", "base")
	gitRun(t, tree, "tag", "v1")
	base := gitRun(t, tree, "rev-parse", "HEAD")
	gitRun(t, tree, "checkout", "-q", "-b", "mpspatch/series")
	os.WriteFile(filepath.Join(tree, "a.txt"), []byte("two\n"), 0o644)
	gitRun(t, tree, "commit", "-q", "-a", "-m", "change a")
	head := gitRun(t, tree, "rev-parse", "HEAD")
	gitDir := gitRun(t, tree, "rev-parse", "--absolute-git-dir")
	stateDir := filepath.Join(gitDir, "mpspatch-rebase")
	stateFile := filepath.Join(stateDir, "state.json")
	pwned := filepath.Join(t.TempDir(), "pwned")

	fixture := func(name string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("testdata", "rebase-state", name))
		if err != nil {
			t.Fatal(err)
		}
		return []byte(strings.NewReplacer("{{GIT_DIR}}", gitDir, "{{TREE}}", tree, "{{HEAD}}", head, "{{BASE}}", base,
			"{{PWNED}}", pwned, "{{OTHER_GIT_DIR}}", filepath.Join(t.TempDir(), "other", ".git")).Replace(string(data)))
	}
	signed := func(name string) func(t *testing.T) {
		return func(t *testing.T) {
			writeState(t, stateFile, signRebaseState(t, fixture(name)))
		}
	}
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	os.MkdirAll(elsewhere, 0o755)
	tests := []struct {
		name  string
		setup func(t *testing.T)
		want  string // in the message, after the file's name
	}{
		{"next -1", signed("next-negative.json"), "state.json: next: -1, want 0 to 1"},
		{"huge next", signed("next-huge.json"), "state.json: next: 9223372036854775807, want 0 to 1"},
		{"branch that git would read as an option", signed("branch-option.json"), "state.json: branch: \"--upload-pack=touch"},
		{"state of another checkout", signed("other-checkout.json"), "state.json: git_dir: the state was written for the repository at"},
		{"orig_head not an object ID", signed("orig-head-not-sha.json"), "state.json: orig_head: \"HEAD~1\" is not a full object ID"},
		{"ids and commits disagree", signed("ids-mismatch.json"), "state.json: ids: 2 IDs for 1 commits"},
		{"stopped without a stop", signed("stopped-without-stop.json"), "state.json: stopped: present only when the phase is \"stopped\""},
		{"unknown field", signed("unknown-field.json"), "state.json: not a rebase state: json: unknown field \"extra\""},
		{"version 1", signed("old-version.json"), "state.json: version: 1, want 2"},
		{"tampered MAC", func(t *testing.T) {
			data := signRebaseState(t, fixture("valid.json"))
			i := strings.Index(string(data), `"v1"`)
			data[i+2] = '2' // onto_name "v2": the MAC no longer verifies
			writeState(t, stateFile, data)
		}, "state.json: mac: the MAC does not verify"},
		{"no MAC line (plain JSON)", func(t *testing.T) { writeState(t, stateFile, fixture("valid.json")) }, "state.json: mac: no MAC line"},
		{"FIFO", func(t *testing.T) {
			writeState(t, stateFile, nil)
			os.Remove(stateFile)
			if err := syscall.Mkfifo(stateFile, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "state.json: is not a regular file (a FIFO); refusing to read it"},
		{"200 MB sparse file", func(t *testing.T) {
			writeState(t, stateFile, nil)
			if err := os.Truncate(stateFile, 200<<20); err != nil {
				t.Fatal(err)
			}
		}, "state.json: holds 209715200 bytes, over the 16 MiB a rebase state may hold"},
		{"symbolic link to a valid state", func(t *testing.T) {
			target := filepath.Join(elsewhere, "state.json")
			os.WriteFile(target, signRebaseState(t, fixture("valid.json")), 0o644)
			writeState(t, stateFile, nil)
			os.Remove(stateFile)
			if err := os.Symlink(target, stateFile); err != nil {
				t.Fatal(err)
			}
		}, "state.json: is a symbolic link; refusing to follow it"},
		{"state directory is a symbolic link", func(t *testing.T) {
			os.WriteFile(filepath.Join(elsewhere, "state.json"), signRebaseState(t, fixture("valid.json")), 0o644)
			os.RemoveAll(stateDir)
			if err := os.Symlink(elsewhere, stateDir); err != nil {
				t.Fatal(err)
			}
		}, "state.json: " + stateDir + " is a symbolic link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []string{"--continue", "--abort", "--skip"} {
				os.RemoveAll(stateDir)
				tt.setup(t)
				code, stdout, stderr := runMain(t, "rebase", "--tree", tree, mode)
				if code != ExitUsage {
					t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", mode, code, ExitUsage, stdout, stderr)
				}
				if !strings.Contains(stderr, "rebase state "+stateFile) || !strings.Contains(stderr, tt.want) {
					t.Errorf("%s: stderr lacks the file %s and %q:\n%s", mode, stateFile, tt.want, stderr)
				}
			}
			if _, err := os.Lstat(pwned); err == nil {
				t.Fatalf("git ran the branch name as an option: %s exists", pwned)
			}
			if br, at := gitRun(t, tree, "symbolic-ref", "HEAD"), gitRun(t, tree, "rev-parse", "HEAD"); br != "refs/heads/mpspatch/series" || at != head {
				t.Errorf("a refused state moved HEAD: %s at %s", br, at)
			}
		})
	}

	t.Run("the valid fixture is accepted", func(t *testing.T) {
		os.RemoveAll(stateDir)
		writeState(t, stateFile, signRebaseState(t, fixture("valid.json")))
		code, stdout, stderr := runMain(t, "rebase", "--tree", tree, "--abort")
		if code != ExitOK || !strings.Contains(stdout, "rebase aborted: mpspatch/series is back at") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if _, err := os.Lstat(stateDir); err == nil {
			t.Errorf("abort left %s", stateDir)
		}
	})
}

func writeState(t *testing.T, file string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
