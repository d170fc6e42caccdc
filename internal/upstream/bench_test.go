package upstream

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/gitserver"
)

// benchRepo is a PyTorch-shaped upstream served over loopback HTTPS: 20,000 files in
// PyTorch's top-level layout, the series' ten MPS files among them, tags v2.9.1 (the base)
// and v2.10.0 (which moves three of the series' files and 400 others).
type benchRepo struct {
	srv     *gitserver.Server
	url     string
	base    string
	patches string
	bin     string   // the mpspatch binary
	env     []string // for every process: isolated git, the server's certificate
	files   int
	bytes   int64
}

var (
	benchRoot string
	benchOnce sync.Once
	benchR    *benchRepo
	benchErr  error
)

const benchFiles = 20000

var benchDirs = []string{
	"aten/src/ATen/native", "aten/src/ATen/native/cpu", "aten/src/ATen/native/cuda",
	"aten/src/ATen/native/mps/operations", "aten/src/ATen/core", "c10/core", "c10/util",
	"torch/csrc/autograd", "torch/csrc/jit/passes", "torch/csrc/distributed", "torch/nn/modules",
	"torch/_inductor", "torch/_dynamo", "test", "test/inductor", "tools/autograd", "benchmarks",
	"caffe2/operators", "docs/source", "third_party/kineto/libkineto/src",
}

var benchMPS = []string{
	"aten/src/ATen/mps/MPSStream.mm", "aten/src/ATen/mps/MPSStream.h", "aten/src/ATen/mps/MPSAllocator.mm",
	"aten/src/ATen/mps/MPSProfiler.mm", "aten/src/ATen/mps/MPSDevice.mm", "aten/src/ATen/mps/MPSGuardImpl.h",
	"aten/src/ATen/mps/MPSEvent.mm", "aten/src/ATen/native/mps/OperationUtils.mm",
	"aten/src/ATen/native/mps/MetalShaderLibrary.h", "aten/src/ATen/native/mps/operations/Linear.mm",
}

// sourceText returns n lines of C++-looking text: source compresses about as well as
// this does (4-5x), which decides what a clone transfers.
func sourceText(rng *rand.Rand, n int) string {
	words := []string{"auto", "const", "Tensor", "self", "return", "if", "for", "int64_t", "at::", "std::vector",
		"TORCH_CHECK", "stream", "device", "kernel", "size", "dim", "options", "dtype", "void", "static"}
	var b strings.Builder
	for i := range n {
		indent := strings.Repeat("  ", rng.Intn(4))
		fmt.Fprintf(&b, "%s%s %s_%d(%s, %d);\n", indent, words[rng.Intn(len(words))], words[rng.Intn(len(words))], i, words[rng.Intn(len(words))], rng.Intn(1000))
	}
	return b.String()
}

// TestMain removes what the benchmarks generated (shared by all their rounds).
func TestMain(m *testing.M) {
	code := m.Run()
	if benchR != nil {
		benchR.srv.Close()
	}
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
	os.Exit(code)
}

