package probe

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mpspatch/mpspatch/internal/lazyregexp"
)

// Class is how a probe child ended.
type Class string

const (
	// ClassOK: exit 0 and a passing result line.
	ClassOK Class = "ok"
	// ClassChecksFailed: the child ran to the end and its checks found problems
	// (cross-talk, a missing or doubled completed handler, a command buffer error).
	ClassChecksFailed Class = "checks-failed"
	// ClassTimeout: no exit within the time limit; the process group was killed.
	ClassTimeout Class = "timeout"
	// ClassAssertion: Metal (or its validation layer) aborted with "failed assertion".
	ClassAssertion Class = "metal-assertion"
	// ClassException: an uncaught Objective-C exception ended the process.
	ClassException Class = "objc-exception"
	// ClassSignal: a crash by signal (SIGSEGV, SIGBUS, ...), whether the kernel killed the
	// process or the Go runtime reported the signal and exited.
	ClassSignal Class = "signal"
	// ClassPanic: a Go panic or Go runtime fatal error (a bug in mpspatch, not in Metal).
	ClassPanic Class = "panic"
	// ClassError: anything else: the child could not start, could not open the device,
	// or exited without a result.
	ClassError Class = "error"
)

// passes says whether an outcome of class c passes a scenario of kind k: stress and info
// runs must be ok; negative controls must be stopped by a Metal assertion, which proves
// the probe recognises Metal's messages.
func passes(k Kind, c Class) bool {
	if k.IsControl() {
		return c == ClassAssertion
	}
	return c == ClassOK
}

// StderrSigns are the lines of a child's stderr that classification looks at. Each is the
// first such line, trimmed; empty when absent.
type StderrSigns struct {
	Assertion string `json:"assertion,omitempty"`
	Exception string `json:"exception,omitempty"`
	Panic     string `json:"panic,omitempty"`
	Fatal     string `json:"fatal,omitempty"`
	// Signal is the signal name the Go runtime reported ("SIGSEGV"), and SignalLine the
	// line it was reported on.
	Signal     string `json:"signal,omitempty"`
	SignalLine string `json:"signal_line,omitempty"`
}

var (
	goSignalHeader = lazyregexp.New(`^(SIG[A-Z]+[0-9]*): `)
	goSignalInline = lazyregexp.New(`^\[signal (SIG[A-Z]+[0-9]*)\b`)
)

// observe updates the signs with one stderr line.
func (s *StderrSigns) observe(line string) {
	line = strings.TrimSpace(line)
	switch {
	case line == "":
	case s.Assertion == "" && strings.Contains(line, "failed assertion"):
		s.Assertion = line
	case s.Exception == "" && strings.Contains(line, "uncaught exception"):
		s.Exception = line
	case s.Panic == "" && strings.HasPrefix(line, "panic: "):
		s.Panic = line
	case s.Fatal == "" && strings.HasPrefix(line, "fatal error: "):
		s.Fatal = line
	}
	if s.Signal == "" {
		if m := goSignalHeader().FindStringSubmatch(line); m != nil {
			s.Signal, s.SignalLine = m[1], line
		} else if m := goSignalInline().FindStringSubmatch(line); m != nil {
			s.Signal, s.SignalLine = m[1], line
		}
	}
}

// stderrLog collects a child's stderr: the signs for classification and the last lines
// for the report. It is an io.Writer for run.Cmd.Stderr.
type stderrLog struct {
	mu    sync.Mutex
	split lineSplitter
	signs StderrSigns
	tail  []string
}

// stderrTail is how many last stderr lines an outcome keeps.
const stderrTail = 30

// Write implements io.Writer; it never fails.
func (l *stderrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.split.write(p, func(line []byte) { l.take(string(line)) })
	return len(p), nil
}

func (l *stderrLog) take(line string) {
	l.signs.observe(line)
	if len(l.tail) == stderrTail {
		copy(l.tail, l.tail[1:])
		l.tail = l.tail[:stderrTail-1]
	}
	l.tail = append(l.tail, line)
}

// Close takes the unterminated last line, if any.
func (l *stderrLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.split.partial) > 0 {
		l.take(string(l.split.partial))
		l.split.partial = nil
	}
	return nil
}

// Signs returns what the stderr showed.
func (l *stderrLog) Signs() StderrSigns {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.signs
}

// Tail returns the last lines of stderr.
func (l *stderrLog) Tail() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.tail...)
}

// evidence is everything known about one finished child.
type evidence struct {
	Kind     Kind
	ExitCode int            // -1 when killed by a signal
	Signal   syscall.Signal // the signal that killed it, if any
	TimedOut bool
	Timeout  time.Duration
	Events   []Event
	Torn     string
	Stderr   StderrSigns
}

