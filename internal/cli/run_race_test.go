package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// asMainCmd is this test binary acting as the mpspatch command, as a process of its own
// (the tree lock is per process: a concurrent mpspatch must be another process).
func asMainCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	return cmd
}

// streamHashes is the SHA-256 of the stand-in file before and after the series.
func streamHashes() (base, patched string) {
	p := strings.Replace(standInStream, "  flush();\n", "  flush();\n  wait();\n", 1)
	return fmt.Sprintf("%x", sha256.Sum256([]byte(standInStream))), fmt.Sprintf("%x", sha256.Sum256([]byte(p)))
}

// builds reads what the fake builds recorded: per build, the exit code of the command
// it ran meanwhile and the hash of the watched file as the build found it.
func builds(t *testing.T, record string) [][2]string {
	t.Helper()
	data, err := os.ReadFile(record)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		code, hash, _ := strings.Cut(line, " ")
		out = append(out, [2]string{code, hash})
	}
	return out
}

// TestRunHoldsTheTreeAgainstAnUnapplyDuringTheBuild: another mpspatch that unapplies the
// tree while run builds it must be kept out (busy, exit 3) until run is done with the
// tree, so the build compiles the patched files that the apply stage reported.
func TestRunHoldsTheTreeAgainstAnUnapplyDuringTheBuild(t *testing.T) {
	f := newRunFixture(t)
	hostOS = "linux"
	record := filepath.Join(t.TempDir(), "builds")
	during, err := json.Marshal(map[string][]string{
		"argv": {os.Args[0], "--config", f.config, "unapply", "--tree", f.dir},
		"env":  {asMainEnv + "=1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_MODE", "ok")
	t.Setenv("FAKE_DURING", string(during))
	t.Setenv("FAKE_RECORD", record)
	t.Setenv("FAKE_WATCH", filepath.Join(f.dir, "aten/src/ATen/mps/Stream.mm"))

	code, stdout, stderr := runMain(t, f.args("--until", "build")...)
	have, _ := runOutcomes(t, stdout)
	if want := "clone=ran apply=ran audit=ran build=ran"; code != ExitOK || have != want {
		t.Fatalf("exit %d\nhave %s\nwant %s\n%s", code, have, want, stderr)
	}
	_, patched := streamHashes()
	b := builds(t, record)
	if len(b) != 1 {
		t.Fatalf("builds recorded: %v", b)
	}
	if b[0][0] != fmt.Sprint(ExitConflict) {
		t.Errorf("an unapply during run's build: exit %s, want %d (busy)", b[0][0], ExitConflict)
	}
	if b[0][1] != patched {
		t.Errorf("the build saw the tree unpatched (apply said it ran)")
	}
	if !treeIsPatched(t, f.dir) {
		t.Errorf("the tree is not patched after run")
	}
}

// TestRunAndUnapplyConcurrently: runs and unapplies in loops, each its own process. Each
// build must see the patched tree its run applied, every run must end ok (an unapply
// waits for run, or run for it), and afterwards a run's report must agree with the
// tree's actual state: apply runs exactly when the tree was not applied.
func TestRunAndUnapplyConcurrently(t *testing.T) {
	f := clonedRunFixture(t)
	record := filepath.Join(t.TempDir(), "builds")
	t.Setenv("FAKE_RECORD", record)
	t.Setenv("FAKE_WATCH", filepath.Join(f.dir, "aten/src/ATen/mps/Stream.mm"))
	// The children get the config and the key of this test: the environment is theirs.
	const rounds = 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	counts := map[string]int{}
	count := func(what string) {
		mu.Lock()
		counts[what]++
		mu.Unlock()
	}
	fail := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			cmd := asMainCmd(f.args("--until", "build")...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			if err != nil {
				fail("run %d: %v\n%s", i, err, errb.String())
				continue
			}
			var rep runReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				fail("run %d: %v\n%s", i, err, out.String())
				continue
			}
			for _, s := range rep.Stages {
				if s.Outcome != "ran" && s.Outcome != "up-to-date" {
					fail("run %d: %s %s", i, s.Name, s.Outcome)
				}
				if s.Name == "apply" {
					count("run: apply " + string(s.Outcome))
				}
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			cmd := asMainCmd("--config", f.config, "unapply", "--tree", f.dir)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			err := cmd.Run()
			if err == nil {
				count("unapply: exit 0")
			}
			if err != nil {
				count("unapply: busy")
				var ee *exec.ExitError
				// Busy (exit 3) is the one acceptable failure: run held the tree too long.
				if !errors.As(err, &ee) || ee.ExitCode() != ExitConflict || !strings.Contains(errb.String(), "another mpspatch") {
					fail("unapply %d: %v\n%s", i, err, errb.String())
				}
			}
		}
	}()
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d rounds each: %v, %d builds", rounds, counts, len(builds(t, record)))
	_, patched := streamHashes()
	for i, b := range builds(t, record) {
		if b[1] != patched {
			t.Errorf("build %d saw the tree unpatched", i)
		}
	}

	// The tree as it is now, and what the next run says of it.
	code, stdout, stderr := runMain(t, "--config", f.config, "--json", "status", "--tree", f.dir)
	if code != ExitOK && code != ExitCheckFailed {
		t.Fatalf("status: exit %d\n%s", code, stderr)
	}
	wasApplied := treeIsPatched(t, f.dir)
	code, stdout, stderr = runMain(t, f.args("--until", "build")...)
	_, rep := runOutcomes(t, stdout)
	if code != ExitOK || len(rep.Stages) < 2 {
		t.Fatalf("final run: exit %d\n%s", code, stderr)
	}
	apply := rep.Stages[1].Outcome
	if (apply == "up-to-date") != wasApplied {
		t.Errorf("final run: apply %s, but the tree was applied=%v before it", apply, wasApplied)
	}
	if !treeIsPatched(t, f.dir) {
		t.Error("the tree is not patched after the final run")
	}
}

// TestRunKilledAtRandomInstants: `run` is SIGKILLed (with everything it started) at random
// instants, sometimes after the tree was unapplied so that the apply stage has work to do.
// After every kill the same run must finish by itself, the tree patched, or its error
// must name the command that resolves it.
func TestRunKilledAtRandomInstants(t *testing.T) {
	f := clonedRunFixture(t)
	args := f.args("--until", "build")
	// Scale the random instants to how long one run takes on this machine (no timing is
	// asserted): the shortest of three runs that do everything from the apply on.
	var span time.Duration
	for i := 0; i < 3; i++ {
		if code, _, stderr := runMain(t, "--config", f.config, "unapply", "--tree", f.dir); code != ExitOK {
			t.Fatalf("unapply: exit %d\n%s", code, stderr)
		}
		t0 := time.Now()
		if out, err := asMainCmd(args...).CombinedOutput(); err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		if d := time.Since(t0); span == 0 || d < span {
			span = d
		}
	}
	t.Logf("one run from the apply on: %v", span)

	const kills = 20
	rng := rand.New(rand.NewSource(19))
	outcomes := map[string]int{}
	for i := 0; i < kills; i++ {
		// Mostly with the apply stage to do (the interesting window), sometimes with
		// every stage up to date.
		if rng.Intn(4) > 0 {
			if code, _, stderr := runMain(t, "--config", f.config, "unapply", "--tree", f.dir); code != ExitOK {
				t.Fatalf("kill %d: unapply: exit %d\n%s", i, code, stderr)
			}
		}
		cmd := asMainCmd(args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int63n(int64(span))))
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err := cmd.Wait()
		var ee *exec.ExitError
		killed := errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL

		code, stdout, stderr := runMain(t, args...)
		if code != ExitOK {
			// The message must say what to run; run it, then run must finish.
			fix := namedCommand(stderr + stdout)
			if fix == nil {
				t.Fatalf("kill %d: run after the kill: exit %d and no command named\n%s\n%s", i, code, stdout, stderr)
			}
			if c, _, e := runMain(t, append([]string{"--config", f.config}, fix...)...); c != ExitOK {
				t.Fatalf("kill %d: %v: exit %d\n%s", i, fix, c, e)
			}
			if code, stdout, stderr = runMain(t, args...); code != ExitOK {
				t.Fatalf("kill %d: run after %v: exit %d\n%s\n%s", i, fix, code, stdout, stderr)
			}
		}
		have, _ := runOutcomes(t, stdout)
		resumed := "nothing left"
		for _, w := range strings.Fields(have) {
			if !strings.HasSuffix(w, "=ran") && !strings.HasSuffix(w, "=up-to-date") {
				t.Errorf("kill %d: run after the kill: %s", i, have)
			}
			if stage, ok := strings.CutSuffix(w, "=ran"); ok && resumed == "nothing left" {
				resumed = "from " + stage
			}
		}
		if killed {
			outcomes["killed, resumed "+resumed]++
		} else {
			outcomes["finished before the kill"]++
		}
		if !treeIsPatched(t, f.dir) {
			t.Fatalf("kill %d: the tree is not patched after run said %s", i, have)
		}
		if _, err := os.Lstat(filepath.Join(f.dir, ".mpspatch/journal.json")); err == nil {
			t.Fatalf("kill %d: a journal remains after run finished", i)
		}
		// Nothing the next run needs is missing: a second run has nothing left to do.
		code, stdout, stderr = runMain(t, args...)
		if have, _ := runOutcomes(t, stdout); code != ExitOK || have != "clone=up-to-date apply=up-to-date audit=up-to-date build=up-to-date" {
			t.Fatalf("kill %d: the run after: exit %d, %s\n%s", i, code, have, stderr)
		}
	}
	t.Logf("%d kills: %v", kills, outcomes)
}

// namedCommand finds "mpspatch apply|unapply --tree DIR" in a message: the command an
// error tells the user to run.
func namedCommand(msg string) []string {
	for _, verb := range []string{"unapply", "apply"} {
		if i := strings.Index(msg, "mpspatch "+verb+" --tree "); i >= 0 {
			fields := strings.Fields(msg[i+len("mpspatch "):])
			if len(fields) >= 3 {
				return []string{verb, "--tree", strings.Trim(fields[2], "`'\",;")}
			}
		}
	}
	return nil
}
