// Command mpspatch keeps the PyTorch MPS thread-safety patch series alive.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mpspatch/mpspatch/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C cancels ctx and lets the command stop cleanly; once it has, signals
	// get their default action back, so a second one ends a process stuck in a read.
	context.AfterFunc(ctx, stop)
	code := cli.Main(ctx, os.Args[1:], cli.System())
	stop()
	os.Exit(code)
}
