package verify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/run"
	"github.com/mpspatch/mpspatch/internal/testenv"
)

// testPython is the interpreter with torch and pytest (package testenv decides).
func testPython(t *testing.T) string {
	t.Helper()
	return testenv.Python(t)
}

// crashyDir is a suite directory made of the real suites' conftest and helpers plus the
// crash fixtures from testdata/crashy, so the runner is tested against the real protocol.
func crashyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteSuites(dir); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "test_*.py"))
	for _, p := range append(old, filepath.Join(dir, BenchScript)) {
		os.Remove(p)
	}
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "crashy", "*.py"))
	for _, p := range fixtures {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRunCrashIsolation(t *testing.T) {
	py := testPython(t)
	dir := crashyDir(t)
	pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
	t.Setenv("CRASHY_PIDFILE", pidfile)
	report := t.TempDir()
	rep := &Report{}
	err := runSuites(context.Background(), suiteOptions{
		Target:    TargetPatched,
		Env:       Env{Target: TargetPatched, Interpreter: py, Device: "cpu"},
		Profile:   "quick",
		Files:     []string{"test_crashy.py"},
		Timeout:   10 * time.Second, // torch's import must fit in it on a loaded 2-core runner
		SuitesDir: dir,
		LogDir:    filepath.Join(report, "logs"),
		ReportDir: report,
		KillGrace: time.Second,
		Poll:      20 * time.Millisecond,
	}, rep)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	type want struct {
		id         string
		outcome    Outcome
		death      string
		signatures []string
	}
	wants := []want{
		{"test_a_before", Pass, "", nil},
		{"test_b_segfault", Crash, "SIGSEGV", nil},
		{"test_c_after_segfault", Pass, "", nil},
		{"test_d_metal_abort", Crash, "SIGABRT", []string{"double-commit"}},
		{"test_e_after_abort", Pass, "", nil},
		{"test_f_hang", Timeout, "", nil},
		{"test_g_after_hang", Pass, "", nil},
		{"test_h_wrong_result", Fail, "", nil},
		{"test_i_runtime_error", Error, "", []string{"invalid-kerneldag"}},
		{"test_j_skip", Skip, "", nil},
		{"test_k_last", Pass, "", nil},
	}
	var haveIDs []string
	byID := map[string]Result{}
	for _, r := range rep.Results {
		haveIDs = append(haveIDs, strings.TrimPrefix(r.ID, "test_crashy.py::"))
		byID[strings.TrimPrefix(r.ID, "test_crashy.py::")] = r
	}
	var wantIDs []string
	for _, w := range wants {
		wantIDs = append(wantIDs, w.id)
	}
	// Each test exactly once, in order: a crash cost its own test and nothing else.
	if !reflect.DeepEqual(haveIDs, wantIDs) {
		for _, r := range rep.Results {
			t.Logf("%+v", r)
		}
		t.Fatalf("results\nhave %v\nwant %v", haveIDs, wantIDs)
	}
	for _, w := range wants {
		t.Run(w.id, func(t *testing.T) {
			have := byID[w.id]
			if have.Outcome != w.outcome {
				t.Errorf("outcome: have %s, want %s (message %q)", have.Outcome, w.outcome, have.Message)
			}
			if have.Death != w.death {
				t.Errorf("death: have %q, want %q", have.Death, w.death)
			}
			if !reflect.DeepEqual(have.Signatures, w.signatures) {
				t.Errorf("signatures: have %v, want %v", have.Signatures, w.signatures)
			}
			if have.Target != TargetPatched || have.File != "test_crashy.py" || have.Repeat != 1 {
				t.Errorf("target/file/repeat: have %s/%s/%d", have.Target, have.File, have.Repeat)
			}
			if _, err := os.Stat(filepath.Join(report, have.Log)); err != nil {
				t.Errorf("log %q: %v", have.Log, err)
			}
		})
	}
	if msg := byID["test_d_metal_abort"].Message; !strings.Contains(msg, "commit an already committed command buffer") {
		t.Errorf("abort message should quote the Metal line, have %q", msg)
	}
	if msg := byID["test_h_wrong_result"].Message; !strings.Contains(msg, "disagrees with the reference") {
		t.Errorf("fail message: have %q", msg)
	}
	if len(rep.Notices) != 3 {
		t.Errorf("notices: have %d, want 3 (one restart per death): %v", len(rep.Notices), rep.Notices)
	}

	// The hung test's grandchild must be gone: the whole process group was killed.
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("the hang fixture did not record its child: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if !processGone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("grandchild %d of the hung test survived the kill of its process group", pid)
	}
}

// processGone reports whether pid has exited (a zombie waiting for init counts as gone). The
// SIGKILL was sent before Run returned; delivery can lag a moment, hence the short wait.
func processGone(pid int) bool {
	for i := 0; i < 100; i++ {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func TestRunBrokenFileIsAResult(t *testing.T) {
	t.Parallel()
	py := testPython(t)
	dir := crashyDir(t)
	report := t.TempDir()
	rep := &Report{}
	err := runSuites(context.Background(), suiteOptions{
		Target: TargetBaseline, Env: Env{Target: TargetBaseline, Interpreter: py, Device: "cpu"},
		Profile: "quick", Files: []string{"test_broken.py"}, Timeout: time.Minute,
		SuitesDir: dir, LogDir: filepath.Join(report, "logs"), ReportDir: report,
	}, rep)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(rep.Results) != 1 {
		t.Fatalf("have %d results, want 1: %+v", len(rep.Results), rep.Results)
	}
	have := rep.Results[0]
	if have.ID != "test_broken.py" || have.Outcome != Error || have.Target != TargetBaseline {
		t.Errorf("have %+v, want a file-level error of the baseline", have)
	}
	if !strings.Contains(have.Message, "no_such_module_mpspatch") {
		t.Errorf("message should name the import that failed, have %q", have.Message)
	}
}

func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	py := testPython(t)
	dir := crashyDir(t)
	report := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	obs := &cancelOn{id: "test_crashy.py::test_f_hang", cancel: cancel, Report: &Report{}}
	err := runSuites(ctx, suiteOptions{
		Target: TargetPatched, Env: Env{Target: TargetPatched, Interpreter: py, Device: "cpu"},
		Profile: "quick", Files: []string{"test_crashy.py"}, Timeout: time.Minute,
		SuitesDir: dir, LogDir: filepath.Join(report, "logs"), ReportDir: report,
		KillGrace: time.Second, Poll: 20 * time.Millisecond,
	}, obs)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: have %v, want context.Canceled", err)
	}
	// What finished before the interrupt is kept; the interrupted test is not invented.
	if n := len(obs.Results); n != 5 {
		t.Errorf("have %d results before the interrupt, want 5 (a..e)", n)
	}
	for _, r := range obs.Results {
		if strings.HasSuffix(r.ID, "test_f_hang") {
			t.Errorf("the interrupted test got a result: %+v", r)
		}
	}
}

// cancelOn cancels the run when test id starts, as Ctrl-C would.
type cancelOn struct {
	*Report
	id     string
	cancel func()
}

func (c *cancelOn) Started(_, id string) {
	if id == c.id {
		c.cancel()
	}
}

func TestProbe(t *testing.T) {
	py := testPython(t)
	fake := func(module string) string {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, module+".py"), []byte("raise ImportError('hidden by the test')\n"), 0o644)
		return dir
	}
	for _, tc := range []struct {
		name       string
		python     string
		pythonpath string
		device     string
		wantErr    string // substring; empty: success
	}{
		{name: "cpu", python: py, device: "cpu"},
		{name: "best device", python: py, device: ""},
		{name: "no interpreter", python: "/nonexistent/python3", wantErr: "not found"},
		{name: "no interpreter in PATH", python: "mpspatch-no-such-python", wantErr: "not found"},
		{name: "no torch", python: py, pythonpath: fake("torch"), wantErr: "cannot import torch"},
		{name: "no pytest", python: py, pythonpath: fake("pytest"), wantErr: "cannot import pytest"},
		{name: "absent device", python: py, device: "mps", wantErr: `device "mps" is not available`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PYTHONPATH", tc.pythonpath)
			have, err := probeWith(context.Background(), tc.python, TargetPatched, tc.device, probeOptions{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("have error %v, want one containing %q", err, tc.wantErr)
				}
				if !errors.Is(err, ErrUnsupported) {
					t.Errorf("error %v is not ErrUnsupported (exit 5)", err)
				}
				if !strings.Contains(err.Error(), tc.python) {
					t.Errorf("error %v does not name the interpreter", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if have.Torch == "" || !strings.HasSuffix(have.TorchPath, "__init__.py") || have.Pytest == "" {
				t.Errorf("incomplete env: %+v", have)
			}
			if have.Device == "" || !contains(have.Devices, have.Device) {
				t.Errorf("device %q not among available %v", have.Device, have.Devices)
			}
			if have.Interpreter != tc.python || have.Target != TargetPatched {
				t.Errorf("interpreter/target: have %q/%q", have.Interpreter, have.Target)
			}
		})
	}
}

func TestSelectSuites(t *testing.T) {
	all := []string{"test_linear.py", "test_models.py", "test_raw_ops.py"}
	for _, tc := range []struct {
		name    string
		names   []string
		want    []string
		wantErr bool
	}{
		{"none means all", nil, all, false},
		{"short name", []string{"raw_ops"}, []string{"test_raw_ops.py"}, false},
		{"stem and file, kept in suite order", []string{"test_raw_ops", "test_linear.py"}, []string{"test_linear.py", "test_raw_ops.py"}, false},
		{"unknown", []string{"nope"}, nil, true},
		{"self-test", []string{"harness"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have, err := selectSuites(all, tc.names)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(have, tc.want) {
				t.Errorf("have %v, want %v", have, tc.want)
			}
		})
	}
}

func TestEmbeddedSuites(t *testing.T) {
	dir := t.TempDir()
	if err := WriteSuites(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"conftest.py", BenchScript} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("embedded suites lack %s: %v", f, err)
		}
	}
	files, err := listSuites(dir)
	if err != nil || len(files) == 0 {
		t.Fatalf("listSuites: %v, %v", files, err)
	}
	for _, f := range files {
		if !strings.HasPrefix(f, "test_") || !strings.HasSuffix(f, ".py") {
			t.Errorf("listSuites returned %q", f)
		}
	}
}

