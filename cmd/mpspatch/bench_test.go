package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/synthtree"
)

// The benchmarks here time what users run: the mpspatch command as a whole process,
// start-up included, built as `make build` builds it, against the git command that answers
// the same question on the same tree, interleaved (A, B, A, B ...) so that both see the
// same machine. Each reports medians and the ratio mpspatch/reference; the in-process
// engine figures are in internal/series's own benchmark. Run them with `make bench`.

// pairsPerIter is how many interleaved A/B pairs one benchmark iteration times: with
// make bench's -benchtime=5x that is 50 pairs per figure.
const pairsPerIter = 10

// buildMpspatch builds the command once per benchmark run, with make build's flags.
func buildMpspatch(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "mpspatch")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/mpspatch/mpspatch/cmd/mpspatch")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("build mpspatch: %v\n%s", err, out)
	}
	return bin
}

// proc is one process run's cost.
type proc struct {
	wall, cpu time.Duration
	rssKiB    int64
}

// benchEnv isolates both commands from the machine's configuration: a private HOME (for
// mpspatch's config directory) and no git config, and keeps git from finding a repository
// above the tree.
func benchEnv(b *testing.B, dir string) []string {
	home := b.TempDir()
	return append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(dir), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "NO_COLOR=1")
}

// timeRun runs argv in dir and returns its wall and CPU time; a failure (other than an
// expected exit code) stops the benchmark.
func timeRun(b *testing.B, env []string, dir string, wantExit int, argv ...string) proc {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if code := cmd.ProcessState.ExitCode(); code != wantExit {
		b.Fatalf("%s: exit %d (%v), want %d\n%s", strings.Join(argv, " "), code, err, wantExit, out.String())
	}
	return proc{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
}

// peakRSS runs argv under /usr/bin/time and returns the process's own peak RSS in KiB.
// (Go's ProcessState rusage is not used for this: Go starts children with vfork, and
// Linux carries the parent's high-water mark across exec into the child's ru_maxrss.)
func peakRSS(b *testing.B, env []string, dir string, argv ...string) int64 {
	b.Helper()
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		b.Logf("no /usr/bin/time (Debian package time): peak RSS not measured")
		return 0
	}
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", "MAXRSS %M"}, argv...)...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	i := bytes.LastIndex(out, []byte("MAXRSS "))
	if i < 0 {
		b.Fatalf("no MAXRSS in %s", out)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out[i+7:])), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// seriesArgs lists the patch files in series order, reversed for git apply -R.
func seriesArgs(b *testing.B, pdir string, reverse bool) []string {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(pdir, "series"))
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, l := range strings.Fields(string(data)) {
		out = append(out, filepath.Join(pdir, l))
	}
	if reverse {
		slices.Reverse(out)
	}
	return out
}

// synth writes a tree and its series under a benchmark temp directory.
func synth(b *testing.B, spec synthtree.Spec) (dir, pdir string) {
	b.Helper()
	work := b.TempDir()
	dir, pdir = filepath.Join(work, "tree"), filepath.Join(work, "patches")
	if _, err := synthtree.Write(dir, spec); err != nil {
		b.Fatal(err)
	}
	if err := synthtree.WriteSeries(pdir, spec); err != nil {
		b.Fatal(err)
	}
	return dir, pdir
}

