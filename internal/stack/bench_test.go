package stack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/synthtree"
)

// benchTree builds, once per benchmark run, the synthetic PyTorch-shaped tree of
// internal/synthtree (20,000 files in PyTorch's directory layout, ten ~2,000-line MPS
// files) with its ten-patch series applied as commits by `mpspatch apply --commit` on
// branch series, tagged v1 below it, and v2: five of the MPS files gain two lines at
// the top (their patches land at an offset) and ten other files change.
func benchTree(b *testing.B, e *env, nfiles int) string {
	b.Helper()
	benchOnce.Do(func() {
		// MPSPATCH_BENCH_DIR puts the trees elsewhere (a tmpfs such as /dev/shm makes
		// the one-off setup of 40,000 files fast on a slow disk).
		benchDir, benchErr = os.MkdirTemp(os.Getenv("MPSPATCH_BENCH_DIR"), "mpspatch-stack-bench-")
		if benchErr == nil {
			buildBenchTree(b, e, filepath.Join(benchDir, "up"), nfiles)
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return filepath.Join(benchDir, "up")
}

// The upstream is built once per `go test` run and shared by the benchmarks (it takes
// longer than the timed runs); TestMain removes it.
var (
	benchOnce sync.Once
	benchDir  string
	benchErr  error
	benchBin  string
)

func buildBenchTree(b *testing.B, e *env, dir string, nfiles int) {
	// 3 KB a file on average: the file count is what rebase's git work grows with
	// (index entries to read and stat), not the bytes.
	spec := synthtree.Spec{Files: nfiles, Bytes: int64(nfiles) * 3 << 10}
	tree, err := synthtree.Write(dir, spec)
	if err != nil {
		b.Fatal(err)
	}
	pdir := filepath.Join(filepath.Dir(dir), "patches")
	if err := synthtree.WriteSeries(pdir, spec); err != nil {
		b.Fatal(err)
	}
	e.git(dir, "init", "-q")
	e.git(dir, "add", "-A")
	e.git(dir, "commit", "-q", "-m", "base")
	e.git(dir, "tag", "v1")
	cmd := exec.Command(buildMpspatch(b), "apply", "-q", "--tree", ".", "--patches", pdir, "--commit", "--branch", "series")
	cmd.Dir, cmd.Env = dir, e.vars
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("apply --commit: %v\n%s", err, out)
	}
	e.git(dir, "checkout", "-q", "main")
	for _, rel := range tree.MPS[:5] {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		write(b, p, "// moved\n// down\n"+read(b, p))
	}
	others := strings.Split(e.git(dir, "ls-files", "aten/src/ATen/native/cpu"), "\n")
	for _, rel := range others[:10] {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		write(b, p, read(b, p)+"// upstream change\n")
	}
	e.git(dir, "commit", "-q", "-a", "-m", "upstream v2")
	e.git(dir, "tag", "v2")
	e.git(dir, "checkout", "-q", "series")
}

// buildMpspatch builds the command once per benchmark, so each timed run is the whole
// process a user starts.
func buildMpspatch(b *testing.B) string {
	b.Helper()
	if benchBin != "" {
		return benchBin
	}
	dir, err := os.MkdirTemp("", "mpspatch-stack-bin-")
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "mpspatch")
	benchBin = bin
	cmd := exec.Command("go", "build", "-o", bin, "github.com/mpspatch/mpspatch/cmd/mpspatch")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func (e *env) timed(b *testing.B, dir string, argv ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, e.vars
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return d
}

// BenchmarkRebase times `mpspatch rebase --onto v2` of a ten-patch series on a
// 20,000-file repository against `git rebase --onto v2 v1` of the same commits, each on
// its own copy, interleaved in one loop; both start from the branch checked out at its
// old head (reset outside the timing). It reports each one's mean and mpspatch/git
// (target <= 1.5).
//
//	go test -run='^$' -bench=Rebase -benchtime=5x ./internal/stack
func BenchmarkRebase(b *testing.B) {
	e := newEnv(b, false)
	bin := buildMpspatch(b)
	up := benchTree(b, e, 20000)
	// mpspatch works in the upstream repository itself, git in a clone of it: two trees
	// of 20,000 files are the one-off cost, not three.
	mine, theirs := up, filepath.Join(filepath.Dir(up), "theirs")
	if _, err := os.Stat(theirs); err != nil {
		e.git(filepath.Dir(theirs), "clone", "-q", "-b", "series", up, theirs)
	}
	orig := e.git(mine, "rev-parse", "HEAD")
	var tm, tg time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, d := range []string{mine, theirs} {
			e.git(d, "checkout", "-q", "-f", "-B", "series", orig)
		}
		b.StartTimer()
		tm += e.timed(b, mine, bin, "rebase", "-q", "--tree", ".", "--base", "v1", "--onto", "v2", "--no-export")
		tg += e.timed(b, theirs, "git", "rebase", "-q", "--onto", "v2", "v1")
	}
	b.StopTimer()
	if a, c := e.git(mine, "rev-parse", "HEAD^{tree}"), e.git(theirs, "rev-parse", "HEAD^{tree}"); a != c {
		b.Fatalf("mpspatch and git rebased to different trees: %s, %s", a, c)
	}
	e.git(mine, "checkout", "-q", "-f", "-B", "series", orig)
	b.ReportMetric(float64(tm.Milliseconds())/float64(b.N), "mpspatch-ms/op")
	b.ReportMetric(float64(tg.Milliseconds())/float64(b.N), "git-ms/op")
	b.ReportMetric(float64(tm)/float64(tg), "mpspatch/git")
}

// BenchmarkExport times `mpspatch export` of the ten commits against
// `git format-patch` of the same range with the same normalising flags, interleaved;
// it reports mpspatch/git (target <= 1.5).
//
//	go test -run='^$' -bench=Export -benchtime=5x ./internal/stack
func BenchmarkExport(b *testing.B) {
	e := newEnv(b, false)
	bin := buildMpspatch(b)
	up := benchTree(b, e, 20000)
	out := b.TempDir()
	var tm, tg time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(out, fmt.Sprint(i))
		tm += e.timed(b, up, bin, "export", "-q", "--tree", ".", "--base", "v1", "--patches", dir+"-m")
		tg += e.timed(b, up, "git", "format-patch", "-q", "--zero-commit", "--full-index", "--no-signature", "--no-numbered", "-o", dir+"-g", "v1..series")
	}
	b.StopTimer()
	// The second line: Export in this process, without mpspatch's start-up.
	var ti time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := Export(context.Background(), e.g, ExportOptions{Tree: up, Base: "v1", Head: "series", Dir: filepath.Join(out, fmt.Sprint(i)+"-i")}); err != nil {
			b.Fatal(err)
		}
		ti += time.Since(start)
	}
	b.ReportMetric(float64(tm.Microseconds())/1000/float64(b.N), "mpspatch-ms/op")
	b.ReportMetric(float64(tg.Microseconds())/1000/float64(b.N), "git-ms/op")
	b.ReportMetric(float64(tm)/float64(tg), "mpspatch/git")
	b.ReportMetric(float64(ti)/float64(tg), "in-process/git")
	_ = os.RemoveAll(out)
}

