package gitcli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxEnviron bounds how much of a process's environment is read (the kernel's limit on
// arguments and environment together is a few MiB).
const maxEnviron = 8 << 20

// scanProcesses looks through /proc at this user's processes (others' cannot be read):
// ours are those whose environment holds entry ("KEY=VALUE"); holders maps each of files
// that some other process has open to that process.
func scanProcesses(entry string, files []string) (ours []int, holders map[string]int, err error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, nil, errNoProcessTable
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, nil, err
	}
	want := map[string]bool{}
	for _, f := range files {
		want[f] = true
	}
	self := os.Getpid()
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == self {
			continue
		}
		if hasEnv(pid, entry) {
			ours = append(ours, pid)
			continue
		}
		if len(want) == 0 {
			continue
		}
		fds, err := os.ReadDir("/proc/" + n + "/fd")
		if err != nil {
			continue // gone, or not ours to look at
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join("/proc", n, "fd", fd.Name()))
			if err == nil && want[target] {
				if holders == nil {
					holders = map[string]int{}
				}
				holders[target] = pid
			}
		}
	}
	return ours, holders, nil
}

// hasEnv says whether process pid's environment holds entry. A process that is gone, a
// zombie (whose environment reads empty) or another user's is not ours.
func hasEnv(pid int, entry string) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	defer f.Close()
	env, err := io.ReadAll(io.LimitReader(f, maxEnviron))
	if err != nil {
		return false
	}
	e := []byte(entry)
	return bytes.HasPrefix(env, append(e, 0)) || bytes.Contains(env, append(append([]byte{0}, e...), 0))
}

// killProcess SIGKILLs pid if it is still a process whose environment holds entry. A
// pidfd pins the process between the check and the signal, so a pid reused meanwhile
// never gets it; kernels without pidfds (before 5.3) get a plain kill after the check.
func killProcess(pid int, entry string) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, syscall.ENOSYS) && hasEnv(pid, entry) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return
	}
	defer unix.Close(fd)
	if hasEnv(pid, entry) {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}