// BenchmarkCommandApplyUnapply: `mpspatch apply` + `mpspatch unapply` against `git apply` +
// `git apply -R` of the same ten patches on a 20,000-file tree.
func BenchmarkCommandApplyUnapply(b *testing.B) {
	bin := buildMpspatch(b)
	dir, pdir := synth(b, synthtree.Spec{Files: 20000, Bytes: 120 << 20, MPS: 10, Patches: 10})
	env := benchEnv(b, dir)
	fwd, rev := seriesArgs(b, pdir, false), seriesArgs(b, pdir, true)
	var ours, git, oursCPU, gitCPU []time.Duration
	for b.Loop() {
		for range pairsPerIter {
			a := timeRun(b, env, dir, 0, bin, "apply", "--tree", dir, "--patches", pdir)
			u := timeRun(b, env, dir, 0, bin, "unapply", "--tree", dir, "--patches", pdir)
			ga := timeRun(b, env, dir, 0, append([]string{"git", "apply"}, fwd...)...)
			gr := timeRun(b, env, dir, 0, append([]string{"git", "apply", "-R"}, rev...)...)
			ours, oursCPU = append(ours, a.wall+u.wall), append(oursCPU, a.cpu+u.cpu)
			git, gitCPU = append(git, ga.wall+gr.wall), append(gitCPU, ga.cpu+gr.cpu)
		}
	}
	b.ReportMetric(ms(median(ours)), "mpspatch-ms")
	b.ReportMetric(ms(median(git)), "git-ms")
	b.ReportMetric(float64(median(ours))/float64(median(git)), "mpspatch/git")
	b.ReportMetric(float64(median(oursCPU))/float64(median(gitCPU)), "cpu-mpspatch/git")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkCommandStatus: `mpspatch status` against `git apply --check -R` of the whole
// series (the same question: does the tree hold the series?) on the patched 20,000-file
// tree.
func BenchmarkCommandStatus(b *testing.B) {
	bin := buildMpspatch(b)
	dir, pdir := synth(b, synthtree.Spec{Files: 20000, Bytes: 120 << 20, MPS: 10, Patches: 10})
	env := benchEnv(b, dir)
	timeRun(b, env, dir, 0, bin, "apply", "--tree", dir, "--patches", pdir)
	rev := seriesArgs(b, pdir, true)
	var ours, git []time.Duration
	for b.Loop() {
		for range pairsPerIter {
			ours = append(ours, timeRun(b, env, dir, 0, bin, "status", "--tree", dir, "--patches", pdir).wall)
			git = append(git, timeRun(b, env, dir, 0, append([]string{"git", "apply", "--check", "-R"}, rev...)...).wall)
		}
	}
	b.ReportMetric(ms(median(ours)), "mpspatch-ms")
	b.ReportMetric(ms(median(git)), "git-ms")
	b.ReportMetric(float64(median(ours))/float64(median(git)), "mpspatch/git")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkCommandCheckTree: `mpspatch check --tree` against `git apply --check` at 30, 100
// and 300 patches, and how the time per patch grows (per-patch at 300 / per-patch at 30;
// linear is 1).
func BenchmarkCommandCheckTree(b *testing.B) {
	bin := buildMpspatch(b)
	perPatch, total := map[int]float64{}, map[int]float64{}
	for _, n := range []int{30, 100, 300} {
		spec := synthtree.Spec{Files: 2000, Bytes: 16 << 20, MPS: 30, Patches: n, Lines: 2400}
		dir, pdir := synth(b, spec)
		env := benchEnv(b, dir)
		fwd := seriesArgs(b, pdir, false)
		var ours, git []time.Duration
		for range max(3, pairsPerIter/2) {
			ours = append(ours, timeRun(b, env, dir, 0, bin, "check", "--tree", dir, "--patches", pdir).wall)
			git = append(git, timeRun(b, env, dir, 0, append([]string{"git", "apply", "--check"}, fwd...)...).wall)
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				for range pairsPerIter / 2 {
					ours = append(ours, timeRun(b, env, dir, 0, bin, "check", "--tree", dir, "--patches", pdir).wall)
					git = append(git, timeRun(b, env, dir, 0, append([]string{"git", "apply", "--check"}, fwd...)...).wall)
				}
			}
			total[n] = ms(median(ours))
			perPatch[n] = total[n] / float64(n)
			b.ReportMetric(ms(median(ours)), "mpspatch-ms")
			b.ReportMetric(ms(median(git)), "git-ms")
			b.ReportMetric(float64(median(ours))/float64(median(git)), "mpspatch/git")
			b.ReportMetric(perPatch[n], "ms/patch")
			b.ReportMetric(0, "ns/op")
		})
	}
	if perPatch[30] > 0 {
		// The time per patch includes the process's fixed cost, which weighs most at 30
		// patches; the cost of each added patch (30 -> 100, then 100 -> 300) is what shows
		// whether growth is linear: the two are equal when it is.
		inc1, inc2 := (total[100]-total[30])/70, (total[300]-total[100])/200
		// Printed, not logged: a parent benchmark has no result line of its own, and its
		// log shows only with -v.
		fmt.Printf("%s: time per patch at 300 / at 30 patches = %.2f; cost of an added patch, 100->300 / 30->100 = %.3f / %.3f ms = %.2f (linear: 1)\n",
			b.Name(), perPatch[300]/perPatch[30], inc2, inc1, inc2/inc1)
	}
}

