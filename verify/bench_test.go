package verify

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/run"
	"github.com/mpspatch/mpspatch/internal/testenv"
)

// benchSuite writes a suite file of n trivial tests (one of them crashing when crash is
// set) next to the real conftest.
func benchSuite(b *testing.B, n int, crash bool) string {
	b.Helper()
	dir := b.TempDir()
	if err := WriteSuites(dir); err != nil {
		b.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "test_*.py"))
	for _, p := range old {
		os.Remove(p)
	}
	var src strings.Builder
	src.WriteString("import os, signal\n")
	for i := 0; i < n; i++ {
		src.WriteString("def test_" + strconv.Itoa(i) + "():\n")
		if crash && i == n/2 {
			src.WriteString("    os.kill(os.getpid(), signal.SIGSEGV)\n")
		} else {
			src.WriteString("    pass\n")
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "test_bench.py"), []byte(src.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

func timeRun(b *testing.B, py, dir string) time.Duration {
	b.Helper()
	start := time.Now()
	err := runSuites(context.Background(), suiteOptions{
		Target: TargetPatched, Env: Env{Target: TargetPatched, Interpreter: py, Device: "cpu"},
		Profile: "quick", Files: []string{"test_bench.py"}, Timeout: time.Minute,
		SuitesDir: dir, LogDir: filepath.Join(b.TempDir(), "logs"),
	}, &Report{})
	if err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkRunOverhead compares mpspatch's runner with plain pytest on the same file of 50
// trivial tests (torch is imported by the conftest either way), and measures what a crash in
// the middle costs: one more interpreter start, torch import and collection. It reports
// ratios, not times.
func BenchmarkRunOverhead(b *testing.B) {
	py := testenv.Python(b)
	clean := benchSuite(b, 50, false)
	crashing := benchSuite(b, 50, true)
	var plain, runner, crashed time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		// Plain pytest, the same arguments, no events file: the baseline.
		if _, err := run.Run(context.Background(), run.Cmd{
			Argv: []string{py, "-m", "pytest", "test_bench.py", "--device", "cpu", "--profile", "quick",
				"-p", "no:cacheprovider", "-q", "-s"},
			Dir: clean,
		}); err != nil {
			b.Fatal(err)
		}
		plain += time.Since(start)
		runner += timeRun(b, py, clean)
		crashed += timeRun(b, py, crashing)
	}
	b.ReportMetric(float64(runner)/float64(plain), "runner/pytest")
	b.ReportMetric(float64(crashed)/float64(runner), "one-crash/clean")
}