// BenchmarkExportGrowth: export of 10, 100 and 300 commits (a 200-file repository: the
// tree size does not enter export) against git format-patch of the same range with the
// same flags, so the fixed cost (mpspatch's start-up, two extra git processes started
// alongside format-patch) shows apart from the per-patch cost.
//
//	go test -run='^$' -bench=ExportGrowth -benchtime=5x ./internal/stack
func BenchmarkExportGrowth(b *testing.B) {
	e := newEnv(b, false)
	bin := buildMpspatch(b)
	dir := filepath.Join(b.TempDir(), "up")
	for i := 0; i < 200; i++ {
		write(b, filepath.Join(dir, fmt.Sprintf("d%02d/f%03d.cpp", i%20, i)), lines("x", 40))
	}
	e.git(dir, "init", "-q")
	e.git(dir, "add", "-A")
	e.git(dir, "commit", "-q", "-m", "base")
	e.git(dir, "tag", "v1")
	made := 0
	for _, n := range []int{10, 100, 300} {
		for ; made < n; made++ {
			p := filepath.Join(dir, fmt.Sprintf("d%02d/f%03d.cpp", made%20, made%200))
			write(b, p, read(b, p)+fmt.Sprintf("added by patch %d\n", made))
			e.git(dir, "commit", "-q", "-a", "-m", fmt.Sprintf("patch %d", made))
		}
		e.git(dir, "tag", fmt.Sprintf("n%d", n))
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			out := b.TempDir()
			var tm, tg time.Duration
			for i := 0; i < b.N; i++ {
				d := filepath.Join(out, fmt.Sprint(i))
				tm += e.timed(b, dir, bin, "export", "-q", "--tree", ".", "--base", "v1", "--head", fmt.Sprintf("n%d", n), "--patches", d+"-m")
				tg += e.timed(b, dir, "git", "format-patch", "-q", "--zero-commit", "--full-index", "--no-signature", "--no-numbered", "-o", d+"-g", fmt.Sprintf("v1..n%d", n))
			}
			b.ReportMetric(float64(tm.Microseconds())/1000/float64(b.N), "mpspatch-ms/op")
			b.ReportMetric(float64(tg.Microseconds())/1000/float64(b.N), "git-ms/op")
			b.ReportMetric(float64(tm)/float64(tg), "mpspatch/git")
		})
	}
}

