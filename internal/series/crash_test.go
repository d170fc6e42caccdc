package series

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"
)

// The crash tests re-run this test binary as a child that applies or unapplies the series
// and SIGKILLs itself at a chosen step of the write phase (or runs until the parent kills
// it). The parent then checks that recovery leaves the tree wholly before or wholly after.
const (
	envChild   = "MPSPATCH_CRASH_CHILD" // "apply", "unapply" or "loop"
	envTree    = "MPSPATCH_CRASH_TREE"
	envPatches = "MPSPATCH_CRASH_PATCHES"
	envStep    = "MPSPATCH_CRASH_STEP"
)

func TestMain(m *testing.M) {
	if op := os.Getenv(envChild); op != "" {
		os.Exit(crashChild(op))
	}
	// The journal key lives in the user's config directory: give the tests (and the
	// children they start, which inherit the environment) a home of their own.
	home, err := os.MkdirTemp("", "mpspatch-series-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"} {
		os.Setenv(k, filepath.Join(home, k))
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

func crashChild(op string) int {
	s, err := Load(os.DirFS(os.Getenv(envPatches)), ".", "child")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	root, err := os.OpenRoot(os.Getenv(envTree))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var at int
	fmt.Sscan(os.Getenv(envStep), &at)
	n := 0
	crashHook = func(string) {
		n++
		if n == at {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
	switch op {
	case "apply":
		_, err = Apply(root, s, Options{})
	case "unapply":
		_, err = Unapply(root, s, Options{})
	case "loop":
		// Flip the tree back and forth until killed.
		for i := 0; err == nil; i++ {
			if i%2 == 0 {
				_, err = Apply(root, s, Options{})
			} else {
				_, err = Unapply(root, s, Options{})
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func runChild(t *testing.T, op, tree, patches string, step int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+op, envTree+"="+tree, envPatches+"="+patches, fmt.Sprintf("%s=%d", envStep, step))
	return cmd
}

// countSteps applies and unapplies in process, counting crash points of each.
func countSteps(t *testing.T, fx fixture, s *Series) (apply, unapply int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "count")
	copyTree(t, fx.repo, dir)
	root := openRoot(t, dir)
	n := 0
	crashHook = func(string) { n++ }
	defer func() { crashHook = nil }()
	if _, err := Apply(root, s, Options{}); err != nil {
		t.Fatal(err)
	}
	apply, n = n, 0
	if _, err := Unapply(root, s, Options{}); err != nil {
		t.Fatal(err)
	}
	return apply, n
}

// checkWhole recovers the tree as a command writing in direction dir would, and asserts
// it is exactly before or exactly after. status, which only reads, must leave the
// crashed tree byte for byte as it found it, journal included.
func checkWhole(t *testing.T, dir string, s *Series, d Direction, before, after map[string]string) string {
	t.Helper()
	root := openRoot(t, dir)
	crashed := snapshot(t, dir)
	if _, err := Inspect(root, s); err != nil {
		t.Fatalf("inspect after crash: %v", err)
	}
	if have := snapshot(t, dir); !reflect.DeepEqual(have, crashed) {
		t.Fatalf("status wrote to a crashed tree:\n%s", mapDiff(have, crashed))
	}
	if _, err := Recover(root, d); err != nil {
		t.Fatalf("recover after crash: %v", err)
	}
	st, err := Inspect(root, s)
	if err != nil {
		t.Fatalf("inspect after recovery: %v", err)
	}
	have := snapshot(t, dir)
	switch {
	case reflect.DeepEqual(have, before):
		if st.Summary() != NotApplied {
			t.Errorf("tree equals the base but status says %s", st.Summary())
		}
		return "before"
	case reflect.DeepEqual(have, after):
		if st.Summary() != Applied {
			t.Errorf("tree equals the patched tree but status says %s", st.Summary())
		}
		return "after"
	}
	t.Fatalf("tree is neither before nor after the series:\nagainst before:\n%sagainst after:\n%s", mapDiff(have, before), mapDiff(have, after))
	return ""
}

func TestCrashAtEveryStepOfTheWritePhase(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	before := snapshot(t, fx.repo)
	after := patchedSnapshot(t, fx)
	nApply, nUnapply := countSteps(t, fx, s)
	if nApply < 10 || nUnapply < 10 {
		t.Fatalf("only %d/%d crash points; the write phase is not instrumented", nApply, nUnapply)
	}

	for _, tc := range []struct {
		op    string
		steps int
		start map[string]string
	}{{"apply", nApply, before}, {"unapply", nUnapply, after}} {
		seen := map[string]int{}
		for step := 1; step <= tc.steps; step++ {
			dir := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%d", tc.op, step))
			copyTree(t, fx.repo, dir)
			if tc.op == "unapply" {
				if _, err := Apply(openRoot(t, dir), s, Options{}); err != nil {
					t.Fatal(err)
				}
			}
			err := runChild(t, tc.op, dir, fx.patches, step).Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("%s step %d: child was not killed: %v", tc.op, step, err)
			}
			// Recovery by the opposite command rolls the journal back: the start state.
			// Without a journal there is nothing to undo: the crash came before the
			// journal was begun (only the old files' links exist; the tree is untouched)
			// or after the operation finished, and the tree stays as it is.
			back := dir + "-back"
			copyTree(t, dir, back)
			want := startName(tc.op)
			if !Pending(openRoot(t, dir)) {
				st, err := Inspect(openRoot(t, dir), s)
				if err != nil {
					t.Fatal(err)
				}
				want = map[PatchState]string{NotApplied: "before", Applied: "after"}[st.Summary()]
			}
			if got := checkWhole(t, back, s, opposite(tc.op), before, after); got != want {
				t.Errorf("%s step %d: recovered by the opposite command to %s, want %s", tc.op, step, got, want)
			}
			got := checkWhole(t, dir, s, direction(tc.op), before, after)
			seen[got]++
			if _, err := os.Stat(filepath.Join(dir, StateDir)); !os.IsNotExist(err) {
				t.Errorf("%s step %d: %s remains after recovery", tc.op, step, StateDir)
			}
			// And the tree is usable: the operation can be completed.
			if _, err := Apply(openRoot(t, dir), s, Options{}); err != nil {
				t.Errorf("%s step %d: apply after recovery: %v", tc.op, step, err)
			}
		}
		// Crashes before the commit point roll back, after it roll forward: both must occur.
		if seen["before"] == 0 || seen["after"] == 0 {
			t.Errorf("%s: outcomes %v; want both rolled back and rolled forward", tc.op, seen)
		}
		t.Logf("%s: %d crash points, outcomes %v", tc.op, tc.steps, seen)
	}
}

func TestKillAtRandomInstants(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	before := snapshot(t, fx.repo)
	after := patchedSnapshot(t, fx)
	rng := rand.New(rand.NewSource(1))
	dir := filepath.Join(t.TempDir(), "loop")
	copyTree(t, fx.repo, dir)
	seen := map[string]int{}
	for i := 0; i < 25; i++ {
		cmd := runChild(t, "loop", dir, fx.patches, 0)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+rng.Intn(30000)) * time.Microsecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		seen[checkWhole(t, dir, s, Forward, before, after)]++
	}
	t.Logf("outcomes after 25 random kills: %v", seen)
}

func direction(op string) Direction {
	if op == "unapply" {
		return Reverse
	}
	return Forward
}

func opposite(op string) Direction {
	if op == "unapply" {
		return Forward
	}
	return Reverse
}

// startName is the state an operation starts from, as checkWhole names it.
func startName(op string) string {
	if op == "unapply" {
		return "after"
	}
	return "before"
}

func endName(op string) string {
	if op == "unapply" {
		return "before"
	}
	return "after"
}
