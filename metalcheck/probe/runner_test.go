package probe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func childRunner(t *testing.T, mode string) *Runner {
	t.Helper()
	return &Runner{
		Argv:      func(spec string) []string { return []string{os.Args[0], spec} },
		Env:       append(os.Environ(), childEnv+"="+mode),
		Timeout:   20 * time.Second,
		KillGrace: 200 * time.Millisecond,
		LogDir:    t.TempDir(),
	}
}

var (
	stress4x3   = Scenario{Kind: KindStress, Threads: 4, Iterations: 3, Queues: QueuesPerThread, Words: 64}
	afterCommit = Scenario{Kind: KindHandlerAfterCommit, Threads: 1, Iterations: 1, Queues: QueuesPerThread, Words: 64}
	sharedCB    = Scenario{Kind: KindSharedCommandBuffer, Threads: 4, Iterations: 1, Queues: QueuesShared, Words: 64}
)

// TestRunnerClassifiesRealChildren runs the test binary as a probe child that succeeds,
// fails its checks, crashes in each way a Metal child can, hangs, or tears its output,
// and checks the class, the verdict and the evidence the parent reports.
func TestRunnerClassifiesRealChildren(t *testing.T) {
	tests := []struct {
		name      string
		mode      string
		scenario  Scenario
		timeout   time.Duration
		wantClass Class
		wantPass  bool
		// wantDetail must occur in Outcome.Detail.
		wantDetail string
		check      func(t *testing.T, o Outcome)
	}{
		{
			name: "fake stress passes", mode: "fake", scenario: stress4x3,
			wantClass: ClassOK, wantPass: true,
			check: func(t *testing.T, o Outcome) {
				if o.Device == nil || o.Device.Backend != "fake" {
					t.Errorf("have device %+v, want the fake's", o.Device)
				}
				if len(o.Workers) != 4 || o.Progress.Iterations != 12 || !o.Progress.Released {
					t.Errorf("have %d workers, progress %+v; want 4 workers, 12 iterations", len(o.Workers), o.Progress)
				}
			},
		},
		{
			name: "cross-talk fails the checks", mode: "fake-crosstalk", scenario: stress4x3,
			wantClass: ClassChecksFailed, wantDetail: "worker 1: iteration 2: 1 words wrong, first at index 7",
			check: func(t *testing.T, o Outcome) {
				if !strings.Contains(o.Detail, "written by worker 0 iteration 2") {
					t.Errorf("detail %q does not name the writer", o.Detail)
				}
				if o.ExitCode != 1 {
					t.Errorf("have exit %d, want 1", o.ExitCode)
				}
			},
		},
		{
			name: "control aborted by an assertion passes", mode: "fake", scenario: afterCommit,
			wantClass: ClassAssertion, wantPass: true,
			wantDetail: "failed assertion `Completed handler provided after commit call'",
		},
		{
			name: "shared command buffer control aborted passes", mode: "fake", scenario: sharedCB,
			wantClass: ClassAssertion, wantPass: true, wantDetail: "failed assertion",
		},
		{
			name: "control that survives fails", mode: "fake-permissive", scenario: afterCommit,
			wantClass: ClassChecksFailed, wantDetail: "was not aborted by Metal",
		},
		{
			name: "metal assertion in a stress run", mode: "metal-abort", scenario: stress4x3,
			wantClass: ClassAssertion, wantDetail: metalAssertion,
			check: func(t *testing.T, o Outcome) {
				if o.Signal != "SIGABRT" {
					t.Errorf("have signal %q, want SIGABRT", o.Signal)
				}
				if o.Progress.Iterations != 1 {
					t.Errorf("have progress %+v, want the one iteration the child reported", o.Progress)
				}
				if len(o.StderrTail) == 0 || o.StderrTail[0] != metalAssertion {
					t.Errorf("have stderr tail %q, want the assertion first", o.StderrTail)
				}
			},
		},
		{
			name: "segfault", mode: "segfault", scenario: stress4x3,
			wantClass: ClassSignal, wantDetail: "SIGSEGV",
			check: func(t *testing.T, o Outcome) {
				if o.Signal != "SIGSEGV" {
					t.Errorf("have signal %q, want SIGSEGV", o.Signal)
				}
			},
		},
		{
			name: "signal reported by the Go runtime", mode: "go-runtime-segv", scenario: stress4x3,
			wantClass: ClassSignal, wantDetail: "SIGSEGV reported by the Go runtime",
		},
		{
			name: "go panic", mode: "fake-panic", scenario: stress4x3,
			wantClass: ClassPanic, wantDetail: "panic: fake backend: injected panic at worker 1 iteration 1",
		},
		{
			name: "hang is killed at the timeout", mode: "fake-hang", scenario: stress4x3, timeout: time.Second,
			wantClass: ClassTimeout, wantDetail: "killed the process group",
			check: func(t *testing.T, o Outcome) {
				if !o.TimedOut || !o.Progress.Released {
					t.Errorf("have timed out %v, progress %+v; want a timeout after the barrier", o.TimedOut, o.Progress)
				}
				if pid := childPID(t, o); syscall.Kill(pid, 0) == nil {
					t.Errorf("hung child %d is still alive after Run returned", pid)
				}
			},
		},
		{
			name: "torn last line", mode: "torn", scenario: stress4x3,
			wantClass: ClassError, wantDetail: "without a result line",
			check: func(t *testing.T, o Outcome) {
				if o.TornLine != `{"v":1,"type":"wor` {
					t.Errorf("have torn line %q", o.TornLine)
				}
			},
		},
		{
			name: "child error event", mode: "no-device", scenario: stress4x3,
			wantClass: ClassError, wantDetail: "exit status 5: probe device: no Metal device",
		},
		{
			name: "stdout noise is kept, not fatal", mode: "noise", scenario: stress4x3,
			wantClass: ClassOK, wantPass: true,
			check: func(t *testing.T, o Outcome) {
				if len(o.Noise) != 1 || o.Noise[0] != "Metal API Validation Enabled" {
					t.Errorf("have noise %q", o.Noise)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := childRunner(t, tt.mode)
			if tt.timeout != 0 {
				r.Timeout = tt.timeout
			}
			o := r.Run(context.Background(), tt.scenario)
			if o.Class != tt.wantClass || o.Pass != tt.wantPass {
				t.Fatalf("have class %s pass %v (%s), want %s pass %v\nstderr: %s",
					o.Class, o.Pass, o.Detail, tt.wantClass, tt.wantPass, strings.Join(o.StderrTail, "\n"))
			}
			if !strings.Contains(o.Detail, tt.wantDetail) {
				t.Errorf("have detail %q, want it to contain %q", o.Detail, tt.wantDetail)
			}
			log, err := os.ReadFile(o.Log)
			if err != nil {
				t.Fatalf("read child log: %v", err)
			}
			if !strings.Contains(string(log), tt.scenario.spec()) {
				t.Errorf("log %s does not record the command line", o.Log)
			}
			if tt.check != nil {
				tt.check(t, o)
			}
		})
	}
}

func TestRunnerStartFailure(t *testing.T) {
	r := &Runner{Argv: func(string) []string { return []string{filepath.Join(t.TempDir(), "missing")} }}
	o := r.Run(context.Background(), stress4x3)
	if o.Class != ClassError || o.Pass || !strings.Contains(o.Detail, "start probe child") {
		t.Errorf("have %s pass %v %q, want an error outcome naming the start", o.Class, o.Pass, o.Detail)
	}
}

func TestRunAllReport(t *testing.T) {
	r := childRunner(t, "fake")
	var seen []string
	r.OnEvent = func(s Scenario, e Event) {
		if e.Type == EventResult {
			seen = append(seen, s.Slug())
		}
	}
	ss := []Scenario{{Kind: KindInfo}, stress4x3, afterCommit}
	rep := r.runAll(context.Background(), ss)
	if !rep.Pass || rep.Passed != 3 || rep.Failed != 0 {
		t.Fatalf("have pass %v %d/%d, want all 3 passing: %+v", rep.Pass, rep.Passed, rep.Failed, rep.Outcomes)
	}
	if rep.Device == nil || rep.Device.Backend != "fake" {
		t.Errorf("have device %+v", rep.Device)
	}
	// The control aborts before its result line; the other two report one.
	if want := []string{"info", stress4x3.Slug()}; strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("have result events from %q, want %q", seen, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rep := r.runAll(ctx, ss); len(rep.Outcomes) != 0 {
		t.Errorf("have %d outcomes after cancel, want none", len(rep.Outcomes))
	}
}

// childPID reads the child's pid from its log's hello line.
func childPID(t *testing.T, o Outcome) int {
	t.Helper()
	data, err := os.ReadFile(o.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if e, err := parseLine([]byte(line)); err == nil && e.Type == EventHello {
			return e.PID
		}
	}
	t.Fatalf("no hello line in %s", o.Log)
	return 0
}

func TestRunnerCancelKillsChild(t *testing.T) {
	r := childRunner(t, "fake-hang")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.OnEvent = func(_ Scenario, e Event) {
		if e.Type == EventGo {
			cancel()
		}
	}
	o := r.Run(ctx, stress4x3)
	if o.Pass || o.TimedOut || o.Signal != "SIGTERM" {
		t.Errorf("have pass %v, timed out %v, signal %q; want a failed outcome killed by SIGTERM", o.Pass, o.TimedOut, o.Signal)
	}
	if pid := childPID(t, o); syscall.Kill(pid, 0) == nil {
		t.Errorf("cancelled child %d is still alive", pid)
	}
}
