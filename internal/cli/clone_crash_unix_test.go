//go:build unix

package cli

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/gitcli"
)

// crashUpstream is upstreamRepo with enough files that a clone takes a while to fetch and
// check out, so that kills land in every step, not only at the start.
func crashUpstream(t *testing.T) (string, string) {
	t.Helper()
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	os.MkdirAll(sub, 0o755)
	gitRun(t, sub, "init", "-q")
	for i := range 20 {
		os.WriteFile(filepath.Join(sub, fmt.Sprintf("third%02d.c", i)), []byte(strings.Repeat(fmt.Sprintf("int third%d;\n", i), 200)), 0o644)
	}
	gitRun(t, sub, "add", "-A")
	gitRun(t, sub, "commit", "-q", "-m", "sub")

	work := filepath.Join(root, "work")
	os.MkdirAll(filepath.Join(work, "aten"), 0o755)
	gitRun(t, work, "init", "-q")
	for i := range 150 {
		os.WriteFile(filepath.Join(work, "aten", fmt.Sprintf("x%03d.cpp", i)), []byte(strings.Repeat(fmt.Sprintf("int x%d;\n", i), 300)), 0o644)
	}
	gitRun(t, work, "submodule", "add", "-q", "file://"+sub, "third_party/sub")
	gitRun(t, work, "add", "-A")
	gitRun(t, work, "commit", "-q", "-m", "pinned")
	pinned := gitRun(t, work, "rev-parse", "HEAD")
	bare := filepath.Join(root, "upstream.git")
	gitRun(t, root, "clone", "-q", "--bare", work, bare)
	return "file://" + bare, pinned
}

// TestCloneCrash SIGKILLs `mpspatch clone` at instants picked by a seeded RNG — right
// after a progress line (which lands in the early steps: making .git, git init, the
// remote) or after a random time since the start (anywhere: fetch, checkout,
// submodules) — sometimes twice in a row, then runs the same command again. Every re-run
// must finish the clone, equal to an uninterrupted one, with no marker, lock or stray
// directory left, whatever the kill interrupted and whatever git processes it orphaned.
func TestCloneCrash(t *testing.T) {
	isolateGit(t)
	url, pinned := crashUpstream(t)
	cfg := writeConfigTag(t, url, "", pinned)

	start := time.Now()
	ref := cloned(t, cfg)
	took := time.Since(start)
	refFiles := gitRun(t, ref, "ls-files", "-s")
	refSub := gitRun(t, filepath.Join(ref, "third_party", "sub"), "rev-parse", "HEAD")

	kills := 16
	if testing.Short() {
		kills = 6
	}
	rng := rand.New(rand.NewSource(6))
	for k := range kills {
		dir := filepath.Join(t.TempDir(), "pytorch")
		var what []string
		for round := 0; round < 1+rng.Intn(2); round++ {
			what = append(what, killCloneChild(t, cfg, dir, rng, took))
		}
		desc := fmt.Sprintf("kill %d (%s)", k, strings.Join(what, ", then "))
		code, stdout, stderr := runMain(t, "--config", cfg, "clone", "--dir", dir)
		if code != ExitOK {
			t.Fatalf("%s: the re-run: exit %d\nstdout: %s\nstderr: %s", desc, code, stdout, stderr)
		}
		t.Logf("%s: the re-run %s%s", desc, firstLine(stdout), map[bool]string{true: " (submodules started over)"}[strings.Contains(stderr, "starting them over")])
		if gitcli.CloneInterrupted(dir) {
			t.Errorf("%s: the marker is left after the re-run", desc)
		}
		if head := gitRun(t, dir, "rev-parse", "HEAD"); head != pinned {
			t.Errorf("%s: HEAD %s, want %s", desc, head, pinned)
		}
		if files := gitRun(t, dir, "ls-files", "-s"); files != refFiles {
			t.Errorf("%s: the index differs from an uninterrupted clone's", desc)
		}
		if st := gitRun(t, dir, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=none"); st != "" {
			t.Errorf("%s: the tree is not clean:\n%s", desc, st)
		}
		if sub := gitRun(t, filepath.Join(dir, "third_party", "sub"), "rev-parse", "HEAD"); sub != refSub {
			t.Errorf("%s: submodule at %s, want %s", desc, sub, refSub)
		}
		if st := gitRun(t, dir, "submodule", "status", "--recursive"); !strings.HasPrefix(st, refSub+" ") {
			t.Errorf("%s: submodule status %q", desc, st)
		}
		for _, stray := range []string{gitcli.CloneStage, ".git/index.lock", ".git/shallow.lock"} {
			if _, err := os.Lstat(filepath.Join(dir, stray)); err == nil {
				t.Errorf("%s: %s is left behind", desc, stray)
			}
		}
		// The re-run is a finished clone now: running it again does nothing.
		if code, stdout, _ := runMain(t, "--config", cfg, "clone", "--dir", dir); code != ExitOK || !strings.Contains(stdout, "is already a finished clone") {
			t.Errorf("%s: a third run: exit %d, %q", desc, code, stdout)
		}
	}
}

// killCloneChild runs `mpspatch clone` as a child and SIGKILLs it: a random moment after
// it reports the start of its init or fetch step, or after a random share of the time an
// uninterrupted clone takes (which, on a loaded machine, may be after it finished). It
// says where the kill was.
func killCloneChild(t *testing.T, cfg, dir string, rng *rand.Rand, took time.Duration) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "--config", cfg, "clone", "--dir", dir)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var what string
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// After a line that starts a step, plus a little: the early steps (making .git, git
	// init, the remote) take milliseconds, so this is how kills land in them.
	afterLine := func(prefix string, spread time.Duration) string {
		for l := range lines {
			if strings.HasPrefix(l, prefix) {
				d := time.Duration(rng.Int63n(int64(spread)))
				time.Sleep(d)
				return fmt.Sprintf("%s after %q", d.Round(time.Microsecond), l)
			}
		}
		return fmt.Sprintf("after it finished (no line %q)", prefix)
	}
	switch r := rng.Intn(10); {
	case r < 4:
		what = afterLine("clone: init:", 40*time.Millisecond)
	case r < 6:
		what = afterLine("clone: fetch:", 300*time.Millisecond)
	default:
		d := time.Duration(rng.Int63n(int64(took) + 1))
		what = fmt.Sprintf("after %s", d.Round(time.Millisecond))
		time.Sleep(d)
	}
	_ = cmd.Process.Kill()
	go func() {
		for range lines {
		}
	}()
	_ = cmd.Wait()
	return what
}

// TestCloneRefusesAForeignMarker: a directory whose .git holds a clone marker that this
// user's mpspatch did not write there (planted, copied, or an older mpspatch's) is not
// resumed: exit 2, and its lock files stay.
func TestCloneRefusesAForeignMarker(t *testing.T) {
	isolateGit(t)
	url, pinned := upstreamRepo(t)
	cfg := writeConfigTag(t, url, "", pinned)
	dir := filepath.Join(t.TempDir(), "pytorch")
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", gitcli.CloneMarker), []byte(pinned+"\n"), 0o644)
	lock := filepath.Join(dir, ".git", "index.lock")
	os.WriteFile(lock, nil, 0o644)
	code, _, stderr := runMain(t, "--config", cfg, "clone", "--dir", dir)
	if code != ExitUsage || !strings.Contains(stderr, "the clone marker was not written by this user's mpspatch for this directory") {
		t.Fatalf("exit %d, want %d\n%s", code, ExitUsage, stderr)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the lock was removed: %v", err)
	}
}
