//go:build !linux

package probe

import (
	"os"
	"runtime/debug"
	"syscall"
)

// dieBySignal sends sig to the process. Elsewhere than Linux the Go runtime keeps its
// handler: it reports the signal on stderr ("SIGSEGV: segmentation violation") and, with
// the crash traceback, dies by SIGABRT; classify reads the signal from that report.
func dieBySignal(sig syscall.Signal) {
	debug.SetTraceback("crash")
	_ = syscall.Kill(os.Getpid(), sig)
	select {}
}
