package series

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkApplyUnapply compares one apply+unapply cycle of a ten-patch series by
// mpspatch's engine and by `git apply` / `git apply -R`, on the same plain directory
// (no .git: the engine never needs one, and git apply works without one too), for a
// 200-file and a 20,000-file (~300 MB) PyTorch-shaped tree.
//
// Each sub-benchmark reports the median wall time of a cycle (median-ns/cycle); the
// summary line gives mpspatch/git (target <= 1.0) and mpspatch 20k/200 (target <= 1.2:
// the engine must not walk the tree). The mpspatch cycle includes loading the series
// from disk and opening the tree, since git apply parses its patch files every time.
// Tree generation is excluded from the timings and done once per run.
//
//	go test -run='^$' -bench=ApplyUnapply -benchtime=5x ./internal/series
//	MPSPATCH_BENCH_DIR=/dev/shm go test -run='^$' -bench=ApplyUnapply ./internal/series
func BenchmarkApplyUnapply(b *testing.B) {
	base, pdir := synthSeries(b)
	// MPSPATCH_BENCH_DIR puts the trees on another filesystem (a tmpfs such as /dev/shm
	// shows the cost without fsync); by default they go to the test's temp directory.
	work := b.TempDir()
	if d := os.Getenv("MPSPATCH_BENCH_DIR"); d != "" {
		var err error
		if work, err = os.MkdirTemp(d, "mpspatch-bench-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(work) })
	}
	sizes := []struct {
		name  string
		files int
		bytes int64
	}{
		{"200", 200, 200 * 15 << 10},
		{"20k", 20000, 300 << 20},
	}
	var mu sync.Mutex
	trees := map[string]string{}
	tree := func(b *testing.B, i int) string {
		mu.Lock()
		defer mu.Unlock()
		sz := sizes[i]
		if dir, ok := trees[sz.name]; ok {
			return dir
		}
		start := time.Now()
		dir := filepath.Join(work, "tree-"+sz.name)
		st := makeSynthTree(b, dir, sz.files, sz.bytes, base)
		gitApply(b, dir, append([]string{"--check"}, seriesPaths(b, pdir, false)...)...)
		// Write the generated tree out now: on ext4 the engine's first fsync would
		// otherwise wait for hundreds of megabytes of someone else's dirty pages.
		syscall.Sync()
		b.Logf("generated %s: %d files, %.0f MB in %v", dir, st.files, float64(st.bytes)/1e6, time.Since(start).Round(time.Millisecond))
		trees[sz.name] = dir
		return dir
	}
	forward, backward := seriesPaths(b, pdir, false), seriesPaths(b, pdir, true)

	medians := map[string]time.Duration{}
	for i, sz := range sizes {
		b.Run("git-"+sz.name, func(b *testing.B) {
			dir := tree(b, i)
			// No peak RSS here: Go starts children with vfork, and Linux carries the parent's
			// high-water mark into the child's ru_maxrss, so ProcessState would report this
			// test binary's memory as git's. cmd/mpspatch's BenchmarkCommandApplyMemory
			// measures both commands with /usr/bin/time instead.
			medians[b.Name()] = cycles(b, func() {
				gitApply(b, dir, forward...)
				gitApply(b, dir, append([]string{"-R"}, backward...)...)
			})
		})
		b.Run("mpspatch-"+sz.name, func(b *testing.B) {
			dir := tree(b, i)
			medians[b.Name()] = cycles(b, func() {
				s, err := Load(os.DirFS(pdir), ".", pdir)
				if err != nil {
					b.Fatal(err)
				}
				root, err := os.OpenRoot(dir)
				if err != nil {
					b.Fatal(err)
				}
				defer root.Close()
				for _, op := range []func(*os.Root, *Series, Options) (*Result, error){Apply, Unapply} {
					res, err := op(root, s, Options{})
					if err != nil {
						b.Fatal(err)
					}
					if res.Noop {
						b.Fatal("the tree was not at the expected state: the previous cycle left it changed")
					}
				}
			})
		})
	}

	name := func(sub string) time.Duration { return medians[b.Name()+"/"+sub] }
	var summary []string
	if m, g := name("mpspatch-20k"), name("git-20k"); m > 0 && g > 0 {
		summary = append(summary, fmt.Sprintf("mpspatch/git 20k = %.2f (target <= 1.0)", float64(m)/float64(g)))
	}
	if m, g := name("mpspatch-200"), name("git-200"); m > 0 && g > 0 {
		summary = append(summary, fmt.Sprintf("mpspatch/git 200 = %.2f", float64(m)/float64(g)))
	}
	if big, small := name("mpspatch-20k"), name("mpspatch-200"); big > 0 && small > 0 {
		summary = append(summary, fmt.Sprintf("mpspatch 20k/200 = %.2f (target <= 1.2)", float64(big)/float64(small)))
	}
	if big, small := name("git-20k"), name("git-200"); big > 0 && small > 0 {
		summary = append(summary, fmt.Sprintf("git 20k/200 = %.2f", float64(big)/float64(small)))
	}
	// A parent benchmark's b.Log is not printed once it has sub-benchmarks: print the
	// ratios as one line of their own (benchstat skips lines it does not know).
	if len(summary) > 0 {
		fmt.Printf("%s: %s\n", b.Name(), strings.Join(summary, "; "))
	}
}

// cycles runs one apply+unapply cycle b.N times, timing each, and reports and returns
// the median: a stray slow cycle (a page-cache flush, another process) does not move it.
func cycles(b *testing.B, cycle func()) time.Duration {
	b.ReportAllocs()
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		cycle()
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	med := times[len(times)/2]
	if len(times)%2 == 0 {
		med = (times[len(times)/2-1] + times[len(times)/2]) / 2
	}
	b.ReportMetric(float64(med.Nanoseconds()), "median-ns/cycle")
	return med
}
