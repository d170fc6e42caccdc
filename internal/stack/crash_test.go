package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mpspatch/mpspatch/internal/gitcli"
)

// The crash tests re-run this test binary as a child that runs a rebase (or its
// --continue) and SIGKILLs itself at the Nth crash point: the rebase's own steps and, in
// each patch's write phase, every step of the series journal ("write: ..."). The parent
// then finishes with --continue or goes back with --abort and checks the repository is
// exactly what an uninterrupted run, or no run at all, leaves.
const (
	envChild = "MPSPATCH_STACK_CRASH_CHILD" // "rebase", "continue" or "count"
	envTree  = "MPSPATCH_STACK_CRASH_TREE"
	envStep  = "MPSPATCH_STACK_CRASH_STEP"
)

func TestMain(m *testing.M) {
	if op := os.Getenv(envChild); op != "" {
		os.Exit(crashChild(op))
	}
	// The state key (for the journal and the rebase state) lives in the user's config
	// directory: give the tests, and the children they start, one of their own.
	home, err := os.MkdirTemp("", "mpspatch-stack-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_CACHE_HOME"} {
		os.Setenv(k, filepath.Join(home, k))
	}
	code := m.Run()
	os.RemoveAll(home)
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	if benchBin != "" {
		os.RemoveAll(filepath.Dir(benchBin))
	}
	os.Exit(code)
}

func crashChild(op string) int {
	tree := os.Getenv(envTree)
	at, _ := strconv.Atoi(os.Getenv(envStep))
	n := 0
	crashHook = func(step string) {
		n++
		if op == "count" {
			fmt.Println(step)
		}
		if n == at {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	root, err := os.OpenRoot(tree)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	opts := RebaseOptions{Tree: tree, Base: "v1", Onto: "v2", Intents: testIntents}
	switch op {
	case "rebase", "count":
		_, err = Rebase(context.Background(), &gitcli.Git{}, root, opts)
	default:
		_, err = Continue(context.Background(), &gitcli.Git{}, root, opts)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "finished after %d crash points\n", n)
	return 0
}

func (f *fixture) crashChildCmd(op, tree string, step int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// The children share this process's state key (XDG_CONFIG_HOME, set in TestMain).
	cmd.Env = append(append([]string{}, f.vars...), envChild+"="+op, envTree+"="+tree, envStep+"="+strconv.Itoa(step),
		"XDG_CONFIG_HOME="+os.Getenv("XDG_CONFIG_HOME"))
	return cmd
}

func (f *fixture) runCrashChild(op, tree string, step int) error {
	out, err := f.crashChildCmd(op, tree, step).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
		return errKilled
	}
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// crashPoints runs an uninterrupted rebase of a copy of tree in a child and returns the
// names of the crash points it passed, in order (crash point N is names[N-1]).
func (f *fixture) crashPoints(tree string) []string {
	f.t.Helper()
	cmd := f.crashChildCmd("count", copyTree(f.t, tree), 0)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		f.t.Fatalf("counting crash points: %v\n%s", err, errb.String())
	}
	// The test binary may print its own lines ("PASS"); crash points come first.
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l == "PASS" || l == "" {
			continue
		}
		names = append(names, l)
	}
	return names
}

var errKilled = errors.New("killed")

// TestRebaseCrash kills a rebase at crash points picked by a seeded RNG — half of them
// inside a patch's write phase, where the series journal is committed and the tree half
// written — then, on two copies of what the kill left, finishes with --continue (killed
// once more at a random point, then run to the end) and goes back with --abort. Both must
// end exactly where an uninterrupted rebase, or none, leaves the branch, HEAD, index and
// tree, with no state or journal left behind.
func TestRebaseCrash(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.upstreamV2(func(p func(string) string) {
		write(t, p("a.c"), lines("moved", 5)+read(t, p("a.c")))
		f.edit(p("b.c"), "b line 18", "b line 18 upstream")
		f.edit(p("c.c"), "c line 5", "c line 5 THREAD")
	})
	// The reference: an uninterrupted rebase (fixed dates make equal commits equal).
	want := f.applyCommits()
	orig := f.git(want, "rev-parse", "HEAD")
	if _, err := f.rebase(want); err != nil {
		t.Fatal(err)
	}
	wantHead := f.git(want, "rev-parse", "HEAD")
	before := f.applyCommits()

	names := f.crashPoints(before)
	var inWrite, outside []int
	for i, n := range names {
		if strings.HasPrefix(n, "write: ") {
			inWrite = append(inWrite, i+1)
		} else {
			outside = append(outside, i+1)
		}
	}
	if len(inWrite) < 10 || len(outside) < 10 {
		t.Fatalf("crash points: %d in write phases, %d elsewhere; the fixture should have many of each:\n%s", len(inWrite), len(outside), strings.Join(names, "\n"))
	}
	kills := 16
	if testing.Short() {
		kills = 6
	}
	rng := rand.New(rand.NewSource(19))
	var plan []int
	for i := 0; i < kills; i++ {
		pool := outside
		if i%2 == 0 {
			pool = inWrite
		}
		plan = append(plan, pool[rng.Intn(len(pool))])
	}
	// The last crash point too: past it the rebase has finished.
	plan = append(plan, len(names))

	for _, step := range plan {
		what := fmt.Sprintf("killed at crash point %d (%s)", step, names[step-1])
		crashed := copyTree(t, before)
		if err := f.runCrashChild("rebase", crashed, step); !errors.Is(err, errKilled) {
			t.Fatalf("%s: the child was not killed: %v", what, err)
		}
		// The state is bound to the repository's path: keep what the kill left, continue
		// in place, then put it back in the same place to abort.
		kept := copyTree(t, crashed)
		// --continue, killed once more at a random point, then to the end.
		cont := crashed
		again := 1 + rng.Intn(len(names))
		if err := f.runCrashChild("continue", cont, again); err != nil && !errors.Is(err, errKilled) {
			t.Fatalf("%s: continue (killed at its crash point %d): %v", what, again, err)
		}
		if st, err := InProgress(context.Background(), f.g, cont); err != nil {
			t.Fatalf("%s, then continue killed at %d: the state does not read back: %v", what, again, err)
		} else if st != nil {
			if _, err := Continue(context.Background(), f.g, openRoot(t, cont), RebaseOptions{Tree: cont, Intents: testIntents}); err != nil {
				t.Fatalf("%s, then continue killed at %d: continue: %v", what, again, err)
			}
		}
		assertHead(t, f, cont, wantHead, what+", then continued")
		assertNoState(t, f, cont, what+", then continued")

		// --abort.
		aborted := crashed
		if err := os.RemoveAll(aborted); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(aborted, os.DirFS(kept)); err != nil {
			t.Fatal(err)
		}
		st, err := InProgress(context.Background(), f.g, aborted)
		if err != nil {
			t.Fatalf("%s: the state does not read back: %v", what, err)
		}
		if st == nil {
			// Killed after the state was removed: the rebase had finished.
			assertHead(t, f, aborted, wantHead, what)
			continue
		}
		if _, err := Abort(context.Background(), f.g, openRoot(t, aborted), RebaseOptions{Tree: aborted}); err != nil {
			t.Fatalf("%s: abort: %v", what, err)
		}
		assertSameRepoState(t, f, aborted, before, orig)
		assertNoState(t, f, aborted, what+", then aborted")
	}
}

