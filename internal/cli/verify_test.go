package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/testenv"
	"github.com/mpspatch/mpspatch/verify"
)

// verifyPython is the interpreter with torch and pytest (package testenv decides).
func verifyPython(t *testing.T) string {
	t.Helper()
	return testenv.Python(t)
}

// TestVerifyEndToEnd runs the real embedded suites on CPU, quick profile, scaling included,
// and checks that every report format is produced and agrees with the others.
func TestVerifyEndToEnd(t *testing.T) {
	t.Parallel()
	py := verifyPython(t)
	dir := filepath.Join(t.TempDir(), "report")
	// --threads 2: this test is about the pipeline (every suite file runs, every report agrees),
	// not about concurrency, which the suites themselves test on a Mac; the smaller thread
	// matrix takes about a fifth off the longest test of make test.
	code, stdout, stderr := runMain(t, "verify", "--python", py, "--device", "cpu", "--profile", "quick", "--threads", "2", "--report-dir", dir)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// Terminal: torch at the top, a table, the verdict; a progress line per test on stderr.
	for _, want := range []string{"patched: torch ", "provenance: none", "rule: A test passes only if every",
		"test_raw_ops.py::test_parallel_raw_ops", "verify: PASS", "scaling:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.HasPrefix(stdout, "patched: torch ") {
		t.Errorf("stdout must start with the torch under test, starts %q", firstLine(stdout))
	}
	if !strings.Contains(stderr, "[patched] PASS") {
		t.Errorf("stderr has no progress lines:\n%s", stderr)
	}

	// results.jsonl: one object per line, results for every suite file, scaling rows.
	data, err := os.ReadFile(filepath.Join(dir, verify.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]int{}
	types := map[string]int{}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s line %d: %v", verify.ResultsFile, i+1, err)
		}
		types[m["type"].(string)]++
		if m["type"] == "result" {
			files[m["file"].(string)]++
			if m["outcome"] != "pass" && m["outcome"] != "skip" {
				t.Errorf("result not passing on CPU: %s", line)
			}
		}
	}
	for _, f := range []string{"test_raw_ops.py", "test_linear.py", "test_models.py", "test_startup.py",
		"test_lifecycle.py", "test_multiprocess.py", "test_boundary.py", "test_allocator_churn.py",
		"test_sync.py", "test_events.py", "test_handoff.py", "test_backward.py", verify.BenchScript} {
		if files[f] == 0 {
			t.Errorf("no results from %s", f)
		}
	}
	// The harness self-tests belong to make test, not to a user's report.
	for _, f := range verify.SelfTests {
		if files[f] != 0 {
			t.Errorf("%d results from the self-test %s in a user's verify run", files[f], f)
		}
	}
	if types["scaling"] == 0 || types["boundary"] == 0 || types["env"] == 0 || types["summary"] != 1 || types["run"] != 1 {
		t.Errorf("record types: %v", types)
	}

	// junit.xml agrees on the count.
	x, err := os.ReadFile(filepath.Join(dir, verify.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
	}
	if err := xml.Unmarshal(x, &doc); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	if doc.Tests != types["result"] || doc.Failures != 0 || doc.Errors != 0 {
		t.Errorf("junit: %+v, results.jsonl has %d results", doc, types["result"])
	}

	// report.html: self-contained, with the chart and the torch path.
	h, err := os.ReadFile(filepath.Join(dir, verify.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	html := string(h)
	for _, want := range []string{"<svg", "Throughput against threads", "torch/__init__.py", "badge b-pass"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(html, "http://") || strings.Contains(html, "https://") {
		t.Error("report.html references a URL")
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "patched-test_*.log"))
	if len(logs) == 0 {
		t.Error("no per-process logs under report-dir/logs")
	}

	// --render redraws the same reports from results.jsonl without running anything.
	again := filepath.Join(t.TempDir(), "again")
	code, stdout2, stderr2 := runMain(t, "verify", "--render", filepath.Join(dir, verify.ResultsFile), "--report-dir", again)
	if code != ExitOK {
		t.Fatalf("--render: exit %d\n%s\n%s", code, stdout2, stderr2)
	}
	// It says what it wrote, and only that: results.jsonl is its input.
	if !strings.Contains(stdout2, "reports in "+again+" (report.html, junit.xml)\n") {
		t.Errorf("--render names other files than it wrote:\n%s", stdout2)
	}
	if _, err := os.Stat(filepath.Join(again, verify.ResultsFile)); err == nil {
		t.Errorf("--render wrote %s", verify.ResultsFile)
	}
	if !strings.Contains(stdout, "reports in "+dir+" (report.html, junit.xml, results.jsonl)\n") {
		t.Errorf("the live run names other files than it wrote:\n%s", stdout)
	}
	for _, f := range []string{verify.HTMLFile, verify.JUnitFile} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, err := os.ReadFile(filepath.Join(again, f))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("--render: %s differs from the live run's (%v)", f, err)
		}
	}
}

