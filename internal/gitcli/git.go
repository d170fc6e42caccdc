package gitcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mpspatch/mpspatch/internal/redact"
	"github.com/mpspatch/mpspatch/internal/run"
)

// Git runs git commands. The zero value runs "git" from PATH in the process's
// environment and keeps no log.
type Git struct {
	// Bin is the git program; empty means "git" looked up in PATH.
	Bin string
	// Env, when non-nil, replaces the environment of every git process.
	Env []string
	// LogPath, when set, receives every command line and all of git's output.
	LogPath string
}

// NotFoundError says the git binary could not be started at all.
type NotFoundError struct {
	Bin string
	Err error
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("git binary %q not found (install git, or Xcode command line tools on macOS): %v", e.Bin, e.Err)
}

func (e *NotFoundError) Unwrap() error { return e.Err }

// Error is a git command that ran and failed.
type Error struct {
	// Op names the attempt ("clone: fetch", "commit").
	Op string
	// Args are git's arguments, without the program.
	Args []string
	// Stderr holds the last lines git wrote to stderr.
	Stderr string
	// LogPath is where the full output is, when there is a log.
	LogPath string
	// Dir is the directory git ran in, as the caller named it ("" for the current one).
	Dir string
	// Output is the end of git's stderr (up to maxOutput bytes) when there is no
	// LogPath, so that a caller can keep it in a log of its own.
	Output string
	// ExitCode is git's exit status (-1 when killed by a signal).
	ExitCode int
	Err      error

	// kind and subject, when kind is set, replace what classify reads from Stderr
	// (exec narrows "unknown revision a..b" to the end that is missing).
	kind    *FailureKind
	subject string
}

// maxOutput bounds Error.Output: git's reason is at the end of its output.
const maxOutput = 64 << 10

// Error is the whole account, argv included, for logs and for callers that wrap it;
// Summary is the sentence for users.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "git %s: git %s: ", e.Op, strings.Join(e.Args, " "))
	var ee *run.ExitError
	if errors.As(e.Err, &ee) {
		b.WriteString(ee.Result.String())
	} else {
		b.WriteString(e.Err.Error())
	}
	if e.Stderr != "" {
		b.WriteString(": ")
		b.WriteString(e.Stderr)
	}
	if e.LogPath != "" {
		b.WriteString(" (log: " + e.LogPath + ")")
	}
	// git's argv and its stderr can both hold a URL: the message is shown and logged.
	return redact.Text(b.String())
}

func (e *Error) Unwrap() error { return e.Err }

func (g *Git) bin() string {
	if g == nil || g.Bin == "" {
		return "git"
	}
	return g.Bin
}

// call describes one git invocation.
type call struct {
	op     string
	dir    string
	args   []string
	stdin  io.Reader
	stdout io.Writer // in addition to the captured output
	stderr io.Writer // in addition to the captured tail
	env    []string  // added to the environment of this one command
	// consume, when set, reads stdout as git writes it, instead of exec keeping it: for
	// output as large as the objects it carries (cat-file --batch). exec then returns no
	// stdout. An error from consume ends the read (git gets a closed pipe) and is returned
	// unless git itself failed.
	consume func(io.Reader) error
	// dieWithParent: git dies with mpspatch (run.Cmd.DieWithParent).
	dieWithParent bool
	// started, with consume, is called once git has started (a caller that handed git
	// one end of a pipe closes its own copy there).
	started func()
}

// exec runs one git command and returns its stdout. stderr is kept (its tail) for the
// error message; both go to the log.
func (g *Git) exec(ctx context.Context, c call) ([]byte, error) {
	var out bytes.Buffer
	errTail := &tailBuffer{max: 8}
	var stdout io.Writer = &out
	if c.stdout != nil {
		stdout = io.MultiWriter(&out, c.stdout)
	}
	var logPath string
	var env []string
	if g != nil {
		logPath, env = g.LogPath, g.Env
	}
	var whole *endBuffer
	var stderr io.Writer = errTail
	if logPath == "" {
		whole = &endBuffer{max: maxOutput}
		stderr = io.MultiWriter(errTail, whole)
	}
	if c.stderr != nil {
		stderr = io.MultiWriter(stderr, c.stderr)
	}
	argv := append([]string{g.bin()}, c.args...)
	if len(c.env) > 0 {
		if env == nil {
			env = os.Environ()
		}
		env = append(append([]string{}, env...), c.env...)
	}
	var res run.Result
	var err, consumeErr error
	if c.consume == nil {
		res, err = run.Run(ctx, run.Cmd{
			Argv: argv, Dir: c.dir, Env: env, Stdin: c.stdin,
			Stdout: stdout, Stderr: stderr, LogPath: logPath, DieWithParent: c.dieWithParent,
		})
	} else {
		res, consumeErr, err = streamRun(ctx, run.Cmd{
			Argv: argv, Dir: c.dir, Env: env, Stdin: c.stdin, Stderr: stderr, LogPath: logPath,
			DieWithParent: c.dieWithParent,
		}, c.consume, c.started)
	}
	if err == nil && consumeErr == nil {
		return out.Bytes(), nil
	}
	// What consume found wrong in the output explains a git that then died of the closed
	// pipe; output that just ended early is explained by git's own failure, if any.
	if consumeErr != nil && (err == nil || !errors.Is(consumeErr, io.ErrUnexpectedEOF) && !errors.Is(consumeErr, io.EOF)) {
		return nil, fmt.Errorf("git %s: %w", c.op, consumeErr)
	}
	if ctx.Err() != nil {
		return out.Bytes(), fmt.Errorf("git %s: %w", c.op, ctx.Err())
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return nil, &NotFoundError{Bin: g.bin(), Err: err}
	}
	ge := &Error{Op: c.op, Args: c.args, Stderr: errTail.String(), LogPath: logPath, Dir: c.dir, ExitCode: res.ExitCode, Err: err}
	if whole != nil {
		ge.Output = whole.String()
	}
	g.narrowRange(ctx, ge)
	return out.Bytes(), ge
}

