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
	code := cli.Main(ctx, os.Args[1:], cli.System())
	stop()
	os.Exit(code)
}