// TestListSuitesLeavesOutSelfTests: a user's verify runs the concurrency suites only; the
// harness self-tests stay in the suite directory (make test-python runs them there) but are
// never listed, whether the suites come from the binary or from --suites-dir.
func TestListSuitesLeavesOutSelfTests(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"conftest.py", "suite_harness.py", "test_a.py", "test_harness.py", "test_b.py"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := listSuites(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"test_a.py", "test_b.py"}; !reflect.DeepEqual(have, want) {
		t.Errorf("listSuites = %v, want %v", have, want)
	}
	if _, err := selectSuites(have, []string{"test_harness.py"}); err == nil || !strings.Contains(err.Error(), "self-test") {
		t.Errorf("--suite test_harness.py: error %v, want one naming it the self-test", err)
	}

	emb := t.TempDir()
	if err := WriteSuites(emb); err != nil {
		t.Fatal(err)
	}
	for _, f := range SelfTests {
		if _, err := os.Stat(filepath.Join(emb, f)); err != nil {
			t.Errorf("embedded suites lack the self-test %s (make test-python runs it): %v", f, err)
		}
	}
	listed, err := listSuites(emb)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range listed {
		if isSelfTest(f) {
			t.Errorf("listSuites of the embedded suites lists the self-test %s", f)
		}
	}
	for _, f := range []string{"test_allocator_churn.py", "test_sync.py", "test_events.py", "test_lifecycle.py", "test_startup.py", "test_handoff.py", "test_backward.py"} {
		if !slices.Contains(listed, f) {
			t.Errorf("listSuites of the embedded suites lacks %s: %v", f, listed)
		}
	}
}