// writeSuitesWith makes a suites directory of the real conftest and helpers plus files.
func writeSuitesWith(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := verify.WriteSuites(dir); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "test_*.py"))
	for _, p := range old {
		os.Remove(p)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const crashingSuite = `import os, signal

def test_one():
    pass

def test_two_segfaults():
    os.kill(os.getpid(), signal.SIGSEGV)

def test_three():
    pass
`

// TestVerifyCrashExitAndJSON: a crash is a result (exit 1, never a crash of mpspatch), the
// tests after it run, and --json streams one record per line on stdout.
func TestVerifyCrashExitAndJSON(t *testing.T) {
	t.Parallel()
	py := verifyPython(t)
	suites := writeSuitesWith(t, map[string]string{"test_crashing.py": crashingSuite})
	dir := filepath.Join(t.TempDir(), "report")
	code, stdout, stderr := runMain(t, "--json", "verify", "--python", py, "--device", "cpu",
		"--suites-dir", suites, "--no-scaling", "--report-dir", dir, "--repeat", "2")
	if code != ExitCheckFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitCheckFailed, stdout, stderr)
	}
	var outcomes []string
	var summary map[string]any
	for i, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line %d is not JSON: %v: %q", i+1, err, line)
		}
		switch m["type"] {
		case "result":
			id := strings.TrimPrefix(m["id"].(string), "test_crashing.py::")
			outcomes = append(outcomes, id+"="+m["outcome"].(string))
		case "summary":
			summary = m
		}
	}
	want := "test_one=pass test_two_segfaults=crash test_three=pass"
	if have := strings.Join(outcomes, " "); have != want+" "+want {
		t.Errorf("outcomes over two repetitions:\nhave %s\nwant %s %s", have, want, want)
	}
	if summary == nil || summary["status"] != "fail" {
		t.Errorf("summary: %v", summary)
	}
	if !strings.Contains(stderr, "SIGSEGV") {
		t.Errorf("stderr does not name the signal:\n%s", stderr)
	}
}

