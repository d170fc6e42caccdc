// Command mpspatch keeps the PyTorch MPS thread-safety patch series alive.
package main

import (
	"os"

	"github.com/mpspatch/mpspatch/internal/cli"
)

func main() {
	ctx, stop := cli.InterruptContext(os.Args[1:])
	code := cli.Main(ctx, os.Args[1:], cli.System())
	stop()
	os.Exit(code)
}
