package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Exit codes are an API: scripts and CI branch on them. Keep in sync with DESIGN.md,
// docs/exit-codes.md and the help text in root.go.
const (
	ExitOK          = 0   // success
	ExitCheckFailed = 1   // lint, verify or audit found problems
	ExitUsage       = 2   // bad flags, arguments or configuration
	ExitConflict    = 3   // a patch does not apply; nothing was written
	ExitBuildFailed = 4   // the PyTorch build failed
	ExitUnsupported = 5   // environment cannot do this (no Metal, no python, no git)
	ExitInterrupted = 130 // Ctrl-C or SIGTERM
)

// exitError attaches an exit code to an error. Commands wrap their failures with withCode;
// everything else is mapped in exitCodeOf.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode returns err carrying exit code code; nil stays nil.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// usageErrorf is a bad-invocation error (exit 2).
func usageErrorf(format string, args ...any) error {
	return withCode(ExitUsage, fmt.Errorf(format, args...))
}

// silentError carries an exit code whose explanation was already printed (for example a
// failing check whose findings are the result on stdout).
type silentError struct{ code int }

func (e *silentError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func exitCodeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	var s *silentError
	if errors.As(err, &s) {
		return s.code
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return ExitCheckFailed
}

// codeNames are the stable names of the exit codes in the --json error document, so a
// script can branch on "conflict" as well as on 3.
var codeNames = map[int]string{
	ExitOK:          "ok",
	ExitCheckFailed: "checks_failed",
	ExitUsage:       "usage",
	ExitConflict:    "conflict",
	ExitBuildFailed: "build_failed",
	ExitUnsupported: "unsupported",
	ExitInterrupted: "interrupted",
}

// codeSummaries say what an exit code means, for failures whose explanation is the result
// itself (a silentError) and so carry no message of their own.
var codeSummaries = map[int]string{
	ExitCheckFailed: "checks failed",
	ExitUsage:       "usage or config error",
	ExitConflict:    "patch conflict; nothing was written",
	ExitBuildFailed: "build failed",
	ExitUnsupported: "environment unsupported",
	ExitInterrupted: "interrupted",
}

func codeName(code int) string {
	if n, ok := codeNames[code]; ok {
		return n
	}
	return fmt.Sprintf("exit_%d", code)
}

// errorMessage is the one-line text of a failure as users see it: a silent failure says
// what its exit code means; an interruption says "interrupted", whatever context.Canceled
// was wrapped in, plus the attempt it cut short.
func errorMessage(err error, code int) string {
	var s *silentError
	if errors.As(err, &s) {
		return codeSummaries[code]
	}
	msg := err.Error()
	if code == ExitInterrupted {
		msg = strings.TrimSuffix(msg, context.Canceled.Error())
		msg = strings.TrimRight(msg, ": ")
		switch {
		case msg == "":
			return "interrupted"
		case strings.Contains(msg, "interrupted"):
			return msg // "build interrupted (log: ...)" says it already
		}
		return "interrupted: " + msg
	}
	return msg
}