func TestVerifyUsageAndEnvironment(t *testing.T) {
	py := verifyPython(t)
	fakeTorch := t.TempDir()
	os.WriteFile(filepath.Join(fakeTorch, "torch.py"), []byte("raise ImportError('not here')\n"), 0o644)
	tests := []struct {
		name       string
		env        string // PYTHONPATH
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"no python", "", []string{"verify", "--python", filepath.Join(fakeTorch, "python9")}, ExitUnsupported, "not found"},
		{"no torch", fakeTorch, []string{"verify", "--python", py}, ExitUnsupported, "cannot import torch"},
		{"absent device", "", []string{"verify", "--python", py, "--device", "mps"}, ExitUnsupported, `device "mps" is not available`},
		{"bad device", "", []string{"verify", "--device", "tpu"}, ExitUsage, "--device"},
		{"bad profile", "", []string{"verify", "--profile", "huge"}, ExitUsage, "--profile"},
		{"bad repeat", "", []string{"verify", "--repeat", "0"}, ExitUsage, "--repeat"},
		{"bad threads", "", []string{"verify", "--threads", "0,2"}, ExitUsage, "--threads"},
		{"unknown suite", "", []string{"verify", "--suite", "nope"}, ExitUsage, `unknown suite "nope"`},
		{"suites dir without conftest", "", []string{"verify", "--suites-dir", fakeTorch}, ExitUsage, "no conftest.py"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PYTHONPATH", tt.env)
			args := append(tt.args, "--report-dir", filepath.Join(t.TempDir(), "r"))
			code, stdout, stderr := runMain(t, args...)
			if code != tt.wantCode {
				t.Errorf("exit: have %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, stdout, stderr)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantStderr, stderr)
			}
		})
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

const stockCrashesSuite = `import os, signal, sys

def test_one():
    pass

def test_two_crashes_on_stock():
    if "stock" in os.path.basename(sys.executable):
        os.kill(os.getpid(), signal.SIGSEGV)

def test_three():
    pass
`

// TestVerifyBaseline: --baseline runs the same suites against a second interpreter and puts
// both side by side; the baseline's crash is reported but does not fail the run.
func TestVerifyBaseline(t *testing.T) {
	t.Parallel()
	py := verifyPython(t)
	stock := filepath.Join(t.TempDir(), "python-stock")
	if err := os.Symlink(py, stock); err != nil {
		t.Fatal(err)
	}
	suites := writeSuitesWith(t, map[string]string{"test_pair.py": stockCrashesSuite})
	dir := filepath.Join(t.TempDir(), "report")
	code, stdout, stderr := runMain(t, "verify", "--python", py, "--baseline", stock, "--device", "cpu",
		"--suites-dir", suites, "--no-scaling", "--report-dir", dir)
	if code != ExitOK {
		t.Fatalf("exit %d, want 0 (only the patched run decides)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"baseline: torch ",
		"PATCHED  BASELINE  TIME",
		"test_pair.py::test_two_crashes_on_stock  pass     crash ",
		"baseline: SIGSEGV",
		"patched: 3 pass",
		"baseline: 2 pass, 1 crash",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// Both interpreters load the same torch here, which makes the comparison meaningless:
	// verify says so.
	if !strings.Contains(stderr, "loads the same torch") {
		t.Errorf("no same-torch warning:\n%s", stderr)
	}
	h, _ := os.ReadFile(filepath.Join(dir, verify.HTMLFile))
	if !strings.Contains(string(h), "<th>baseline</th>") || !strings.Contains(string(h), "loads the same torch") {
		t.Error("report.html lacks the baseline column or its warning")
	}
}

// TestVerifyForeignTorch: --tree refuses a torch that is not the tree's build (Debian's
// torch is not in a temporary tree), and --allow-foreign-torch turns that into a warning.
func TestVerifyForeignTorch(t *testing.T) {
	py := verifyPython(t)
	tree := t.TempDir()
	code, _, stderr := runMain(t, "verify", "--python", py, "--device", "cpu", "--tree", tree, "--report-dir", t.TempDir())
	if code != ExitUnsupported {
		t.Fatalf("exit %d, want %d\n%s", code, ExitUnsupported, stderr)
	}
	for _, want := range []string{"verify --tree " + tree, "loads torch from", "not the tree's build: refusing", "--allow-foreign-torch"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(tree, "results.jsonl")); err == nil {
		t.Error("a refused run wrote results")
	}

	// One trivial suite keeps this quick: what is tested is that the suites run at all.
	suites := t.TempDir()
	for name, text := range map[string]string{
		"test_one.py": "def test_one():\n    pass\n",
		"conftest.py": "def pytest_addoption(parser):\n    for o in ('--device', '--threads', '--profile'):\n        parser.addoption(o, default=None)\n",
	} {
		if err := os.WriteFile(filepath.Join(suites, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	code, _, stderr = runMain(t, "verify", "--python", py, "--device", "cpu", "--tree", tree, "--allow-foreign-torch",
		"--suites-dir", suites, "--no-scaling", "--report-dir", dir)
	if code == ExitUnsupported || !strings.Contains(stderr, "--allow-foreign-torch: running anyway") {
		t.Errorf("--allow-foreign-torch: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "results.jsonl")); err != nil {
		t.Errorf("--allow-foreign-torch ran nothing: %v", err)
	}
}
