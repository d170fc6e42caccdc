package run

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunOutcomes(t *testing.T) {
	tests := []struct {
		name     string
		argv     []string
		timeout  time.Duration
		wantCode int
		wantSig  syscall.Signal
		wantTO   bool
		wantErr  bool
	}{
		{"ok", []string{"true"}, 0, 0, 0, false, false},
		{"exit 3", []string{"sh", "-c", "exit 3"}, 0, 3, 0, false, true},
		{"signal", []string{"sh", "-c", "kill -SEGV $$"}, 0, -1, syscall.SIGSEGV, false, true},
		{"timeout", []string{"sleep", "30"}, 100 * time.Millisecond, -1, syscall.SIGTERM, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), Cmd{Argv: tt.argv, Timeout: tt.timeout, KillGrace: time.Second})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err: have %v, want error=%v", err, tt.wantErr)
			}
			if res.ExitCode != tt.wantCode || res.Signal != tt.wantSig || res.TimedOut != tt.wantTO {
				t.Errorf("have %+v, want code=%d signal=%v timedOut=%v", res, tt.wantCode, tt.wantSig, tt.wantTO)
			}
			var ee *ExitError
			if tt.wantErr && !errors.As(err, &ee) {
				t.Errorf("error %T is not *ExitError", err)
			}
		})
	}
}

func TestKillReachesGrandchildren(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild.pid")
	// The shell starts a background sleep (a grandchild), records its pid, then waits.
	script := "sleep 30 & echo $! > " + pidFile + "; wait"
	ctx, cancel := context.WithCancel(context.Background())
	p, err := Start(ctx, Cmd{Argv: []string{"sh", "-c", script}, KillGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for i := 0; i < 100 && pid == 0; i++ {
		time.Sleep(20 * time.Millisecond)
		if data, err := os.ReadFile(pidFile); err == nil && len(bytes.TrimSpace(data)) > 0 {
			pid = atoi(strings.TrimSpace(string(data)))
		}
	}
	if pid == 0 {
		t.Fatal("grandchild never started")
	}
	cancel()
	_, _ = p.Wait()
	for i := 0; i < 100; i++ {
		if syscall.Kill(pid, 0) != nil {
			return // gone
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("grandchild %d survived the kill of its process group", pid)
}

func TestLogAndOutput(t *testing.T) {
	log := filepath.Join(t.TempDir(), "x.log")
	out, err := Output(context.Background(), Cmd{Argv: []string{"sh", "-c", "echo out; echo err >&2"}, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "out\n" {
		t.Errorf("stdout: have %q", out)
	}
	data, _ := os.ReadFile(log)
	for _, want := range []string{"$ sh -c 'echo out; echo err >&2'", "out\n", "err\n", "# exit status 0"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("log lacks %q:\n%s", want, data)
		}
	}
	if _, err := Output(context.Background(), Cmd{Argv: []string{"sh", "-c", "echo boom >&2; exit 2"}}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("failed Output error should quote stderr, have %v", err)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// An error about a process started with an inline script stays one short paragraph.
func TestExitErrorHidesInlineScripts(t *testing.T) {
	t.Parallel()
	script := "import sys\nprint(sys.version)\nraise SystemExit(3)\n"
	e := &ExitError{Argv: []string{"python3", "-c", script, strings.Repeat("x", 300)}, Result: Result{ExitCode: 3}}
	have := e.Error()
	if strings.Contains(have, "\n") || strings.Contains(have, "import sys") || len(have) > 200 {
		t.Errorf("have %q", have)
	}
	if !strings.HasPrefix(have, "python3 -c <script, 3 lines> xxx") || !strings.HasSuffix(have, "...: exit status 3") {
		t.Errorf("have %q", have)
	}
}

// A child that writes without end is stopped at OutputLimit: no more than the limit
// reaches the caller's writer or the log, the group is killed, and the run fails saying so.
func TestOutputLimit(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "x.log")
	var out bytes.Buffer
	const limit = 64 << 10
	res, err := Run(context.Background(), Cmd{
		Argv: []string{"sh", "-c", "trap '' PIPE TERM; while :; do echo yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy; done"}, Stdout: &out,
		LogPath: log, OutputLimit: limit, KillGrace: 100 * time.Millisecond,
	})
	var ee *ExitError
	if !errors.As(err, &ee) || res.OverLimit != limit {
		t.Fatalf("have %+v, %v; want an *ExitError with OverLimit %d", res, err, limit)
	}
	if !strings.Contains(err.Error(), "more than 64 KiB of output") {
		t.Errorf("error %q does not say the output was over the limit", err)
	}
	if out.Len() > limit {
		t.Errorf("the caller got %d bytes, more than the limit %d", out.Len(), limit)
	}
	if fi, err := os.Stat(log); err != nil || fi.Size() > limit+4096 {
		t.Errorf("log: %v, %d bytes; want at most the limit and the header and result lines", err, fi.Size())
	}
	// Under the limit nothing changes.
	if _, err := Run(context.Background(), Cmd{Argv: []string{"sh", "-c", "echo fine"}, OutputLimit: limit}); err != nil {
		t.Errorf("a child under the limit failed: %v", err)
	}
}

// A child that exits leaving a process that holds its stdout (outside its process group,
// so nothing kills it) does not keep Wait waiting past WaitDelay.
func TestWaitDelayCutsOrphanedOutput(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	// setsid: the sleeper leaves the group, as a daemon would; it holds stdout open.
	script := "setsid sleep 30 & echo answer"
	if _, err := exec.LookPath("setsid"); err != nil {
		script = "(trap '' TERM HUP; exec sleep 30) & echo answer"
	}
	res, err := Run(context.Background(), Cmd{Argv: []string{"sh", "-c", script}, Stdout: &out, WaitDelay: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("the child exited 0: %v", err)
	}
	if !res.Orphaned || out.String() != "answer\n" {
		t.Errorf("have %+v, output %q; want Orphaned and the answer", res, out.String())
	}
}

// The log and every rendering of a command line show URLs without credentials.
func TestLogRedactsCredentials(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "x.log")
	argv := []string{"sh", "-c", "echo fatal: unable to access https://ci:s3cret@h/x.git; echo ssh://bob:pw2@h >&2; exit 3", "https://tok3n@h/y"}
	_, err := Run(context.Background(), Cmd{Argv: argv, LogPath: log})
	if err == nil {
		t.Fatal("want exit 3")
	}
	data, _ := os.ReadFile(log)
	for _, s := range []string{string(data), err.Error(), QuoteArgv(argv), DisplayArgv(argv)} {
		for _, secret := range []string{"s3cret", "pw2", "tok3n"} {
			if strings.Contains(s, secret) {
				t.Errorf("%q shows %s", s, secret)
			}
		}
	}
	if !strings.Contains(string(data), "https://***@h/x.git") || !strings.Contains(string(data), "# exit status 3") {
		t.Errorf("log:\n%s", data)
	}
}
