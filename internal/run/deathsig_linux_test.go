package run

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const envDeathsigChild = "MPSPATCH_RUN_DEATHSIG_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envDeathsigChild) == "1" {
		// Start two sleeps, one tied to this process's life, and wait to be killed.
		tied, err := Start(context.Background(), Cmd{Argv: []string{"sleep", "1000"}, DieWithParent: true})
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		free, err := Start(context.Background(), Cmd{Argv: []string{"sleep", "1000"}})
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		fmt.Println(tied.Pid(), free.Pid())
		select {}
	}
	os.Exit(m.Run())
}

// TestDieWithParent: when the process that started them is SIGKILLed, a child started
// with DieWithParent dies too, and one started without it lives on (its own process group
// shields it from signals meant for the parent's).
func TestDieWithParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envDeathsigChild+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var tied, free int
	if _, err := fmt.Sscan(line, &tied, &free); err != nil {
		t.Fatalf("child said %q: %v", line, err)
	}
	defer syscall.Kill(free, syscall.SIGKILL)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The kernel delivers the signal as the parent exits; wait for it to be acted on.
	for i := 0; alive(tied); i++ {
		if i == 3000 {
			t.Fatalf("the child started with DieWithParent (pid %d) outlived its killed parent", tied)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !alive(free) {
		t.Errorf("the child started without DieWithParent (pid %d) died with its parent", free)
	}
}

// alive says whether pid runs (a zombie, dead but not yet reaped, does not count).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the last ')'.
	s := string(stat)
	rest := s[strings.LastIndexByte(s, ')')+1:]
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}
