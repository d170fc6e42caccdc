package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/run"
)

// isolateGit gives git in this process (and its children) a private HOME, no system or
// global config, a fixed identity, and file:// submodules allowed. Not for parallel tests.
func isolateGit(t *testing.T) {
	t.Helper()
	for _, kv := range gitcli.DeterministicEnv(t.TempDir()) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := run.Output(context.Background(), run.Cmd{Argv: append([]string{"git"}, args...), Dir: dir})
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// upstreamRepo makes a bare repository with a submodule and two commits; it returns its
// file:// URL and the first commit (the pinned one: not the tip).
func upstreamRepo(t *testing.T) (string, string) {
	t.Helper()
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	os.MkdirAll(sub, 0o755)
	gitRun(t, sub, "init", "-q")
	os.WriteFile(filepath.Join(sub, "third.c"), []byte("int third;\n"), 0o644)
	gitRun(t, sub, "add", "-A")
	gitRun(t, sub, "commit", "-q", "-m", "sub")

	work := filepath.Join(root, "work")
	os.MkdirAll(filepath.Join(work, "aten"), 0o755)
	gitRun(t, work, "init", "-q")
	os.WriteFile(filepath.Join(work, "setup.py"), []byte("# pinned\n"), 0o644)
	os.WriteFile(filepath.Join(work, "aten", "x.cpp"), []byte("int x;\n"), 0o644)
	gitRun(t, work, "submodule", "add", "-q", "file://"+sub, "third_party/sub")
	gitRun(t, work, "add", "-A")
	gitRun(t, work, "commit", "-q", "-m", "pinned")
	pinned := gitRun(t, work, "rev-parse", "HEAD")
	gitRun(t, work, "tag", "-a", "-m", "the pinned release", "v-test")
	os.WriteFile(filepath.Join(work, "setup.py"), []byte("# later\n"), 0o644)
	gitRun(t, work, "commit", "-q", "-a", "-m", "later")
	bare := filepath.Join(root, "upstream.git")
	gitRun(t, root, "clone", "-q", "--bare", work, bare)
	return "file://" + bare, pinned
}

func writeConfig(t *testing.T, url, commit string) string {
	t.Helper()
	return writeConfigTag(t, url, "v-test", commit)
}

// cloned clones cfg's upstream into a new directory and returns it.
func cloned(t *testing.T, cfg string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pytorch")
	if code, _, stderr := runMain(t, "--config", cfg, "--quiet", "clone", "--dir", dir); code != ExitOK {
		t.Fatalf("clone: exit %d: %s", code, stderr)
	}
	return dir
}

func writeConfigTag(t *testing.T, url, tag, commit string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mpspatch.toml")
	cfg := "[upstream]\nurl = \"" + url + "\"\ntag = \"" + tag + "\"\ncommit = \"" + commit + "\"\n"
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCloneCommand(t *testing.T) {
	isolateGit(t)
	url, pinned := upstreamRepo(t)
	cfg := writeConfig(t, url, pinned)

	t.Run("clones the pinned commit", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "pytorch")
		code, stdout, stderr := runMain(t, "--config", cfg, "clone", "--dir", dir, "--json")
		if code != ExitOK {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		var rep cloneReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
		}
		if rep.Dir != dir || rep.Commit != pinned || rep.URL != url || rep.Full {
			t.Errorf("report %+v", rep)
		}
		if head := gitRun(t, dir, "rev-parse", "HEAD"); head != pinned {
			t.Errorf("HEAD %s, want %s", head, pinned)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, "third_party/sub/third.c")); string(data) != "int third;\n" {
			t.Errorf("submodule not checked out: %q", data)
		}
		if !strings.HasPrefix(rep.Log, filepath.Join(dir, ".mpspatch", "logs", "clone-")) {
			t.Errorf("log %s, want under the tree's .mpspatch/logs", rep.Log)
		}
		log, err := os.ReadFile(rep.Log)
		if err != nil || !strings.Contains(string(log), "$ git fetch --progress --no-tags --depth 1 origin "+pinned) {
			t.Errorf("log lacks the fetch command (err %v):\n%s", err, log)
		}
		for _, want := range []string{"clone: " + url + " at " + pinned, "clone: fetch:", "clone: submodules:"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
		// The log directory and a provenance stamp do not make the tree dirty.
		os.MkdirAll(filepath.Join(dir, "torch"), 0o755)
		os.WriteFile(filepath.Join(dir, "torch", "mpspatch_provenance.json"), []byte("{}"), 0o644)
		if st := gitRun(t, dir, "status", "--porcelain"); st != "" {
			t.Errorf("tree not clean after clone, log and stamp:\n%s", st)
		}
	})

	t.Run("full history", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "pytorch")
		code, _, stderr := runMain(t, "--config", cfg, "--quiet", "clone", "--dir", dir, "--full")
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if shallow := gitRun(t, dir, "rev-parse", "--is-shallow-repository"); shallow != "false" {
			t.Errorf("--full clone is shallow")
		}
		// A partial clone: later three-way merges fetch the blobs they need.
		if f := gitRun(t, dir, "config", "remote.origin.partialclonefilter"); f != "blob:none" {
			t.Errorf("--full clone filter %q, want blob:none", f)
		}
		if code, stdout, _ := runMain(t, "--config", cfg, "clone", "--dir", dir, "--full"); code != ExitOK ||
			!strings.Contains(stdout, "is already a finished clone") {
			t.Errorf("re-run on the finished clone: exit %d, stdout %q; want a no-op that says so", code, stdout)
		}
		if strings.Contains(stderr, "clone:") {
			t.Errorf("--quiet printed progress:\n%s", stderr)
		}
	})

	nonEmpty := t.TempDir()
	os.WriteFile(filepath.Join(nonEmpty, "keep.txt"), nil, 0o644)
	aFile := filepath.Join(t.TempDir(), "file")
	os.WriteFile(aFile, nil, 0o644)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"non-empty dir", []string{"--config", cfg, "clone", "--dir", nonEmpty}, ExitUsage, "is not empty (holds keep.txt)"},
		{"dir is a file", []string{"--config", cfg, "clone", "--dir", aFile}, ExitUsage, "is not a directory"},
		{"bad jobs", []string{"--config", cfg, "clone", "--dir", filepath.Join(t.TempDir(), "x"), "--jobs", "0"}, ExitUsage, "--jobs 0"},
		{"tag moved", []string{"--config", writeConfig(t, url, strings.Repeat("0123456789", 4)), "clone", "--dir", filepath.Join(t.TempDir(), "x")},
			ExitCheckFailed, "tag v-test at " + url + " points at " + pinned + ", but the config pins " + strings.Repeat("0123456789", 4)},
		{"unknown commit", []string{"--config", writeConfigTag(t, url, "", strings.Repeat("0123456789", 4)), "clone", "--dir", filepath.Join(t.TempDir(), "x")},
			ExitUsage, "the remote origin has no commit " + strings.Repeat("0123456789", 4) + "; check [upstream] commit"},
		{"http refused", []string{"--config", writeConfigTag(t, "http://example.com/pytorch.git", "", pinned), "clone", "--dir", filepath.Join(t.TempDir(), "x")},
			ExitUsage, "scheme http is not allowed"},
		{"another clone there", []string{"--config", writeConfigTag(t, url, "", strings.Repeat("0123456789", 4)), "clone", "--dir", cloned(t, cfg)},
			ExitUsage, "already holds a clone at " + pinned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("exit %d, want %d; stderr lacks %q?\nstdout: %s\nstderr: %s", code, tt.wantCode, tt.wantStderr, stdout, stderr)
			}
		})
	}

	t.Run("no git", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		code, _, stderr := runMain(t, "--config", cfg, "clone", "--dir", filepath.Join(t.TempDir(), "x"))
		if code != ExitUnsupported || !strings.Contains(stderr, "git binary \"git\" not found") {
			t.Errorf("exit %d, want %d\nstderr: %s", code, ExitUnsupported, stderr)
		}
	})
}