// copyTree copies a work tree, .git included (cheaper than a new apply --commit).
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func assertHead(t *testing.T, f *fixture, tree, want, what string) {
	t.Helper()
	if br := f.git(tree, "symbolic-ref", "--short", "HEAD"); br != DefaultBranch {
		t.Errorf("%s: HEAD on %q", what, br)
	}
	if head := f.git(tree, "rev-parse", "HEAD"); head != want {
		t.Errorf("%s: HEAD %s, want %s (the uninterrupted result)", what, head, want)
	}
	if s := f.git(tree, "status", "--porcelain", "--untracked-files=all"); s != "" {
		t.Errorf("%s: tree not clean:\n%s", what, s)
	}
}

// assertNoState checks that neither the rebase state nor a journal is left.
func assertNoState(t *testing.T, f *fixture, tree, what string) {
	t.Helper()
	for _, p := range []string{filepath.Join(tree, ".git", stateDirName), filepath.Join(tree, ".mpspatch")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s: %s is left behind", what, p)
		}
	}
}

// TestRebaseCrashBeforeIndexStaged kills a rebase at each point where its commit writer
// has recorded commits that the index does not hold yet (after a patch's commit is
// written, after the state moved past it, and once every patch is committed but before
// the index is staged for the branch), then finishes with --continue: the branch, HEAD,
// index and tree must be what an uninterrupted rebase leaves, with nothing staged.
func TestRebaseCrashBeforeIndexStaged(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.upstreamV2(func(p func(string) string) {
		write(t, p("a.c"), lines("moved", 5)+read(t, p("a.c")))
		f.edit(p("c.c"), "c line 5", "c line 5 THREAD")
	})
	want := f.applyCommits()
	if _, err := f.rebase(want); err != nil {
		t.Fatal(err)
	}
	wantHead := f.git(want, "rev-parse", "HEAD")
	before := f.applyCommits()
	names := f.crashPoints(before)
	var steps []int
	seen := map[string]bool{}
	for i, n := range names {
		if (n == "commit written" || n == "advanced") && !seen[n] || n == "finishing" {
			steps = append(steps, i+1)
			seen[n] = true
		}
	}
	if len(steps) != 3 {
		t.Fatalf("crash points: want a commit written, an advanced and a finishing one:\n%s", strings.Join(names, "\n"))
	}
	// The last commit written too: every commit but the index left behind.
	for i := len(names) - 1; i >= 0; i-- {
		if names[i] == "commit written" {
			steps = append(steps, i+1)
			break
		}
	}
	for _, step := range steps {
		what := fmt.Sprintf("killed at crash point %d (%s)", step, names[step-1])
		crashed := copyTree(t, before)
		if err := f.runCrashChild("rebase", crashed, step); !errors.Is(err, errKilled) {
			t.Fatalf("%s: the child was not killed: %v", what, err)
		}
		if _, err := Continue(context.Background(), f.g, openRoot(t, crashed), RebaseOptions{Tree: crashed, Intents: testIntents}); err != nil {
			t.Fatalf("%s: continue: %v", what, err)
		}
		assertHead(t, f, crashed, wantHead, what+", then continued")
		if staged := f.git(crashed, "diff", "--cached", "--name-only"); staged != "" {
			t.Errorf("%s, then continued: staged changes left: %s", what, staged)
		}
		assertNoState(t, f, crashed, what+", then continued")
	}
}