// BenchmarkCommandStartup: `mpspatch version` against a Go hello-world built the same way:
// what every command pays before it does anything.
func BenchmarkCommandStartup(b *testing.B) {
	bin := buildMpspatch(b)
	hello := filepath.Join(b.TempDir(), "hello")
	src := b.TempDir()
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", hello, ".")
	cmd.Dir, cmd.Env = src, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build hello: %v\n%s", err, out)
	}
	env := benchEnv(b, b.TempDir())
	var ours, ref []time.Duration
	for b.Loop() {
		for range pairsPerIter * 3 {
			ours = append(ours, timeRun(b, env, "", 0, bin, "version").wall)
			ref = append(ref, timeRun(b, env, "", 0, hello).wall)
		}
	}
	fi, err := os.Stat(bin)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(ms(median(ours)), "mpspatch-ms")
	b.ReportMetric(ms(median(ref)), "hello-ms")
	b.ReportMetric(float64(median(ours))/float64(median(ref)), "mpspatch/hello")
	b.ReportMetric(float64(fi.Size())/(1<<20), "binary-MiB")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkCommandApplyMemory: peak RSS of `mpspatch apply` against `git apply` for a
// series of 100 patches over 100 files of 20,000 lines, and against the bytes the apply
// touches (the files before and after, plus the patches).
func BenchmarkCommandApplyMemory(b *testing.B) {
	bin := buildMpspatch(b)
	spec := synthtree.Spec{Files: 100, Bytes: 0, MPS: 100, Patches: 100, Lines: 20000}
	dir, pdir := synth(b, spec)
	env := benchEnv(b, dir)
	var touched int64
	for _, p := range seriesArgs(b, pdir, false) {
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		touched += fi.Size()
	}
	var treeBytes int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				treeBytes += fi.Size()
			}
		}
		return nil
	})
	touched += 2 * treeBytes
	fwd, rev := seriesArgs(b, pdir, false), seriesArgs(b, pdir, true)
	var ours, git int64
	for b.Loop() {
		ours = max(ours, peakRSS(b, env, dir, bin, "apply", "--tree", dir, "--patches", pdir))
		timeRun(b, env, dir, 0, bin, "unapply", "--tree", dir, "--patches", pdir)
		git = max(git, peakRSS(b, env, dir, append([]string{"git", "apply"}, fwd...)...))
		timeRun(b, env, dir, 0, append([]string{"git", "apply", "-R"}, rev...)...)
	}
	b.ReportMetric(float64(ours)/1024, "mpspatch-MiB")
	b.ReportMetric(float64(git)/1024, "git-MiB")
	b.ReportMetric(float64(touched)/(1<<20), "touched-MiB")
	if git > 0 {
		b.ReportMetric(float64(ours)/float64(git), "mpspatch/git")
	}
	b.ReportMetric(float64(ours*1024)/float64(touched), "rss/touched")
	b.ReportMetric(0, "ns/op")
	b.Log(fmt.Sprintf("apply of %d patches over %d files: peak RSS mpspatch %d KiB, git %d KiB, touched %d KiB", spec.Patches, spec.MPS, ours, git, touched/1024))
}
