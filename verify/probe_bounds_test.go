package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeInterpreterEnv makes the test binary a fake interpreter (see fakeInterpreter).
const fakeInterpreterEnv = "MPSPATCH_FAKE_INTERPRETER"

// fakeAnswer is a probe answer from an interpreter with torch, pytest and a CPU.
const fakeAnswer = `{"python": "3.12.8", "executable": "/fake/python", "platform": "fake", "gil": true, "torch": "2.9.1", "torch_git": "", "torch_path": "/fake/torch/__init__.py", "provenance": null, "devices": ["cpu"], "pytest": "8.3.0"}`

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeInterpreterEnv); mode != "" {
		os.Exit(fakeInterpreter(mode))
	}
	os.Exit(m.Run())
}

// fakeInterpreter plays an interpreter that answers the probe badly:
//
//	endless     prints without end (and ignores SIGTERM and a closed pipe)
//	hang        never answers
//	orphan      answers, then exits leaving a child (in its process group) holding stdout
//	grandchild  the orphan's child: holds the stdout it inherited, and sleeps
func fakeInterpreter(mode string) int {
	switch mode {
	case "endless":
		signal.Ignore(syscall.SIGTERM, syscall.SIGPIPE)
		line := bytes.Repeat([]byte("y"), 4095)
		line = append(line, '\n')
		for {
			os.Stdout.Write(line)
		}
	case "hang":
		time.Sleep(10 * time.Minute)
		return 1
	case "orphan":
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		child := exec.Command(exe)
		child.Env = append(os.Environ(), fakeInterpreterEnv+"=grandchild")
		child.Stdout = os.Stdout // the pipe to mpspatch: the orphan holds it open
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println(fakeAnswer)
		return 0
	case "grandchild":
		time.Sleep(5 * time.Minute)
		return 0
	}
	fmt.Fprintln(os.Stderr, "fake interpreter: unknown mode", mode)
	return 2
}

// fakeInterpreterPath returns the test binary, playing mode when started.
func fakeInterpreterPath(t *testing.T, mode string) string {
	t.Helper()
	t.Setenv(fakeInterpreterEnv, mode)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// An interpreter that prints without end is stopped at the output limit: verify fails
// (exit 5) naming it and saying why, and what it printed was read, and logged, up to the
// limit and no further, so memory stays bounded however long it would have gone on.
func TestProbeStopsAnInterpreterThatPrintsWithoutEnd(t *testing.T) {
	py := fakeInterpreterPath(t, "endless")
	logPath := filepath.Join(t.TempDir(), "probe.log")
	_, err := probeWith(context.Background(), py, TargetPatched, "cpu", probeOptions{LogPath: logPath})
	if err == nil || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("have %v, want an ErrUnsupported error", err)
	}
	for _, want := range []string{py, "printed more than 1024 KiB answering the torch probe", "full output in " + logPath} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
	if len(err.Error()) > 2000 {
		t.Errorf("the error is %d bytes long: it carries the output", len(err.Error()))
	}
	fi, serr := os.Stat(logPath)
	// The log holds the command line (the probe script, a few KiB) and the result line
	// besides the output, which stops at the limit.
	if serr != nil || fi.Size() < defaultProbeOutputLimit || fi.Size() > defaultProbeOutputLimit+16<<10 {
		t.Errorf("log: %v, size %d; want the output up to the limit of %d bytes", serr, fi.Size(), defaultProbeOutputLimit)
	}
}

// An interpreter that never answers is stopped at the probe's timeout.
func TestProbeTimesOutAnInterpreterThatHangs(t *testing.T) {
	py := fakeInterpreterPath(t, "hang")
	_, err := probeWith(context.Background(), py, TargetPatched, "cpu", probeOptions{Timeout: 300 * time.Millisecond})
	if err == nil || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("have %v, want an ErrUnsupported error", err)
	}
	if !strings.Contains(err.Error(), py) || !strings.Contains(err.Error(), "did not answer the torch probe within 300ms") {
		t.Errorf("error does not name the interpreter and the timeout:\n%s", err)
	}
}

// An interpreter that answers and exits, leaving a process that holds its stdout, does not
// keep verify waiting for that process: the answer counts, with a warning. (The timeout is
// far longer than the test: only the wait for the output after the exit is bounded here.)
func TestProbeDoesNotWaitForAnOrphanHoldingStdout(t *testing.T) {
	py := fakeInterpreterPath(t, "orphan")
	env, err := probeWith(context.Background(), py, TargetPatched, "cpu", probeOptions{Timeout: 9 * time.Minute, WaitDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if env.Torch != "2.9.1" || env.Device != "cpu" {
		t.Errorf("the answer was lost: %+v", env)
	}
	if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], "kept its output open") {
		t.Errorf("warnings %q, want one saying a process kept the output open", env.Warnings)
	}
}

// ReadReportFile refuses what is not a regular file at once: a FIFO (which an open would
// wait on for a writer), a device that never ends, a directory.
func TestReadReportFileRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "results.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{fifo, "/dev/zero", dir} {
		_, err := ReadReportFile(name)
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadReportFile(%s): %v, want a refusal", name, err)
		}
	}
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(`{"type":"summary","status":"interrupted"}`+"\n"), 0o644)
	if rep, err := ReadReportFile(good); err != nil || !rep.Interrupted {
		t.Errorf("a regular results file: %+v, %v", rep, err)
	}
}
