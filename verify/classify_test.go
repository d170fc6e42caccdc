package verify

import (
	"reflect"
	"syscall"
	"testing"

	"github.com/mpspatch/mpspatch/internal/run"
)

func TestMatchSignatures(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"double commit, as Metal prints it",
			"-[MTLDebugCommandBuffer commit]:229: failed assertion `commit an already committed command buffer'",
			[]string{"double-commit"}},
		{"handler after commit",
			"-[_MTLCommandBuffer addCompletedHandler:]:976: failed assertion `Completed handler provided after commit call'\n" +
				"failed assertion `Scheduled handler provided after commit call'",
			[]string{"handler-after-commit"}},
		{"encoder already encoding",
			"failed assertion `A command encoder is already encoding to this command buffer'",
			[]string{"encoder-already-encoding"}},
		{"kernel dag", "RuntimeError: Invalid KernelDAG, cannot compile", []string{"invalid-kerneldag"}},
		{"matmul", "MPSNDArrayMatrixMultiplication: A and B index not found", []string{"matmul-index-not-found"}},
		{"unknown metal assertion falls back to the generic name",
			"-[MTLDebugComputeCommandEncoder setBuffer:offset:atIndex:]: failed assertion `buffer is nil'",
			[]string{"metal-assertion"}},
		{"two specific ones, in table order",
			"Invalid KernelDAG\nfailed assertion `commit an already committed command buffer'",
			[]string{"double-commit", "invalid-kerneldag"}},
		{"nothing known", "Segmentation fault (core dumped)", nil},
		{"case matters: Metal's exact words only", "invalid kerneldag", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if have := matchSignatures(tc.text); !reflect.DeepEqual(have, tc.want) {
				t.Errorf("have %v, want %v", have, tc.want)
			}
		})
	}
}

func TestSignatureTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range crashSignatures {
		if s.Name == "" || s.Match == "" || s.Reason == "" {
			t.Errorf("incomplete signature %+v", s)
		}
		if seen[s.Name] {
			t.Errorf("duplicate signature name %s", s.Name)
		}
		seen[s.Name] = true
		if have := matchSignatures(s.Match); len(have) == 0 || have[0] != s.Name {
			t.Errorf("%s does not match its own text: %v", s.Name, have)
		}
	}
	if crashSignatures[len(crashSignatures)-1].Name != "metal-assertion" {
		t.Error("the generic metal-assertion must come last so specific names win")
	}
}

func TestClassifyExit(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  run.Result
		want processDeath
		str  string
	}{
		{"killed by SIGSEGV", run.Result{ExitCode: -1, Signal: syscall.SIGSEGV}, processDeath{"SIGSEGV", -1}, "SIGSEGV"},
		{"killed by SIGABRT", run.Result{ExitCode: -1, Signal: syscall.SIGABRT}, processDeath{"SIGABRT", -1}, "SIGABRT"},
		{"shell-reported abort", run.Result{ExitCode: 134}, processDeath{"SIGABRT", 134}, "SIGABRT (exit 134)"},
		{"shell-reported segfault", run.Result{ExitCode: 139}, processDeath{"SIGSEGV", 139}, "SIGSEGV (exit 139)"},
		{"plain exit", run.Result{ExitCode: 3}, processDeath{"", 3}, "exit status 3"},
		{"exit 255 is not a signal", run.Result{ExitCode: 255}, processDeath{"", 255}, "exit status 255"},
		{"unnamed signal", run.Result{ExitCode: -1, Signal: syscall.Signal(40)}, processDeath{"signal 40", -1}, "signal 40"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := classifyExit(tc.res)
			if have != tc.want {
				t.Errorf("have %+v, want %+v", have, tc.want)
			}
			if have.String() != tc.str {
				t.Errorf("String: have %q, want %q", have.String(), tc.str)
			}
		})
	}
}