// An interpreter that dies during the probe gets one paragraph: the interpreter, how it
// ended, the last line it printed and the log, never the probe script itself.
func TestProbeFailureIsOneParagraph(t *testing.T) {
	py := testPython(t)
	dir := t.TempDir()
	site := "import os, sys\nsys.stderr.write('Traceback (most recent call last):\\n  File \"x\"\\nRuntimeError: broken torch build\\n')\nsys.stderr.flush()\nos._exit(3)\n"
	if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", dir)
	logPath := filepath.Join(t.TempDir(), "probe.log")
	_, err := probeWith(context.Background(), py, TargetPatched, "cpu", probeOptions{LogPath: logPath})
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	for _, want := range []string{py, "exit status 3", "it printed last: RuntimeError: broken torch build", "full output in " + logPath} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") || strings.Contains(msg, "import json") {
		t.Errorf("error is not one paragraph:\n%s", msg)
	}
	if log, _ := os.ReadFile(logPath); !strings.Contains(string(log), "import json") || !strings.Contains(string(log), "broken torch build") {
		t.Errorf("the log lacks the script or the output:\n%s", log)
	}
}

// TestHarnessSelfTests runs the suites' own self-tests (SelfTests, left out of every verify
// run) under plain pytest on CPU: make test covers them here, and the concurrency suites
// through TestVerifyEndToEnd, so it runs no suite twice.
func TestHarnessSelfTests(t *testing.T) {
	t.Parallel()
	py := testPython(t)
	dir := t.TempDir()
	if err := WriteSuites(dir); err != nil {
		t.Fatal(err)
	}
	args := append([]string{py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--device", "cpu"}, SelfTests...)
	var out strings.Builder
	if _, err := run.Run(context.Background(), run.Cmd{Argv: args, Dir: dir, Stdout: &out, Stderr: &out, Timeout: 5 * time.Minute}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), " passed") {
		t.Errorf("pytest ran nothing:\n%s", out.String())
	}
}
