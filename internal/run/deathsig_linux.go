package run

import (
	"os/exec"
	"syscall"
)

// setDieWithParent sets PR_SET_PDEATHSIG for the child. Linux sends it when the thread
// that forked the child exits, not only the process: the Go runtime never ends a thread
// that an unlocked goroutine (the one running Start) could be on, so in practice it fires
// when mpspatch exits or is killed.
func setDieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