func setupBench(b *testing.B) *benchRepo {
	benchOnce.Do(func() { benchR, benchErr = buildBench(b) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchR
}

func buildBench(b *testing.B) (*benchRepo, error) {
	start := time.Now()
	// One directory for the whole run (benchmarks re-enter setup once per b.N round),
	// removed by TestMain. It goes to the tmpfs /dev/shm where there is one (a slow or
	// busy disk would flatter check --upstream, which writes almost nothing, and makes
	// the clones take minutes), else to MPSPATCH_BENCH_DIR or the temp directory.
	dir := os.Getenv("MPSPATCH_BENCH_DIR")
	if fi, err := os.Stat("/dev/shm"); dir == "" && err == nil && fi.IsDir() {
		dir = "/dev/shm" // the default where there is one: see docs/performance.md
	}
	root, err := os.MkdirTemp(dir, "mpspatch-upstream-bench-")
	if err != nil {
		return nil, err
	}
	benchRoot = root
	rng := rand.New(rand.NewSource(1))
	base := map[string]string{}
	var total int64
	for i := range benchFiles - len(benchMPS) {
		d := benchDirs[i%len(benchDirs)]
		p := fmt.Sprintf("%s/file_%05d.cpp", d, i)
		base[p] = sourceText(rng, 40+rng.Intn(160))
		total += int64(len(base[p]))
	}
	for _, p := range benchMPS {
		base[p] = sourceText(rng, 600)
		total += int64(len(base[p]))
	}
	patched := func(p string) string {
		l := strings.Split(base[p], "\n")
		l[300] = "  std::lock_guard<std::mutex> lock(_streamMutex); // " + p
		return strings.Join(l, "\n")
	}
	v210 := map[string]string{}
	for _, p := range benchMPS[:3] {
		v210[p] = sourceText(rng, 7) + base[p] // moved: offset 7
	}
	n := 0
	for p := range base {
		if n == 400 {
			break
		}
		if !slices.Contains(benchMPS, p) {
			v210[p] = base[p] + "// changed in v2.10.0\n"
			n++
		}
	}
	bare := filepath.Join(root, "srv", "pytorch.git")
	ids, err := gitserver.BuildRepo(bare, []gitserver.Commit{
		{Message: "v2.9.1", Files: base, AnnotatedTags: []string{"v2.9.1"}},
		{Message: "v2.10.0", Files: v210, AnnotatedTags: []string{"v2.10.0"}},
	})
	if err != nil {
		return nil, err
	}
	_, pdir := makeSeriesDir(b, base, benchMPS, patched)
	// The series directory lives in b.TempDir of the first round; keep a copy for all.
	keep := filepath.Join(root, "patches")
	if out, err := exec.Command("cp", "-r", pdir, keep).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy series: %v: %s", err, out)
	}
	srv, err := gitserver.Start(filepath.Join(root, "srv"), gitserver.Options{})
	if err != nil {
		return nil, err
	}
	// MPSPATCH_BIN names a prebuilt binary (for a machine with no Go toolchain).
	bin := os.Getenv("MPSPATCH_BIN")
	if bin == "" {
		bin = filepath.Join(root, "mpspatch")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/mpspatch/mpspatch/cmd/mpspatch").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build mpspatch: %v: %s", err, out)
		}
	}
	home := filepath.Join(root, "home")
	os.MkdirAll(home, 0o755)
	env := append(gitcli.DeterministicEnv(home), srv.Env()...)
	r := &benchRepo{srv: srv, url: srv.URL + "/pytorch.git", base: ids[0], patches: keep, bin: bin, env: env,
		files: benchFiles, bytes: total}
	cfg := fmt.Sprintf("[upstream]\nurl = %q\ntag = \"v2.9.1\"\ncommit = %q\n[patches]\ndir = %q\n", r.url, r.base, keep)
	if err := os.WriteFile(filepath.Join(root, "mpspatch.toml"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	b.Logf("generated %s: %d files, %.0f MB, in %v", bare, benchFiles, float64(total)/1e6, time.Since(start).Round(time.Millisecond))
	return r, nil
}

// tempDir is a fresh directory on the benchmark's filesystem.
func (r *benchRepo) tempDir(b *testing.B) string {
	d, err := os.MkdirTemp(benchRoot, "work-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func (r *benchRepo) config() string { return filepath.Join(filepath.Dir(r.patches), "mpspatch.toml") }

// run runs a command to completion and returns its wall time (process start included).
func (r *benchRepo) run(b *testing.B, dir string, extraEnv []string, argv ...string) time.Duration {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), r.env...), extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		// check exits 3 when a patch does not apply; the bench series applies to v2.9.1.
		b.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out.String())
	}
	return d
}