// narrowRange turns "unknown revision a..b" into the end of the range that the
// repository lacks, so that the message names it: git names the whole range argument.
func (g *Git) narrowRange(ctx context.Context, ge *Error) {
	kind, subject := classify(ge.Stderr)
	if kind != FailUnknownRevision {
		return
	}
	from, to, ok := strings.Cut(subject, "..")
	if !ok {
		return
	}
	to = strings.TrimPrefix(to, ".")
	for _, rev := range []string{from, to} {
		if rev != "" && !g.HasCommit(ctx, ge.Dir, revSuffixRE().ReplaceAllString(rev, "")) {
			ge.kind, ge.subject = &kind, revSuffixRE().ReplaceAllString(rev, "")
			return
		}
	}
}

// endBuffer keeps the last max bytes written to it.
type endBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (e *endBuffer) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.b = append(e.b, p...)
	if over := len(e.b) - e.max; over > 0 {
		e.b = append(e.b[:0], e.b[over:]...)
	}
	return len(p), nil
}

func (e *endBuffer) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return string(e.b)
}

// streamRun runs c with its stdout read by consume as it comes: the output is never held
// whole. It returns how the process ended, consume's error and the run's error. When
// consume stops early the pipe is closed, so a process still writing gets EPIPE (or
// SIGPIPE) rather than blocking.
func streamRun(ctx context.Context, c run.Cmd, consume func(io.Reader) error, started func()) (run.Result, error, error) {
	pr, pw := io.Pipe()
	c.Stdout = pw
	p, err := run.Start(ctx, c)
	if started != nil {
		started()
	}
	if err != nil {
		pw.Close()
		return run.Result{ExitCode: -1}, nil, err
	}
	type waited struct {
		res run.Result
		err error
	}
	done := make(chan waited, 1)
	go func() {
		res, err := p.Wait()
		pw.Close() // the reader sees EOF once the process and its output are done
		done <- waited{res, err}
	}()
	consumeErr := consume(pr)
	if consumeErr != nil {
		pr.CloseWithError(consumeErr)
	} else {
		// Whatever follows what consume wanted (nothing, from a well-behaved git).
		io.Copy(io.Discard, pr)
	}
	w := <-done
	return w.res, consumeErr, w.err
}

// tailBuffer keeps the last max non-empty lines written to it, progress reports left out
// (the log has them). git progress uses \r to redraw, so \r ends a line too.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	lines []string
	cur   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range p {
		if c == '\n' || c == '\r' {
			t.flush()
			continue
		}
		t.cur = append(t.cur, c)
	}
	return len(p), nil
}

func (t *tailBuffer) flush() {
	s := strings.TrimSpace(string(t.cur))
	t.cur = t.cur[:0]
	if s == "" || isProgress(s) {
		return
	}
	t.lines = append(t.lines, s)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flush()
	return strings.Join(t.lines, "; ")
}

// DeterministicEnv returns an environment for reproducible git runs (tests, scripts):
// system and global configuration ignored, HOME set to home, a fixed identity and fixed
// author and committer dates, no prompts, the C locale, and file:// submodules allowed
// (git refuses them by default since 2.38.1; tests clone from local repositories).
// PATH is kept so git can find its helpers.
func DeterministicEnv(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=mpspatch test",
		"GIT_AUTHOR_EMAIL=test@mpspatch.invalid",
		"GIT_AUTHOR_DATE=2025-01-01T00:00:00Z",
		"GIT_COMMITTER_NAME=mpspatch test",
		"GIT_COMMITTER_EMAIL=test@mpspatch.invalid",
		"GIT_COMMITTER_DATE=2025-01-01T00:00:00Z",
		"LC_ALL=C",
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=protocol.file.allow",
		"GIT_CONFIG_VALUE_0=always",
		"GIT_CONFIG_KEY_1=init.defaultBranch",
		"GIT_CONFIG_VALUE_1=main",
	}
}
