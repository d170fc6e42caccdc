//go:build unix

package cli

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestInterruptContext: a command that writes gets a context that the first SIGINT
// cancels (the signal is caught, so this test process survives it); a read-only one
// gets one that nothing cancels, and no handler.
func TestInterruptContext(t *testing.T) {
	ctx, stop := InterruptContext([]string{"status"})
	if ctx.Done() != nil {
		t.Errorf("status runs under a cancellable context")
	}
	stop()

	ctx, stop = InterruptContext([]string{"apply"})
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGINT did not cancel apply's context")
	}
}