// classify decides how a child ended and says why in one line. The order matters: a
// timeout wins (the kill is ours); then what the child's stderr says about the cause
// (a Metal assertion, then an Objective-C exception, both of which end in SIGABRT); then
// a Go panic (its trace may mention a signal too); then a signal, as the Go runtime
// reported it or else as the wait status shows it; then the exit status and the result.
func classify(ev evidence) (Class, string) {
	prog := ProgressOf(ev.Events)
	where := prog.String()
	switch {
	case ev.TimedOut:
		return ClassTimeout, fmt.Sprintf("no exit within %s; killed the process group; %s", ev.Timeout, where)
	case ev.Stderr.Assertion != "":
		return ClassAssertion, ev.Stderr.Assertion
	case ev.Stderr.Exception != "":
		return ClassException, ev.Stderr.Exception
	case ev.Stderr.Panic != "" && !strings.Contains(ev.Stderr.Fatal, "unexpected signal"):
		return ClassPanic, ev.Stderr.Panic + "; " + where
	case ev.Stderr.Signal != "":
		// The Go runtime caught the signal and reported it before exiting (or, with
		// GOTRACEBACK=crash, before dying by SIGABRT): its report names the real cause.
		return ClassSignal, fmt.Sprintf("%s reported by the Go runtime (%s); %s", ev.Stderr.Signal, ev.Stderr.SignalLine, where)
	case ev.Signal != 0:
		return ClassSignal, fmt.Sprintf("killed by %s; %s", signalName(ev.Signal), where)
	case ev.Stderr.Fatal != "":
		return ClassPanic, ev.Stderr.Fatal + "; " + where
	}
	res := prog.Result
	var errMsg string
	for _, e := range ev.Events {
		if e.Type == EventError && errMsg == "" {
			errMsg = e.Message
		}
	}
	switch {
	case res == nil && errMsg != "":
		return ClassError, fmt.Sprintf("exit status %d: %s", ev.ExitCode, errMsg)
	case res == nil:
		msg := fmt.Sprintf("exit status %d without a result line; %s", ev.ExitCode, where)
		if ev.Torn != "" {
			msg += fmt.Sprintf("; last line torn: %q", clip(ev.Torn, 80))
		}
		return ClassError, msg
	case res.OK && ev.ExitCode == 0:
		return ClassOK, ""
	case res.OK:
		return ClassError, fmt.Sprintf("result ok but exit status %d", ev.ExitCode)
	case errMsg != "" && len(res.Failures) == 0:
		return ClassError, errMsg
	}
	detail := "checks failed"
	if len(res.Failures) > 0 {
		detail = res.Failures[0]
		if n := len(res.Failures) - 1; n > 0 {
			detail += fmt.Sprintf(" (and %d more)", n)
		}
	}
	if errMsg != "" && ev.ExitCode != 1 {
		return ClassError, detail
	}
	return ClassChecksFailed, detail
}

// Progress is how far a child got, from its events.
type Progress struct {
	Ready      int      `json:"ready"`
	Released   bool     `json:"released"`
	Iterations int      `json:"iterations"`
	Finished   int      `json:"finished"`
	Last       string   `json:"last,omitempty"`
	Result     *Summary `json:"-"`
}

// ProgressOf folds a child's events into its progress.
func ProgressOf(events []Event) Progress {
	var p Progress
	for _, e := range events {
		switch e.Type {
		case EventReady:
			p.Ready++
		case EventGo:
			p.Released = true
		case EventIter:
			p.Iterations++
			p.Last = fmt.Sprintf("worker %d finished iteration %d", e.W, e.I)
		case EventWorker:
			p.Finished++
		case EventResult:
			p.Result = e.Result
		}
		if e.Type != EventIter {
			p.Last = "last event: " + e.Type
		}
	}
	return p
}

func (p Progress) String() string {
	switch {
	case p.Result != nil:
		return "after its result"
	case p.Ready == 0 && !p.Released && p.Last == "":
		return "before any protocol line"
	case !p.Released && p.Ready > 0:
		return fmt.Sprintf("during setup (%d workers ready)", p.Ready)
	case p.Released:
		return fmt.Sprintf("%d iterations done, %d workers finished; %s", p.Iterations, p.Finished, p.Last)
	}
	return p.Last
}

// signalName is the conventional name of a signal ("SIGSEGV"); Go's Signal.String gives
// a description instead.
func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGILL:
		return "SIGILL"
	case syscall.SIGFPE:
		return "SIGFPE"
	case syscall.SIGTRAP:
		return "SIGTRAP"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return fmt.Sprintf("signal %d", int(s))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