// served returns the bytes the server sent since the last Reset.
func (r *benchRepo) served() int64 {
	var n int64
	for _, q := range r.srv.Requests() {
		n += q.Bytes
	}
	return n
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkCheckUpstream times `mpspatch check --upstream v2.9.1` as a whole process,
// with a cold cache (emptied before every run) and a warm one, against what answering
// the same question takes without it: `git clone --depth 1 --branch v2.9.1` of the same
// commit followed by `mpspatch check --tree`. The three are interleaved in every
// iteration. It reports the medians, the ratios (clone+check / check --upstream; targets:
// cold >= 10, warm >= 50) and the bytes each sent over the wire, and the bytes a second
// tag (v2.10.0) adds to a cache holding v2.9.1.
//
//	go test -run='^$' -bench=CheckUpstream -benchtime=5x ./internal/upstream
//	MPSPATCH_BENCH_DIR=/dev/shm go test -run='^$' -bench=CheckUpstream -benchtime=5x ./internal/upstream
func BenchmarkCheckUpstream(b *testing.B) {
	r := setupBench(b)
	work := r.tempDir(b)
	cfg := r.config()
	warmCache := filepath.Join(work, "warm-cache")
	r.run(b, work, []string{"XDG_CACHE_HOME=" + warmCache}, r.bin, "--config", cfg, "check", "--upstream", "v2.9.1")

	var cold, warm, ref, lsRemote []time.Duration
	var coldBytes, refBytes int64
	for i := 0; i < b.N; i++ {
		clone := filepath.Join(work, fmt.Sprintf("clone-%d", i))
		r.srv.Reset()
		d := r.run(b, work, nil, "git", "clone", "-q", "--depth", "1", "--branch", "v2.9.1", r.url, clone)
		refBytes = r.served()
		d += r.run(b, work, nil, r.bin, "--config", cfg, "check", "--tree", clone)
		ref = append(ref, d)
		os.RemoveAll(clone)

		coldCache := filepath.Join(work, fmt.Sprintf("cold-%d", i))
		r.srv.Reset()
		cold = append(cold, r.run(b, work, []string{"XDG_CACHE_HOME=" + coldCache}, r.bin, "--config", cfg, "check", "--upstream", "v2.9.1"))
		coldBytes = r.served()
		if i == 0 {
			// What each request of a cold run cost (docs/upstream.md quotes it).
			for _, q := range r.srv.Requests() {
				b.Logf("cold request: %s %s %s wants=%d bytes=%d", q.Method, q.Path, q.Command, len(q.Wants), q.Bytes)
			}
		}
		os.RemoveAll(coldCache)

		warm = append(warm, r.run(b, work, []string{"XDG_CACHE_HOME=" + warmCache}, r.bin, "--config", cfg, "check", "--upstream", "v2.9.1"))
		// The floor of a warm run: the one ls-remote that says what v2.9.1 names today.
		lsRemote = append(lsRemote, r.run(b, work, nil, "git", "ls-remote", r.url, "refs/tags/v2.9.1", "refs/tags/v2.9.1^{}"))
	}
	b.StopTimer()
	// What a second tag costs once the first is cached (exit 3 is expected: v2.10.0
	// moves three patches' context, which is the point of asking).
	r.srv.Reset()
	cmd := exec.Command(r.bin, "--config", cfg, "check", "--upstream", "v2.10.0")
	cmd.Env = append(append([]string(nil), r.env...), "XDG_CACHE_HOME="+warmCache)
	out, _ := cmd.CombinedOutput()
	secondBytes := r.served()
	if !strings.Contains(string(out), "offset 7") {
		b.Errorf("check --upstream v2.10.0 did not find the moved hunks:\n%s", out)
	}

	mc, mw, mr := median(cold), median(warm), median(ref)
	b.ReportMetric(float64(mr.Milliseconds()), "clone+check-ms")
	b.ReportMetric(float64(mc.Milliseconds()), "cold-ms")
	b.ReportMetric(float64(mw.Milliseconds()), "warm-ms")
	b.ReportMetric(float64(median(lsRemote).Milliseconds()), "ls-remote-ms")
	b.ReportMetric(float64(mr)/float64(mc), "cold-speedup")
	b.ReportMetric(float64(mr)/float64(mw), "warm-speedup")
	b.ReportMetric(float64(refBytes)/1e6, "clone-MB")
	b.ReportMetric(float64(coldBytes)/1e6, "cold-MB")
	b.ReportMetric(float64(secondBytes)/1e6, "2nd-tag-MB")
	b.Logf("repo: %d files, %.0f MB; clone+check %v, cold %v, warm %v; bytes: clone %d, cold %d, second tag %d",
		r.files, float64(r.bytes)/1e6, mr, mc, mw, refBytes, coldBytes, secondBytes)
}

// BenchmarkClone times `mpspatch clone` against `git clone` with the same flags from the
// same server, interleaved: the pinned commit alone (--depth 1), and --full history
// (blobless partial clone for both). It reports mpspatch/git (target <= 1.05): what
// mpspatch adds is the tag check (one ls-remote), its steps as separate git commands,
// and its log.
//
//	go test -run='^$' -bench=Clone -benchtime=5x ./internal/upstream
func BenchmarkClone(b *testing.B) {
	r := setupBench(b)
	work := r.tempDir(b)
	cfg := r.config()
	for _, mode := range []struct {
		name     string
		mpspatch []string
		gitFlags []string
	}{
		{"depth1", nil, []string{"--depth", "1"}},
		{"full-blobless", []string{"--full"}, []string{"--filter=blob:none"}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var mp, gt []time.Duration
			for i := 0; i < b.N; i++ {
				dir := filepath.Join(work, fmt.Sprintf("%s-git-%d", mode.name, i))
				args := append([]string{"git", "clone", "-q", "--single-branch", "--branch", "v2.9.1"}, mode.gitFlags...)
				gt = append(gt, r.run(b, work, nil, append(args, r.url, dir)...))
				os.RemoveAll(dir)

				dir = filepath.Join(work, fmt.Sprintf("%s-mpspatch-%d", mode.name, i))
				args = append([]string{r.bin, "--config", cfg, "--quiet", "clone", "--dir", dir}, mode.mpspatch...)
				mp = append(mp, r.run(b, work, nil, args...))
				os.RemoveAll(dir)
			}
			mm, mg := median(mp), median(gt)
			b.ReportMetric(float64(mg.Milliseconds()), "git-ms")
			b.ReportMetric(float64(mm.Milliseconds()), "mpspatch-ms")
			b.ReportMetric(float64(mm)/float64(mg), "mpspatch/git")
		})
	}
}

