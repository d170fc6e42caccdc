package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/gitcli"
)

// runFixture is a local upstream holding a stand-in PyTorch tree, a one-patch series
// exported from it, a config that points at both, and a tiny suite for verify.
type runFixture struct {
	dir, config, patches, suites string
}

const standInStream = `// Stand-in for an MPS source file.
#include "Stream.h"

namespace at::mps {

void Stream::commit() {
  flush();
}

} // namespace at::mps
`

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// isolateGitEnv keeps the machine's git configuration and identity out of a test: the
// process environment becomes gitcli's deterministic one (Main runs in-process, and the
// git it starts inherits the environment).
func isolateGitEnv(t *testing.T) {
	for _, kv := range gitcli.DeterministicEnv(t.TempDir()) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

func newRunFixture(t *testing.T) runFixture {
	t.Helper()
	isolateGitEnv(t)
	work := t.TempDir()
	up := filepath.Join(work, "upstream")
	files := map[string]string{
		"setup.py":                     "# stand-in\n",
		"torch/__init__.py":            "",
		"aten/src/ATen/mps/Stream.mm":  standInStream,
		"aten/src/ATen/mps/README.txt": "stand-in\n",
	}
	for name, body := range files {
		p := filepath.Join(up, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, up, "init", "-q", "-b", "main")
	git(t, up, "add", "-A")
	git(t, up, "commit", "-q", "-m", "base")
	base := git(t, up, "rev-parse", "HEAD")
	patched := strings.Replace(standInStream, "  flush();\n", "  flush();\n  wait();\n", 1)
	if err := os.WriteFile(filepath.Join(up, "aten/src/ATen/mps/Stream.mm"), []byte(patched), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, up, "commit", "-q", "-a", "-m", "stream: wait after flush")
	patches := filepath.Join(work, "patches")
	git(t, up, "format-patch", "-q", "--full-index", "--zero-commit", "--no-numbered", "--no-signature", "-o", patches, "HEAD~1")
	git(t, up, "reset", "-q", "--hard", base)
	if err := os.WriteFile(filepath.Join(patches, "series"), []byte("0001-stream-wait-after-flush.patch\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	py := fakePython(t)
	cfg := filepath.Join(work, "mpspatch.toml")
	toml := "[upstream]\nurl = \"file://" + up + "\"\ntag = \"\"\ncommit = \"" + base + "\"\n" +
		"[patches]\ndir = \"" + patches + "\"\n" +
		"[build]\npython = \"" + py + "\"\n" +
		"[verify]\npython = \"" + verifyPython(t) + "\"\n"
	if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	suites := writeSuitesWith(t, map[string]string{"test_tiny.py": "def test_tiny():\n    assert 1 + 1 == 2\n"})
	return runFixture{dir: filepath.Join(work, "pytorch"), config: cfg, patches: patches, suites: suites}
}

// args runs the whole job. --allow-foreign-torch: the fake build makes no importable
// torch, so verify (with Debian's torch) would rightly refuse --tree's build otherwise.
func (f runFixture) args(extra ...string) []string {
	return append([]string{"--config", f.config, "--json", "run", "--dir", f.dir, "--device", "cpu",
		"--build", "--no-scaling", "--suites-dir", f.suites, "--allow-foreign-torch"}, extra...)
}

// runOutcomes decodes run's JSON summary into "stage=outcome" words.
func runOutcomes(t *testing.T, stdout string) (string, runReport) {
	t.Helper()
	var rep runReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("run --json: %v\n%s", err, stdout)
	}
	var parts []string
	for _, s := range rep.Stages {
		parts = append(parts, s.Name+"="+string(s.Outcome))
	}
	return strings.Join(parts, " "), rep
}

func TestRunEndToEnd(t *testing.T) {
	f := newRunFixture(t)
	t.Setenv("FAKE_MODE", "ok")
	hostOS = "linux"

	// First run: every stage that can run here runs; the probe needs a Mac.
	code, stdout, stderr := runMain(t, f.args()...)
	if code != ExitOK {
		t.Fatalf("first run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	have, rep := runOutcomes(t, stdout)
	if want := "clone=ran apply=ran audit=ran build=ran probe=skipped verify=ran"; have != want {
		t.Fatalf("first run:\nhave %s\nwant %s\n%s", have, want, stderr)
	}
	if rep.Stages[4].Reason != "the Metal probe needs macOS (this is linux)" {
		t.Errorf("probe's reason: %q", rep.Stages[4].Reason)
	}
	if !strings.Contains(rep.Stages[5].Detail, "1 pass") {
		t.Errorf("verify's detail: %q", rep.Stages[5].Detail)
	}
	data, err := os.ReadFile(filepath.Join(f.dir, "aten/src/ATen/mps/Stream.mm"))
	if err != nil || !strings.Contains(string(data), "wait();") {
		t.Fatalf("the tree is not patched: %v\n%s", err, data)
	}
	if _, err := os.Stat(filepath.Join(f.dir, ".mpspatch/run/report/audit.sarif")); err != nil {
		t.Errorf("audit SARIF: %v", err)
	}
	if st := git(t, f.dir, "status", "--porcelain", "--untracked-files=all"); st != "M aten/src/ATen/mps/Stream.mm" {
		t.Errorf("git status of the tree: %q (mpspatch's state must be excluded)", st)
	}

	// Second run: nothing changed, every stage is skipped as up to date.
	code, stdout, stderr = runMain(t, f.args()...)
	if have, _ := runOutcomes(t, stdout); code != ExitOK || have != "clone=up-to-date apply=up-to-date audit=up-to-date build=up-to-date probe=skipped verify=up-to-date" {
		t.Fatalf("second run: exit %d, %s\n%s", code, have, stderr)
	}
	if !strings.Contains(stderr, "run: build up to date, skipped") {
		t.Errorf("stderr does not say build was skipped:\n%s", stderr)
	}

	// Touching a patch (its message, so the tree already holds its change) redoes apply
	// and everything after it; the clone stays.
	patch := filepath.Join(f.patches, "0001-stream-wait-after-flush.patch")
	data, err = os.ReadFile(patch)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(patch, []byte(strings.Replace(string(data), "Subject: [PATCH] stream: wait after flush", "Subject: [PATCH] stream: wait for the GPU after flush", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runMain(t, f.args()...)
	if have, _ := runOutcomes(t, stdout); code != ExitOK || have != "clone=up-to-date apply=ran audit=ran build=ran probe=skipped verify=ran" {
		t.Fatalf("after touching a patch: exit %d, %s\n%s", code, have, stderr)
	}

	// --from verify reruns verify alone; --until audit stops there.
	code, stdout, _ = runMain(t, f.args("--from", "verify")...)
	if have, _ := runOutcomes(t, stdout); code != ExitOK || have != "clone=up-to-date apply=up-to-date audit=up-to-date build=up-to-date probe=skipped verify=ran" {
		t.Errorf("--from verify: exit %d, %s", code, have)
	}
	code, stdout, _ = runMain(t, f.args("--until", "audit")...)
	if have, _ := runOutcomes(t, stdout); code != ExitOK || have != "clone=up-to-date apply=up-to-date audit=up-to-date" {
		t.Errorf("--until audit: exit %d, %s", code, have)
	}
}

// TestRunInterruptedBuildResumesAtBuild: Ctrl-C during the build leaves the stamps of
// clone, apply and audit valid; the next run starts at the build.
func TestRunInterruptedBuildResumesAtBuild(t *testing.T) {
	f := newRunFixture(t)
	hostOS = "linux"
	started := filepath.Join(t.TempDir(), "build-started")
	t.Setenv("FAKE_MODE", "hang")
	t.Setenv("FAKE_STARTED", started)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(started); err == nil {
				cancel() // what Main's signal handler does on SIGINT
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var out, errb strings.Builder
	code := Main(ctx, f.args(), IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(string) string { return "" }})
	if code != ExitInterrupted {
		t.Fatalf("interrupted run: exit %d, want %d\n%s\n%s", code, ExitInterrupted, out.String(), errb.String())
	}
	if have, _ := runOutcomes(t, out.String()); have != "clone=ran apply=ran audit=ran build=interrupted probe=not-reached verify=not-reached" {
		t.Fatalf("interrupted run: %s", have)
	}

	t.Setenv("FAKE_MODE", "ok")
	code, stdout, stderr := runMain(t, f.args()...)
	if have, _ := runOutcomes(t, stdout); code != ExitOK || have != "clone=up-to-date apply=up-to-date audit=up-to-date build=ran probe=skipped verify=ran" {
		t.Fatalf("resumed run: exit %d, %s\n%s", code, have, stderr)
	}
}

// TestRunKilledDuringBuildResumesAtBuild: SIGKILL gives mpspatch no chance to clean up;
// the stamps of the finished stages must still be valid and the build must run again.
func TestRunKilledDuringBuildResumesAtBuild(t *testing.T) {
	f := newRunFixture(t)
	started := filepath.Join(t.TempDir(), "build-started")
	cmd := exec.Command(os.Args[0], f.args()...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1", "FAKE_MODE=hang", "FAKE_STARTED="+started)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	var pid []byte
	for {
		var err error
		if pid, err = os.ReadFile(started); err == nil && len(pid) > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the build never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The fake build outlives its parent, as a real compiler would; end it.
	if p, err := strconv.Atoi(strings.TrimSpace(string(pid))); err == nil {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}

	hostOS = "linux"
	t.Setenv("FAKE_MODE", "ok")
	code, stdout, stderr := runMain(t, f.args()...)
	if have, _ := runOutcomes(t, stdout); code != ExitOK || have != "clone=up-to-date apply=up-to-date audit=up-to-date build=ran probe=skipped verify=ran" {
		t.Fatalf("run after SIGKILL: exit %d, %s\n%s", code, have, stderr)
	}
}

func TestRunFailureStopsWithTheStageCodeAndMarkdownSummary(t *testing.T) {
	f := newRunFixture(t)
	hostOS = "linux"
	t.Setenv("FAKE_MODE", "fail")
	summary := filepath.Join(t.TempDir(), "step-summary.md")
	code, stdout, stderr := runMain(t, f.args("--summary-file", summary)...)
	if code != ExitBuildFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitBuildFailed, stdout, stderr)
	}
	have, rep := runOutcomes(t, stdout)
	if have != "clone=ran apply=ran audit=ran build=failed probe=not-reached verify=not-reached" || rep.Code != ExitBuildFailed {
		t.Fatalf("have %s, code %d", have, rep.Code)
	}
	// The reason is the build's own error, once: its first line (the rest is in the
	// log), not wrapped again in "mpspatch build failed (exit 4)".
	if why := rep.Stages[3].Reason; !strings.HasPrefix(why, "build failed: ") || strings.Contains(why, "\n") || strings.Contains(why, "exit 4") {
		t.Errorf("build's reason: %q", why)
	}
	if line := lineWith(stderr, "run: build failed"); line != "run: build failed (exit 4): "+rep.Stages[3].Reason {
		t.Errorf("stderr's line for the failed build: %q, want the reason after one \"failed (exit 4)\"", line)
	}
	md, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### mpspatch run: failed (exit 4)", "| build | failed |", "| verify | not-reached |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown summary lacks %q:\n%s", want, md)
		}
	}

	// A directory holding a checkout of another commit is refused, not patched.
	other := filepath.Join(t.TempDir(), "other")
	git(t, filepath.Dir(other), "init", "-q", other)
	if err := os.WriteFile(filepath.Join(other, "x"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, other, "add", "-A")
	git(t, other, "commit", "-q", "-m", "unrelated")
	f.dir = other
	code, stdout, _ = runMain(t, f.args()...)
	if have, rep := runOutcomes(t, stdout); code != ExitUsage || have != "clone=failed apply=not-reached audit=not-reached build=not-reached probe=not-reached verify=not-reached" ||
		!strings.Contains(rep.Stages[0].Reason, "not of the pinned commit") {
		t.Errorf("foreign checkout: exit %d, %s, %+v", code, have, rep.Stages[0])
	}
}

// lineWith returns the first line of s that contains sub, or "".
func lineWith(s, sub string) string {
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			return line
		}
	}
	return ""
}
