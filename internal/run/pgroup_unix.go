//go:build unix

package run

import (
	"os/exec"
	"syscall"
)

func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	// A negative pid addresses the whole process group the child leads.
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