// BenchmarkCheckUpstreamLargeFile measures the peak memory (maximum resident set) of
// `check --upstream` when the series touches one large file, cold cache and warm: the blob
// is read from git as it streams, into a buffer of its size, and the engine's output is
// the one other copy. It reports the peak of the mpspatch process (its VmHWM, read from
// /proc while it runs: Linux only; the rusage of a child started from this process would
// count this process's own memory, which the fork copied, with 400 MB of test data in it),
// and that peak against the file's size. MPSPATCH_BENCH_LARGE_MB sets the size (default
// 400, the case issue 19 measured at 1.8 GB).
//
//	go test -run='^$' -bench=CheckUpstreamLargeFile -benchtime=1x ./internal/upstream
func BenchmarkCheckUpstreamLargeFile(b *testing.B) {
	mb := 400
	if v := os.Getenv("MPSPATCH_BENCH_LARGE_MB"); v != "" {
		if _, err := fmt.Sscan(v, &mb); err != nil || mb < 1 {
			b.Fatalf("MPSPATCH_BENCH_LARGE_MB=%q: want a number of MB", v)
		}
	}
	root := b.TempDir()
	const path = "aten/src/ATen/mps/Large.mm"
	var text strings.Builder
	for i := 0; text.Len() < mb*1000*1000; i++ {
		fmt.Fprintf(&text, "    auto value_%d = compute(tensor, stream, device, %d); // a line of a large file\n", i, i)
	}
	base := map[string]string{path: text.String()}
	text.Reset()
	ids, err := gitserver.BuildRepo(filepath.Join(root, "srv", "up.git"), []gitserver.Commit{{Message: "base", Files: base, AnnotatedTags: []string{"v1"}}})
	if err != nil {
		b.Fatal(err)
	}
	_, pdir := makeSeriesDir(b, base, []string{path}, func(p string) string {
		lines := strings.SplitAfterN(base[p], "\n", 6)
		lines[4] = "    PATCHED LINE\n"
		return strings.Join(lines, "")
	})
	size := len(base[path])
	base = nil
	srv, err := gitserver.Start(filepath.Join(root, "srv"), gitserver.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	bin := os.Getenv("MPSPATCH_BIN")
	if bin == "" {
		bin = filepath.Join(root, "mpspatch")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/mpspatch/mpspatch/cmd/mpspatch").CombinedOutput(); err != nil {
			b.Fatalf("build mpspatch: %v: %s", err, out)
		}
	}
	cfg := filepath.Join(root, "mpspatch.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[upstream]\nurl = %q\ntag = \"v1\"\ncommit = %q\n", srv.URL+"/up.git", ids[0])), 0o644); err != nil {
		b.Fatal(err)
	}
	home := filepath.Join(root, "home")
	os.MkdirAll(home, 0o755)
	env := append(gitcli.DeterministicEnv(home), srv.Env()...)
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("reads the peak resident set from /proc/PID/status: Linux only")
	}
	// peak returns the peak resident set of the mpspatch process, in MB.
	peak := func(cache string) float64 {
		cmd := exec.Command(bin, "--config", cfg, "check", "--upstream", "v1", "--patches", pdir)
		cmd.Env = append(append([]string(nil), env...), "XDG_CACHE_HOME="+cache)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		// VmHWM only grows; the last reading before the exit is the process's peak, but
		// for what it adds in the moments between that reading and its exit.
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		done := make(chan struct{})
		var hwm float64
		go func() {
			defer close(done)
			for {
				data, err := os.ReadFile(status)
				if err != nil {
					return
				}
				_, rest, ok := strings.Cut(string(data), "VmHWM:")
				if !ok {
					return // a zombie: its memory is gone
				}
				var kb float64
				fmt.Sscan(rest, &kb)
				hwm = max(hwm, kb*1024/1e6)
				time.Sleep(2 * time.Millisecond)
			}
		}()
		err := cmd.Wait()
		<-done
		if err != nil || !strings.Contains(out.String(), "exact") {
			b.Fatalf("check --upstream: %v\n%s", err, out.String())
		}
		return hwm
	}
	var cold, warm float64
	for i := 0; i < b.N; i++ {
		cache := filepath.Join(root, fmt.Sprintf("cache-%d", i))
		cold = max(cold, peak(cache))
		warm = max(warm, peak(cache))
		os.RemoveAll(cache)
	}
	fileMB := float64(size) / 1e6
	b.ReportMetric(fileMB, "file-MB")
	b.ReportMetric(cold, "cold-peak-MB")
	b.ReportMetric(warm, "warm-peak-MB")
	b.ReportMetric(max(cold, warm)/fileMB, "peak/file")
}
