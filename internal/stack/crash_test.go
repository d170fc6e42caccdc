package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/mpspatch/mpspatch/internal/gitcli"
)

// The crash tests re-run this test binary as a child that runs a rebase (or its
// --continue) and SIGKILLs itself at the Nth crash point. The parent then finishes with
// --continue or goes back with --abort and checks the repository is exactly what an
// uninterrupted run, or no run at all, leaves.
const (
	envChild = "MPSPATCH_STACK_CRASH_CHILD" // "rebase" or "continue"
	envTree  = "MPSPATCH_STACK_CRASH_TREE"
	envStep  = "MPSPATCH_STACK_CRASH_STEP"
)

func TestMain(m *testing.M) {
	if op := os.Getenv(envChild); op != "" {
		os.Exit(crashChild(op))
	}
	code := m.Run()
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
	crashHook = func(string) {
		n++
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
	case "rebase":
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

func (f *fixture) runCrashChild(op, tree string, step int) error {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append([]string{}, f.vars...), envChild+"="+op, envTree+"="+tree, envStep+"="+strconv.Itoa(step))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
		return errKilled
	}
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

var errKilled = errors.New("killed")

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

	finished := false
	for step := 1; !finished && step < 200; step += 3 {
		for _, finish := range []string{"continue", "abort"} {
			tree := copyTree(t, before)
			err := f.runCrashChild("rebase", tree, step)
			if err == nil {
				finished = true // past the last crash point: nothing to recover
				assertHead(t, f, tree, wantHead, step)
				continue
			}
			if !errors.Is(err, errKilled) {
				t.Fatalf("step %d: child: %v", step, err)
			}
			root := openRoot(t, tree)
			switch finish {
			case "continue":
				// A second crash during the continue, then a clean continue.
				if err := f.runCrashChild("continue", tree, 2); err != nil && !errors.Is(err, errKilled) {
					t.Fatalf("step %d: continue child: %v", step, err)
				}
				if st, _ := InProgress(context.Background(), f.g, tree); st != nil {
					if _, err := Continue(context.Background(), f.g, root, RebaseOptions{Tree: tree, Intents: testIntents}); err != nil {
						t.Fatalf("step %d: continue: %v", step, err)
					}
				}
				assertHead(t, f, tree, wantHead, step)
			case "abort":
				st, _ := InProgress(context.Background(), f.g, tree)
				if st == nil {
					// Killed after the state was removed: the rebase had finished.
					assertHead(t, f, tree, wantHead, step)
					continue
				}
				if _, err := Abort(context.Background(), f.g, root, RebaseOptions{Tree: tree}); err != nil {
					t.Fatalf("step %d: abort: %v", step, err)
				}
				assertSameRepoState(t, f, tree, before, orig)
			}
		}
	}
	if !finished {
		t.Fatal("the child never ran to the end: more crash points than the loop covers")
	}
}

// copyTree copies a work tree, .git included (cheaper than a new apply --commit).
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func assertHead(t *testing.T, f *fixture, tree, want string, step int) {
	t.Helper()
	if br := f.git(tree, "symbolic-ref", "--short", "HEAD"); br != DefaultBranch {
		t.Errorf("step %d: HEAD on %q", step, br)
	}
	if head := f.git(tree, "rev-parse", "HEAD"); head != want {
		t.Errorf("step %d: HEAD %s, want %s (the uninterrupted result)", step, head, want)
	}
	if s := f.git(tree, "status", "--porcelain", "--untracked-files=all"); s != "" {
		t.Errorf("step %d: tree not clean:\n%s", step, s)
	}
}