func TestCloneProgressText(t *testing.T) {
	tests := []struct {
		step, line string
		tty        bool
		want       string
	}{
		{"fetch", "Receiving objects:  45% (450/1000), 1.20 MiB | 3.00 MiB/s", true,
			"clone: fetch: Receiving objects [=========>          ]  45% (450/1000), 1.20 MiB | 3.00 MiB/s"},
		{"fetch", "Resolving deltas: 100% (12/12), done.", true,
			"clone: fetch: Resolving deltas [====================] 100% (12/12), done."},
		{"submodules", "Cloning into '/x/third_party/sub'...", true,
			"clone: submodules: Cloning into '/x/third_party/sub'..."},
		{"fetch", "Receiving objects:  45% (450/1000), 1.20 MiB | 3.00 MiB/s", false,
			"clone: fetch: Receiving objects:  45% (450/1000), 1.20 MiB | 3.00 MiB/s"},
	}
	for _, tt := range tests {
		if have := cloneProgressText(tt.step, tt.line, tt.tty); have != tt.want {
			t.Errorf("cloneProgressText(%q, %q, tty %v):\nhave %q\nwant %q", tt.step, tt.line, tt.tty, have, tt.want)
		}
	}
}

// Off a terminal, a clone's progress was a line per update git redrew (every count of
// "Enumerating objects", every 10% of each phase): a CI log gets a phase's start and end.
func TestCloneProgressPlainLog(t *testing.T) {
	var buf strings.Builder
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &progressLine{w: &buf, now: func() time.Time { return clock }}
	feed := func(step string, lines ...string) {
		for _, line := range lines {
			l.update(cloneProgressKey(step, line), cloneProgressText(step, line, false), false)
			clock = clock.Add(time.Second)
		}
	}
	feed("fetch", "remote: Enumerating objects: 10", "remote: Enumerating objects: 200", "remote: Enumerating objects: 3000, done.")
	feed("fetch", "remote: Counting objects:   1% (30/3000)", "remote: Counting objects:  50% (1500/3000)", "remote: Counting objects: 100% (3000/3000), done.")
	feed("fetch", "remote: Compressing objects:  10% (100/1000)", "remote: Compressing objects:  90% (900/1000)", "remote: Compressing objects: 100% (1000/1000), done.")
	for i := 0; i <= 100; i += 5 { // 21 updates, 2 s apart
		feed("fetch", fmt.Sprintf("Receiving objects: %3d%% (%d/3000), 1.00 MiB | 2.00 MiB/s", i, 30*i))
		clock = clock.Add(time.Second)
	}
	want := strings.Join([]string{
		"clone: fetch: remote: Enumerating objects: 10",
		"clone: fetch: remote: Enumerating objects: 3000, done.",
		"clone: fetch: remote: Counting objects:   1% (30/3000)",
		"clone: fetch: remote: Counting objects: 100% (3000/3000), done.",
		"clone: fetch: remote: Compressing objects:  10% (100/1000)",
		"clone: fetch: remote: Compressing objects: 100% (1000/1000), done.",
		"clone: fetch: Receiving objects:   0% (0/3000), 1.00 MiB | 2.00 MiB/s",
		"clone: fetch: Receiving objects:  75% (2250/3000), 1.00 MiB | 2.00 MiB/s", // 30 s into the phase
		"clone: fetch: Receiving objects: 100% (3000/3000), 1.00 MiB | 2.00 MiB/s",
	}, "\n") + "\n"
	if have := buf.String(); have != want {
		t.Errorf("plain progress:\n%s\nwant:\n%s", have, want)
	}
}
