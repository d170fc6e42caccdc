package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// asMainEnv makes the test binary act as the mpspatch command, for tests that must kill a
// whole mpspatch process (SIGKILL cannot be simulated in-process).
const asMainEnv = "MPSPATCH_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Main(ctx, os.Args[1:], System())
		stop()
		os.Exit(code)
	}
	code := m.Run()
	if fakePythonBuild.dir != "" {
		os.RemoveAll(fakePythonBuild.dir)
	}
	os.Exit(code)
}