// BenchmarkRebaseOwnHistory times `mpspatch rebase` against `git rebase` on a small
// repository with real history: this one (a few hundred files, like fzf's), moving ten
// consecutive commits onto an older commit where git rebase goes through. On a small
// tree the fixed cost per patch decides the ratio, so it also counts the git processes
// each tool starts (GIT_TRACE), per patch.
//
//	go test -run='^$' -bench=RebaseOwnHistory -benchtime=10x ./internal/stack
func BenchmarkRebaseOwnHistory(b *testing.B) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		b.Fatalf("needs this repository's history: %v", err)
	}
	top := strings.TrimSpace(string(out))
	e := newEnv(b, false)
	bin := buildMpspatch(b)
	mine, theirs := filepath.Join(b.TempDir(), "mine"), filepath.Join(b.TempDir(), "theirs")
	for _, d := range []string{mine, theirs} {
		e.git(filepath.Dir(d), "clone", "-q", top, d)
	}
	list := strings.Fields(e.git(mine, "rev-list", "--first-parent", "--no-merges", "--reverse", "HEAD"))
	const n = 10
	var base, head, onto string
	for i := len(list) - n - 1; i > 2 && head == ""; i-- {
		if e.git(mine, "rev-list", "--count", "--merges", list[i]+".."+list[i+n]) != "0" {
			continue
		}
		e.git(theirs, "checkout", "-q", "-f", "-B", "series", list[i+n])
		cmd := exec.Command("git", "rebase", "-q", "--onto", list[i-1], list[i])
		cmd.Dir, cmd.Env = theirs, e.vars
		if cmd.Run() == nil && e.git(theirs, "rev-list", "--count", list[i-1]+"..HEAD") == fmt.Sprint(n) {
			base, head, onto = list[i], list[i+n], list[i-1]
		} else {
			exec.Command("git", "-C", theirs, "rebase", "--abort").Run()
		}
	}
	if head == "" {
		b.Fatal("no ten-commit run of this history rebases cleanly onto its base's parent")
	}
	traced := func(dir string, argv ...string) (time.Duration, int) { return e.traced(b, dir, argv...) }
	var tm, tg time.Duration
	var pm, pg int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, d := range []string{mine, theirs} {
			e.git(d, "checkout", "-q", "-f", "-B", "series", head)
		}
		b.StartTimer()
		d, p := traced(mine, bin, "rebase", "-q", "--tree", ".", "--base", base, "--onto", onto, "--no-export")
		tm, pm = tm+d, p
		d, p = traced(theirs, "git", "rebase", "-q", "--onto", onto, base)
		tg, pg = tg+d, p
	}
	b.StopTimer()
	if a, c := e.git(mine, "rev-parse", "HEAD^{tree}"), e.git(theirs, "rev-parse", "HEAD^{tree}"); a != c {
		b.Fatalf("mpspatch and git rebased to different trees: %s, %s", a, c)
	}
	b.ReportMetric(float64(tm.Microseconds())/1000/float64(b.N), "mpspatch-ms/op")
	b.ReportMetric(float64(tg.Microseconds())/1000/float64(b.N), "git-ms/op")
	b.ReportMetric(float64(tm)/float64(tg), "mpspatch/git")
	b.ReportMetric(float64(pm)/n, "mpspatch-git-procs/patch")
	b.ReportMetric(float64(pg)/n, "git-procs/patch")
}

