package cli

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// InterruptContext returns the context the command named by args runs under, and the
// function that releases it (call it before exiting). The first SIGINT or SIGTERM
// cancels the context, so that the command stops what it started, rolls back what it was
// writing and says "interrupted" (exit 130, and the error document under --json); once it
// has, the signals get their default action back, so a second one ends a process stuck in
// a read.
//
// A command that only reads and starts nothing (readOnlyCommand) runs under
// context.Background instead and keeps the default action: ending it at once loses
// nothing (its shared lock on the tree dies with it), and os/signal's set-up, a goroutine
// on a thread of its own, costs such a command about 0.4 ms and 40 page faults, most of
// what is left of its start-up beyond Go's own (docs/performance.md, start-up).
func InterruptContext(args []string) (context.Context, context.CancelFunc) {
	if readOnlyCommand(args) {
		return context.Background(), func() {}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}

// readOnlyCommand says whether args run a command that writes no file and starts no
// process: version, status, check without --upstream (which fetches), and audit without
// --write-baseline. Anything else, including help and words it cannot place, counts as
// writing.
func readOnlyCommand(args []string) bool {
	switch commandToRun(args) {
	case "version", "status":
		return true
	case "check":
		return !hasFlag(args, "--upstream")
	case "audit":
		return !hasFlag(args, "--write-baseline")
	}
	return false
}

// hasFlag says whether the long flag name is among the words before "--", alone or with
// its value after "=".
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}
