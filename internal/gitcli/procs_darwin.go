package gitcli

import (
	"bytes"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// scanProcesses looks at this user's processes through sysctl: ours are those whose
// environment (kern.procargs2: the argument count, the executable, then argv and the
// environment, each NUL-terminated) holds entry ("KEY=VALUE"). macOS offers no cheap way
// to see which process has a file open, so holders is always empty there: a lock is
// judged stale once no process of the interrupted clone is left.
func scanProcesses(entry string, _ []string) (ours []int, holders map[string]int, err error) {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.uid", os.Getuid())
	if err != nil {
		return nil, nil, errNoProcessTable
	}
	self := os.Getpid()
	for _, p := range procs {
		pid := int(p.Proc.P_pid)
		if pid != self && hasEnv(pid, entry) {
			ours = append(ours, pid)
		}
	}
	return ours, nil, nil
}

func hasEnv(pid int, entry string) bool {
	args, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return false
	}
	return bytes.Contains(args, append(append([]byte{0}, entry...), 0))
}

// killProcess SIGKILLs pid if it is still a process whose environment holds entry.
func killProcess(pid int, entry string) {
	if hasEnv(pid, entry) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
