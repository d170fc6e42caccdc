package builder

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/run"
)

// mpspatchBinary builds cmd/mpspatch once per benchmark: the benchmarks time the command
// as users run it, a whole process, start-up included.
func mpspatchBinary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "mpspatch")
	if _, err := run.Output(context.Background(), run.Cmd{Argv: []string{"go", "build", "-o", bin, "github.com/mpspatch/mpspatch/cmd/mpspatch"}}); err != nil {
		b.Fatalf("build mpspatch: %v", err)
	}
	return bin
}

func writeConfig(b *testing.B, path, text string) {
	b.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
}

// timed runs argv and returns its wall time; a failure ends the benchmark.
func timed(b *testing.B, dir string, env []string, argv ...string) time.Duration {
	b.Helper()
	start := time.Now()
	if _, err := run.Output(context.Background(), run.Cmd{Argv: argv, Dir: dir, Env: env}); err != nil {
		b.Fatalf("%s: %v", argv, err)
	}
	return time.Since(start)
}

// BenchmarkBuildUpToDate times `mpspatch build` on an up-to-date stand-in tree (which
// reads the config, the series and the stamp, probes the interpreter and imports torch
// from outside the tree) against pip's own no-op on the same tree,
// `python -m pip install -e . --no-build-isolation`, interleaved. x-pip is pip's time over
// mpspatch's (target: at least 5).
func BenchmarkBuildUpToDate(b *testing.B) {
	needTools(b, "cmake", "ninja", "cc")
	bin := mpspatchBinary(b)
	python, env := realVenv(b)
	tree := copyTree(b)
	cfg := filepath.Join(b.TempDir(), "mpspatch.toml")
	writeConfig(b, cfg, fmt.Sprintf("[build]\npython = %q\n[build.cache]\ntool = \"none\"\n", python))
	mp := []string{bin, "--config", cfg, "build", "--tree", tree, "--quiet"}
	timed(b, tree, env, mp...) // the real build
	pip := []string{python, "-m", "pip", "install", "-e", ".", "--no-build-isolation", "-q"}
	var tm, tp time.Duration
	b.ResetTimer()
	for range b.N {
		tm += timed(b, tree, env, mp...)
		tp += timed(b, tree, env, pip...)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(tm.Milliseconds())/n, "mpspatch-ms/op")
	b.ReportMetric(float64(tp.Milliseconds())/n, "pip-ms/op")
	b.ReportMetric(float64(tp)/float64(tm), "x-pip")
}

// benchSources are generated C files heavy enough (a few hundred ms each to compile at
// -O2) that compiling, not pip and CMake, is most of a clean build, as in PyTorch.
func benchSources(b *testing.B, tree string, n int) {
	b.Helper()
	var cml string
	for i := range n {
		src := fmt.Sprintf("#define R(x) x x x x\n#define F(k) int f%d_##k(int v) { int s = v; for (int i = 0; i < v; i++) { s = s * 31 + i %% (k + 1); } return s; }\n", i)
		var body string
		for k := range 50 {
			body += fmt.Sprintf("F(%d)\n", k)
		}
		if err := os.WriteFile(filepath.Join(tree, "src", fmt.Sprintf("heavy%d.c", i)), []byte(src+body), 0o644); err != nil {
			b.Fatal(err)
		}
		cml += fmt.Sprintf(" src/heavy%d.c", i)
	}
	f, err := os.OpenFile(filepath.Join(tree, "CMakeLists.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(f, "add_library(heavy STATIC%s)\ntarget_compile_options(heavy PRIVATE -O2)\n", cml)
	f.Close()
}

// BenchmarkBuildSharedCache times a clean `mpspatch build` with ccache and an empty
// remote storage (cold: every object compiled and sent to Redis) against a clean build
// of a second checkout, elsewhere, with an empty local cache, served from that Redis
// (warm). Each iteration uses a fresh Redis database. x-cold is cold over warm.
func BenchmarkBuildSharedCache(b *testing.B) {
	needTools(b, "cmake", "ninja", "cc", "ccache", "redis-server")
	bin := mpspatchBinary(b)
	python, env := realVenv(b)
	const password = "mpspatch-bench-pw"
	port := startRedis(b, password)
	env = append(env, "MPSPATCH_BENCH_REDIS_PW="+password)
	var cold, warm time.Duration
	db := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		db = (db + 1) % 16
		cfg := filepath.Join(b.TempDir(), "mpspatch.toml")
		writeConfig(b, cfg, fmt.Sprintf("[build]\npython = %q\njobs = %d\n[build.cache]\ntool = \"ccache\"\nremote = \"redis://127.0.0.1:%d/%d\"\npassword_env = \"MPSPATCH_BENCH_REDIS_PW\"\n",
			python, runtime.NumCPU(), port, db))
		var trees [2]string
		for i := range trees {
			trees[i] = copyTree(b)
			benchSources(b, trees[i], 3)
		}
		b.StartTimer()
		for i, tree := range trees {
			// An empty local cache for each: what a fresh machine or CI runner has.
			e := append(env, "CCACHE_DIR="+filepath.Join(b.TempDir(), "ccache"))
			d := timed(b, tree, e, bin, "--config", cfg, "build", "--tree", tree, "--quiet")
			if i == 0 {
				cold += d
			} else {
				warm += d
			}
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(cold.Milliseconds())/n, "cold-ms/op")
	b.ReportMetric(float64(warm.Milliseconds())/n, "warm-ms/op")
	b.ReportMetric(float64(cold)/float64(warm), "x-cold")
}