// traced runs argv in dir and returns how long it took and how many git processes it
// started (GIT_TRACE).
func (e *env) traced(b *testing.B, dir string, argv ...string) (time.Duration, int) {
	b.Helper()
	trace := filepath.Join(b.TempDir(), "trace")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, append(append([]string{}, e.vars...), "GIT_TRACE="+trace)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	d := time.Since(start)
	data, _ := os.ReadFile(trace)
	return d, strings.Count(string(data), "trace: built-in: git ")
}

// BenchmarkRebaseGrowth: rebase of 10, 100 and 300 patches that all apply cleanly (a
// 200-file repository, each patch changing one line of one file) onto an upstream commit
// that changed another file, against git rebase of the same commits, interleaved, each on
// its own copy; it also counts the git processes each tool starts, per patch. The fixed
// cost (mpspatch's start-up, reading the series) shows apart from the per-patch cost.
//
//	go test -run='^$' -bench=RebaseGrowth -benchtime=3x ./internal/stack
func BenchmarkRebaseGrowth(b *testing.B) {
	e := newEnv(b, false)
	bin := buildMpspatch(b)
	for _, n := range []int{10, 100, 300} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "up")
			for i := 0; i < 201; i++ {
				write(b, filepath.Join(dir, fmt.Sprintf("d%02d/f%03d.cpp", i%20, i)), lines(fmt.Sprint("f", i), 40))
			}
			e.git(dir, "init", "-q")
			e.git(dir, "add", "-A")
			e.git(dir, "commit", "-q", "-m", "base")
			e.git(dir, "tag", "v1")
			e.git(dir, "checkout", "-q", "-b", "series")
			for i := 0; i < n; i++ {
				p := filepath.Join(dir, fmt.Sprintf("d%02d/f%03d.cpp", i%200%20, i%200))
				write(b, p, replaceLine(read(b, p), fmt.Sprintf("f%d line %d", i%200, 5+i/200*10), fmt.Sprintf("changed by patch %d", i)))
				e.git(dir, "commit", "-q", "-a", "-m", fmt.Sprintf("patch %d", i))
			}
			e.git(dir, "checkout", "-q", "main")
			p := filepath.Join(dir, "d00/f200.cpp")
			write(b, p, read(b, p)+"upstream\n")
			e.git(dir, "commit", "-q", "-a", "-m", "upstream")
			e.git(dir, "tag", "v2")
			e.git(dir, "checkout", "-q", "series")
			head := e.git(dir, "rev-parse", "HEAD")
			theirs := filepath.Join(b.TempDir(), "theirs")
			e.git(filepath.Dir(theirs), "clone", "-q", "-b", "series", dir, theirs)
			var tm, tg time.Duration
			var pm, pg int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for _, d := range []string{dir, theirs} {
					e.git(d, "checkout", "-q", "-f", "-B", "series", head)
				}
				b.StartTimer()
				d, c := e.traced(b, dir, bin, "rebase", "-q", "--tree", ".", "--base", "v1", "--onto", "v2", "--no-export")
				tm, pm = tm+d, c
				d, c = e.traced(b, theirs, "git", "rebase", "-q", "--onto", "v2", "v1")
				tg, pg = tg+d, c
			}
			b.StopTimer()
			if a, c := e.git(dir, "rev-parse", "HEAD^{tree}"), e.git(theirs, "rev-parse", "HEAD^{tree}"); a != c {
				b.Fatalf("mpspatch and git rebased to different trees: %s, %s", a, c)
			}
			b.ReportMetric(float64(tm.Microseconds())/1000/float64(b.N), "mpspatch-ms/op")
			b.ReportMetric(float64(tg.Microseconds())/1000/float64(b.N), "git-ms/op")
			b.ReportMetric(float64(tm)/float64(tg), "mpspatch/git")
			b.ReportMetric(float64(pm)/float64(n), "mpspatch-git-procs/patch")
			b.ReportMetric(float64(pg)/float64(n), "git-procs/patch")
		})
	}
}
