package verify

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/mpspatch/mpspatch/internal/run"
)

// Outcome is how one test ended.
type Outcome string

// The outcomes a test can have. Crash and Timeout are decided by the runner (the process died
// or was killed while the test ran); the others are reported by the suite itself.
const (
	Pass    Outcome = "pass"
	Fail    Outcome = "fail"    // an assertion or a wrong result
	Error   Outcome = "error"   // another exception, a setup error, or a broken suite process
	Crash   Outcome = "crash"   // the process died (signal, abort, exit) while the test ran
	Timeout Outcome = "timeout" // the test ran past the per-test limit; its process group was killed
	Skip    Outcome = "skip"
)

// severity orders outcomes from harmless to worst; the verdict of repeated runs is the worst.
var severity = map[Outcome]int{Skip: 0, Pass: 1, Fail: 2, Error: 3, Timeout: 4, Crash: 5}

// worse reports whether a is a worse outcome than b.
func worse(a, b Outcome) bool { return severity[a] > severity[b] }

// Failed reports whether o makes the run fail (exit 1).
func (o Outcome) Failed() bool { return o == Fail || o == Error || o == Crash || o == Timeout }

// parseOutcome maps the suite's outcome strings; anything unknown is an error so that a
// misspelt outcome never counts as a pass.
func parseOutcome(s string) Outcome {
	switch Outcome(s) {
	case Pass, Fail, Error, Skip:
		return Outcome(s)
	}
	return Error
}

// crashSignature is a known crash or failure message and the short name reports give it.
type crashSignature struct {
	Name   string // short name, stable: reports and scripts key on it
	Match  string // substring searched for in the process's stderr or the failure message
	Reason string // one line for the reader of the report
}

// crashSignatures are the messages the seeds traced to MPS thread-safety bugs, most specific first.
// The generic Metal assertion comes last so that a specific name wins when both match.
var crashSignatures = []crashSignature{
	{"double-commit", "commit an already committed command buffer",
		"two threads committed one shared MTLCommandBuffer"},
	{"handler-after-commit", "Scheduled handler provided after commit call",
		"a completion handler was added to a command buffer another thread had committed"},
	{"encoder-already-encoding", "A command encoder is already encoding",
		"two threads opened encoders on one command buffer at once"},
	{"invalid-kerneldag", "Invalid KernelDAG",
		"MPSGraph compiled or encoded one cached graph from several threads"},
	{"matmul-index-not-found", "A and B index not found",
		"MPSNDArrayMatrixMultiplication kernel shared between threads (Linear no-graph path)"},
	{"metal-assertion", "failed assertion",
		"a Metal API validation assertion fired"},
}

// matchSignatures returns the names of every known signature found in text, in table order.
// The generic metal-assertion is left out when a more specific signature matched.
func matchSignatures(text string) []string {
	var names []string
	for _, s := range crashSignatures {
		if !strings.Contains(text, s.Match) {
			continue
		}
		if s.Name == "metal-assertion" && len(names) > 0 {
			continue
		}
		names = append(names, s.Name)
	}
	return names
}

// signatureReason returns the reason line of a signature name, or "".
func signatureReason(name string) string {
	for _, s := range crashSignatures {
		if s.Name == name {
			return s.Reason
		}
	}
	return ""
}

// signalNames names the signals a crashed suite process is likely to die of. Built from the
// syscall constants so that the numbers are right on both linux and darwin.
var signalNames = map[syscall.Signal]string{
	syscall.SIGSEGV: "SIGSEGV",
	syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS:  "SIGBUS",
	syscall.SIGILL:  "SIGILL",
	syscall.SIGFPE:  "SIGFPE",
	syscall.SIGKILL: "SIGKILL",
	syscall.SIGTERM: "SIGTERM",
	syscall.SIGINT:  "SIGINT",
	syscall.SIGTRAP: "SIGTRAP",
	syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGPIPE: "SIGPIPE",
}

// signalName returns "SIGSEGV" for syscall.SIGSEGV, "signal 42" for one not in the table.
func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}

// processDeath says how a process that did not finish normally ended.
type processDeath struct {
	Signal   string // "SIGSEGV"; empty when it exited
	ExitCode int    // the exit status when it exited; -1 when killed by a signal
}

// String renders the death for a report: "SIGSEGV", "SIGABRT (exit 134)", "exit status 3".
func (d processDeath) String() string {
	switch {
	case d.Signal != "" && d.ExitCode > 128:
		return fmt.Sprintf("%s (exit %d)", d.Signal, d.ExitCode)
	case d.Signal != "":
		return d.Signal
	default:
		return fmt.Sprintf("exit status %d", d.ExitCode)
	}
}

// classifyExit describes how a process ended. A shell or wrapper reports a child's death by
// signal n as exit status 128+n (134 is SIGABRT, 139 is SIGSEGV); that is read as the signal.
func classifyExit(r run.Result) processDeath {
	if r.Signal != 0 {
		return processDeath{Signal: signalName(r.Signal), ExitCode: -1}
	}
	if r.ExitCode > 128 && r.ExitCode < 128+65 {
		return processDeath{Signal: signalName(syscall.Signal(r.ExitCode - 128)), ExitCode: r.ExitCode}
	}
	return processDeath{ExitCode: r.ExitCode}
}

// pytest's own exit statuses: 0 all passed, 1 some failed, 5 nothing collected. Anything
// else (2 interrupted, 3 internal error, 4 usage error, a signal) means the process broke.
func pytestFinished(r run.Result) bool {
	return r.Signal == 0 && !r.TimedOut && (r.ExitCode == 0 || r.ExitCode == 1 || r.ExitCode == 5)
}