func TestPytestFinished(t *testing.T) {
	for _, tc := range []struct {
		res  run.Result
		want bool
	}{
		{run.Result{ExitCode: 0}, true},
		{run.Result{ExitCode: 1}, true},
		{run.Result{ExitCode: 5}, true},
		{run.Result{ExitCode: 2}, false},
		{run.Result{ExitCode: 4}, false},
		{run.Result{ExitCode: -1, Signal: syscall.SIGSEGV}, false},
		{run.Result{ExitCode: 0, TimedOut: true}, false},
	} {
		if have := pytestFinished(tc.res); have != tc.want {
			t.Errorf("%+v: have %v, want %v", tc.res, have, tc.want)
		}
	}
}

func TestTellingLine(t *testing.T) {
	for _, tc := range []struct{ name, stderr, want string }{
		{"signature wins", "noise\n-[X commit]: failed assertion `commit an already committed command buffer'\nFatal Python error: Aborted\n  File \"x.py\", line 1",
			"-[X commit]: failed assertion `commit an already committed command buffer'"},
		{"fatal error line", "Fatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most recent call first):\n  File \"t.py\", line 3 in test_b\n",
			"Fatal Python error: Segmentation fault"},
		{"last non-frame line", "warming up\nlast words\n  File \"t.py\", line 3\n", "last words"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if have := tellingLine(tc.stderr); have != tc.want {
				t.Errorf("have %q, want %q", have, tc.want)
			}
		})
	}
}

// The verdict rule: a test passes only if all its repetitions pass; the worst one decides.
func TestVerdictRule(t *testing.T) {
	res := func(id string, rep int, o Outcome) Result {
		return Result{Target: TargetPatched, ID: id, File: "f.py", Repeat: rep, Outcome: o, Duration: 1}
	}
	r := &Report{Info: RunInfo{Repeat: 3}}
	for _, x := range []Result{
		res("all-pass", 1, Pass), res("all-pass", 2, Pass), res("all-pass", 3, Pass),
		res("one-crash", 1, Pass), res("one-crash", 2, Crash), res("one-crash", 3, Pass),
		res("fail-then-timeout", 1, Fail), res("fail-then-timeout", 2, Timeout), res("fail-then-timeout", 3, Pass),
		res("skipped", 1, Skip), res("skipped", 2, Skip), res("skipped", 3, Skip),
	} {
		r.Result(x)
	}
	want := map[string]struct {
		outcome Outcome
		passes  int
		short   string
	}{
		"all-pass":          {Pass, 3, "pass 3/3"},
		"one-crash":         {Crash, 2, "crash 2/3"},
		"fail-then-timeout": {Timeout, 1, "timeout 1/3"},
		"skipped":           {Skip, 3, "skip 3/3"},
	}
	rows := r.Rows()
	if len(rows) != len(want) {
		t.Fatalf("have %d rows, want %d", len(rows), len(want))
	}
	for _, row := range rows {
		t.Run(row.ID, func(t *testing.T) {
			v := row.ByTarget[TargetPatched]
			w := want[row.ID]
			if v.Outcome != w.outcome || v.Passes != w.passes || v.Runs != 3 || v.Short() != w.short {
				t.Errorf("have %+v (%s), want %+v", v, v.Short(), w)
			}
		})
	}
	if !r.Failed() || r.Status() != "fail" {
		t.Errorf("a crash in one repetition must fail the run: Failed %v, Status %s", r.Failed(), r.Status())
	}
	if have := CountsLine(r.Counts(TargetPatched)); have != "1 pass, 1 crash, 1 timeout, 1 skip" {
		t.Errorf("counts: have %q", have)
	}
}

func TestBaselineDoesNotFailTheRun(t *testing.T) {
	r := &Report{}
	r.Result(Result{Target: TargetPatched, ID: "a", Outcome: Pass})
	r.Result(Result{Target: TargetBaseline, ID: "a", Outcome: Crash})
	if r.Failed() {
		t.Error("a baseline (stock torch) crash must not fail the run")
	}
	if have := r.Targets(); !reflect.DeepEqual(have, []string{TargetPatched, TargetBaseline}) {
		t.Errorf("targets: have %v", have)
	}
}
