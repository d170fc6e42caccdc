package probe

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	okResult := []Event{{Type: EventHello}, {Type: EventGo}, {Type: EventResult, Result: &Summary{OK: true}}}
	failed := []Event{{Type: EventGo}, {Type: EventResult, Result: &Summary{Failures: []string{"worker 1: bad", "worker 2: bad"}}}}
	midRun := []Event{{Type: EventReady}, {Type: EventReady}, {Type: EventGo}, {Type: EventIter, W: 1, I: 4}}
	tests := []struct {
		name       string
		ev         evidence
		want       Class
		wantDetail string
	}{
		{"ok", evidence{Events: okResult}, ClassOK, ""},
		{"checks failed", evidence{ExitCode: 1, Events: failed}, ClassChecksFailed, "worker 1: bad (and 1 more)"},
		{"timeout beats everything", evidence{TimedOut: true, Timeout: 3 * time.Second, Signal: syscall.SIGTERM, Events: midRun,
			Stderr: StderrSigns{Assertion: "failed assertion x"}},
			ClassTimeout, "no exit within 3s; killed the process group; 1 iterations done, 0 workers finished; worker 1 finished iteration 4"},
		{"assertion beats the signal it raises", evidence{Signal: syscall.SIGABRT, ExitCode: -1,
			Stderr: StderrSigns{Assertion: "-[X y]: failed assertion `z'"}}, ClassAssertion, "-[X y]: failed assertion `z'"},
		{"objc exception", evidence{Signal: syscall.SIGABRT, Stderr: StderrSigns{Exception: "*** Terminating app due to uncaught exception 'NSInvalidArgumentException'"}},
			ClassException, "NSInvalidArgumentException"},
		{"go panic", evidence{ExitCode: 2, Events: midRun, Stderr: StderrSigns{Panic: "panic: boom", Signal: "SIGSEGV"}},
			ClassPanic, "panic: boom; 1 iterations done"},
		{"signal in foreign code reported by the runtime", evidence{ExitCode: 2, Stderr: StderrSigns{
			Fatal: "fatal error: unexpected signal during runtime execution", Signal: "SIGBUS",
			SignalLine: "[signal SIGBUS: bus error code=0x1 addr=0x0 pc=0x1]"}},
			ClassSignal, "SIGBUS reported by the Go runtime ([signal SIGBUS: bus error"},
		{"killed by signal", evidence{ExitCode: -1, Signal: syscall.SIGSEGV, Events: midRun[:2]},
			ClassSignal, "killed by SIGSEGV; during setup (2 workers ready)"},
		{"runtime fatal error", evidence{ExitCode: 2, Stderr: StderrSigns{Fatal: "fatal error: concurrent map writes"}},
			ClassPanic, "fatal error: concurrent map writes; before any protocol line"},
		{"error event", evidence{ExitCode: 5, Events: []Event{{Type: EventHello}, {Type: EventError, Message: "no device"}}},
			ClassError, "exit status 5: no device"},
		{"no result", evidence{ExitCode: 0, Events: midRun, Torn: `{"v":1,"ty`}, ClassError,
			`exit status 0 without a result line; 1 iterations done, 0 workers finished; worker 1 finished iteration 4; last line torn: "{\"v\":1,\"ty"`},
		{"ok result but bad exit", evidence{ExitCode: 3, Events: okResult}, ClassError, "result ok but exit status 3"},
		{"failed result with error event and odd exit", evidence{ExitCode: 3, Events: append([]Event{{Type: EventError, Message: "write failed"}}, failed...)},
			ClassError, "worker 1: bad"},
		{"failed result without failures", evidence{ExitCode: 1, Events: []Event{{Type: EventResult, Result: &Summary{}}}},
			ClassChecksFailed, "checks failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, detail := classify(tt.ev)
			if have != tt.want || !strings.Contains(detail, tt.wantDetail) {
				t.Errorf("have %s %q, want %s containing %q", have, detail, tt.want, tt.wantDetail)
			}
		})
	}
}

func TestPasses(t *testing.T) {
	tests := []struct {
		kind Kind
		c    Class
		want bool
	}{
		{KindStress, ClassOK, true},
		{KindInfo, ClassOK, true},
		{KindStress, ClassAssertion, false},
		{KindHandlerAfterCommit, ClassAssertion, true},
		{KindSharedCommandBuffer, ClassAssertion, true},
		{KindSharedCommandBuffer, ClassOK, false},
		{KindHandlerAfterCommit, ClassChecksFailed, false},
		{KindHandlerAfterCommit, ClassSignal, false},
	}
	for _, tt := range tests {
		if have := passes(tt.kind, tt.c); have != tt.want {
			t.Errorf("passes(%s, %s) = %v, want %v", tt.kind, tt.c, have, tt.want)
		}
	}
}

func TestStderrSigns(t *testing.T) {
	stderr := strings.Join([]string{
		"2025-12-13 10:00:00.000 python[123:456] Metal API Validation Enabled",
		"-[MTLDebugCommandBuffer addCompletedHandler:]: failed assertion `Scheduled handler provided after commit call'",
		"-[MTLDebugCommandBuffer commit]: failed assertion `second'",
		"SIGABRT: abort",
		"PC=0x18d1 m=5 sigcode=0",
		"panic: runtime error: index out of range [3] with length 3",
		"[signal SIGSEGV: segmentation violation code=0x2 addr=0x0 pc=0x0]",
		"fatal error: unexpected signal during runtime execution",
		"*** Terminating app due to uncaught exception 'NSRangeException'",
		"goroutine 1 [running]:",
	}, "\n")
	l := &stderrLog{}
	for i := 0; i < len(stderr); i += 13 {
		l.Write([]byte(stderr[i:min(i+13, len(stderr))]))
	}
	l.Close()
	want := StderrSigns{
		Assertion:  "-[MTLDebugCommandBuffer addCompletedHandler:]: failed assertion `Scheduled handler provided after commit call'",
		Exception:  "*** Terminating app due to uncaught exception 'NSRangeException'",
		Panic:      "panic: runtime error: index out of range [3] with length 3",
		Fatal:      "fatal error: unexpected signal during runtime execution",
		Signal:     "SIGABRT",
		SignalLine: "SIGABRT: abort",
	}
	if have := l.Signs(); have != want {
		t.Errorf("have %+v\nwant %+v", have, want)
	}
	tail := l.Tail()
	if len(tail) != 10 || tail[9] != "goroutine 1 [running]:" {
		t.Errorf("have tail %q", tail)
	}
	for range 100 {
		l.Write([]byte("more\n"))
	}
	if n := len(l.Tail()); n != stderrTail {
		t.Errorf("have %d tail lines, want %d", n, stderrTail)
	}
}

func TestSignalName(t *testing.T) {
	for sig, want := range map[syscall.Signal]string{syscall.SIGSEGV: "SIGSEGV", syscall.SIGBUS: "SIGBUS",
		syscall.SIGABRT: "SIGABRT", syscall.SIGKILL: "SIGKILL", syscall.Signal(77): "signal 77"} {
		if have := signalName(sig); have != want {
			t.Errorf("signalName(%d) = %q, want %q", int(sig), have, want)
		}
	}
}
