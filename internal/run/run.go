package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mpspatch/mpspatch/internal/redact"
)

// Cmd describes one process to start.
type Cmd struct {
	// Argv is the program and its arguments. Argv[0] is looked up in PATH.
	Argv []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// Env, when non-nil, replaces the environment entirely.
	Env []string
	// Stdin feeds the child; nil means no input.
	Stdin io.Reader
	// Stdout and Stderr receive the child's streams in addition to the log.
	Stdout, Stderr io.Writer
	// LogPath, when set, receives a header line and both streams, interleaved.
	LogPath string
	// Timeout bounds the run; zero means only ctx bounds it.
	Timeout time.Duration
	// KillGrace is how long the group has after SIGTERM before SIGKILL (default 2s).
	KillGrace time.Duration
	// OutputLimit, when positive, is the most bytes the child may write to stdout and
	// stderr together (the log gets no more either): past it the rest is dropped, the
	// process group is killed, and the run fails with Result.OverLimit set. For children
	// whose answer is small and whose output nobody should have to hold (an interpreter
	// probe), so one that prints without end costs a bounded amount of memory.
	OutputLimit int64
	// WaitDelay, when positive, is how long Wait waits for the child's output to end
	// after the child itself has exited: a process it left behind holding stdout or
	// stderr (a daemon, a grandchild outside its process group) would otherwise keep
	// Wait waiting for as long as it lives. Past it the pipes are closed and
	// Result.Orphaned is set. Zero waits for the output to end, however long.
	WaitDelay time.Duration
	// DieWithParent has the kernel SIGKILL the child when mpspatch dies, however it dies
	// (SIGKILL included), where the kernel can (Linux). The child's own group keeps
	// terminal signals from it, so without this a killed mpspatch leaves it running. For
	// work a re-run redoes (a clone), where a survivor would only collide with the re-run;
	// the caller still finds and stops survivors where the kernel cannot do this, and the
	// children the child starts (which do not inherit it).
	DieWithParent bool
}

// Result is what a finished process left behind.
type Result struct {
	ExitCode int            // -1 when killed by a signal
	Signal   syscall.Signal // non-zero when killed by a signal
	TimedOut bool
	// OverLimit is Cmd.OutputLimit when the child wrote more than it (and was killed).
	OverLimit int64
	// Orphaned says the child exited but something it started kept its output open
	// past Cmd.WaitDelay; the output was cut there and the process group killed.
	Orphaned bool
	Duration time.Duration
}

// String renders the outcome as a person would say it.
func (r Result) String() string {
	switch {
	case r.OverLimit > 0:
		return fmt.Sprintf("killed after writing more than %s of output (the limit)", byteSize(r.OverLimit))
	case r.TimedOut:
		return fmt.Sprintf("timed out after %s", r.Duration.Round(time.Millisecond))
	case r.Signal != 0:
		return fmt.Sprintf("killed by signal %d (%s)", int(r.Signal), r.Signal)
	default:
		return fmt.Sprintf("exit status %d", r.ExitCode)
	}
}

// byteSize renders n as a person would read it: "1 MiB", "64 KiB", "100 bytes".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ExitError reports a process that ran but did not exit 0.
type ExitError struct {
	Argv    []string
	Result  Result
	LogPath string
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%s: %s", DisplayArgv(e.Argv), e.Result)
	if e.LogPath != "" {
		msg += " (log: " + e.LogPath + ")"
	}
	return msg
}

// Run starts c and waits for it. A non-zero exit, a signal or a timeout is returned as
// *ExitError together with the Result; a failure to start is returned as a plain error.
func Run(ctx context.Context, c Cmd) (Result, error) {
	p, err := Start(ctx, c)
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	return p.Wait()
}

// Output runs c and returns its stdout; stderr is kept for the error message.
func Output(ctx context.Context, c Cmd) ([]byte, error) {
	var out, errb bytes.Buffer
	c.Stdout = &out
	c.Stderr = &errb
	if _, err := Run(ctx, c); err != nil {
		if msg := strings.TrimSpace(errb.String()); msg != "" {
			return out.Bytes(), fmt.Errorf("%w: %s", err, msg)
		}
		return out.Bytes(), err
	}
	return out.Bytes(), nil
}

// Process is a started child.
type Process struct {
	cmd     *exec.Cmd
	c       Cmd
	start   time.Time
	log     *os.File
	logOut  *redact.Writer // the log, credentials taken out of what the child writes
	budget  *outputBudget  // nil without Cmd.OutputLimit
	done    chan struct{}
	timeout atomic.Bool // set by the watcher goroutine, read by Wait
}

// Tracer is told of every process just before it starts: its argv and working directory.
// mpspatch --verbose installs one that prints them on stderr.
type Tracer func(argv []string, dir string)

type tracerKey struct{}

// WithTracer returns ctx carrying t: every process started under it is reported to t. A
// context value rather than a package variable, so concurrent runs (and tests) keep their
// own.
func WithTracer(ctx context.Context, t Tracer) context.Context {
	return context.WithValue(ctx, tracerKey{}, t)
}

// Start launches c in its own process group.
func Start(ctx context.Context, c Cmd) (*Process, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("run: empty argv")
	}
	if t, ok := ctx.Value(tracerKey{}).(Tracer); ok && t != nil {
		t(c.Argv, c.Dir)
	}
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Dir = c.Dir
	if c.Env != nil {
		cmd.Env = c.Env
	}
	cmd.Stdin = c.Stdin
	setProcessGroup(cmd)
	if c.DieWithParent {
		setDieWithParent(cmd)
	}

	p := &Process{cmd: cmd, c: c, done: make(chan struct{})}
	stdout, stderr := c.Stdout, c.Stderr
	if c.LogPath != "" {
		f, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("run %s: open log: %w", c.Argv[0], err)
		}
		fmt.Fprintf(f, "$ %s\n", QuoteArgv(c.Argv))
		p.log = f
		// Tools echo URLs (git: "fatal: unable to access 'https://...'"); the log is a file
		// people attach to bug reports, so it gets what the terminal gets: no credentials.
		p.logOut = redact.NewWriter(f)
		stdout = tee(stdout, p.logOut)
		stderr = tee(stderr, p.logOut)
	}
	if c.OutputLimit > 0 {
		p.budget = &outputBudget{left: c.OutputLimit, limit: c.OutputLimit, exceeded: func() { go p.Kill() }}
		stdout = &budgetWriter{b: p.budget, w: stdout}
		stderr = &budgetWriter{b: p.budget, w: stderr}
	}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = c.WaitDelay
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		if p.log != nil {
			p.log.Close()
		}
		return nil, fmt.Errorf("run %s: %w", c.Argv[0], err)
	}
	go p.watch(ctx)
	return p, nil
}

// Pid is the child's process id (and its process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

func (p *Process) watch(ctx context.Context) {
	var timer <-chan time.Time
	if p.c.Timeout > 0 {
		t := time.NewTimer(p.c.Timeout)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-p.done:
		return
	case <-timer:
		p.timeout.Store(true)
	case <-ctx.Done():
	}
	p.Kill()
}

// Kill terminates the whole process group: SIGTERM, then SIGKILL after the grace period.
func (p *Process) Kill() {
	grace := p.c.KillGrace
	if grace == 0 {
		grace = 2 * time.Second
	}
	killGroup(p.cmd, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		killGroup(p.cmd, syscall.SIGKILL)
	}
}

// Wait waits for the child to exit and classifies how it ended.
func (p *Process) Wait() (Result, error) {
	err := p.cmd.Wait()
	close(p.done)
	// The group may still hold grandchildren that outlived the leader; do not leak them.
	killGroup(p.cmd, syscall.SIGKILL)
	res := Result{Duration: time.Since(p.start), TimedOut: p.timeout.Load()}
	if p.budget != nil && p.budget.over.Load() {
		res.OverLimit = p.budget.limit
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		// The child exited 0; what it left behind held the pipes until WaitDelay.
		res.Orphaned, err = true, nil
	}
	res = res.withState(p.cmd.ProcessState)
	if p.log != nil {
		p.logOut.Flush()
		fmt.Fprintf(p.log, "# %s\n", res)
		p.log.Close()
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) && !errors.Is(err, errOverLimit) {
			return res, fmt.Errorf("run %s: %w", p.c.Argv[0], err)
		}
	}
	if res.ExitCode != 0 || res.TimedOut || res.OverLimit > 0 {
		return res, &ExitError{Argv: p.c.Argv, Result: res, LogPath: p.c.LogPath}
	}
	return res, nil
}

func (r Result) withState(ps *os.ProcessState) Result {
	if ps == nil {
		r.ExitCode = -1
		return r
	}
	r.ExitCode = ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.Signal = ws.Signal()
		r.ExitCode = -1
	}
	return r
}

// errOverLimit stops the copy of a child's output at Cmd.OutputLimit; exec then closes
// the pipe, so the child's next write fails.
var errOverLimit = errors.New("output limit reached")

// outputBudget is what is left of Cmd.OutputLimit, shared by stdout and stderr.
type outputBudget struct {
	mu       sync.Mutex
	left     int64
	limit    int64
	over     atomic.Bool
	exceeded func() // called once, when the limit is first passed
}

// take returns how many of n bytes may still pass, and notes a limit passed.
func (b *outputBudget) take(n int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := int(min(int64(n), b.left))
	b.left -= int64(k)
	if k < n && !b.over.Swap(true) {
		b.exceeded()
	}
	return k
}

// budgetWriter passes what the budget allows on to w and drops the rest.
type budgetWriter struct {
	b *outputBudget
	w io.Writer
}

func (bw *budgetWriter) Write(p []byte) (int, error) {
	k := bw.b.take(len(p))
	if k > 0 && bw.w != nil {
		if n, err := bw.w.Write(p[:k]); err != nil {
			return n, err
		}
	}
	if k < len(p) {
		return k, errOverLimit
	}
	return k, nil
}

func tee(w io.Writer, log io.Writer) io.Writer {
	if w == nil {
		return log
	}
	return io.MultiWriter(w, log)
}

func quoteArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$") {
			parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			parts[i] = a
		}
	}
	return strings.Join(parts, " ")
}

// DisplayArgv renders argv for a one-line message: an inline script (`python -c "..."`,
// any argument with a newline) shows as <script, N lines>, a very long argument is cut,
// so an error stays one paragraph, and URLs show without credentials. Logs keep the whole
// argv (QuoteArgv).
func DisplayArgv(argv []string) string {
	const maxArg = 120
	parts := make([]string, len(argv))
	for i, a := range argv {
		// Redacted before it is cut: a cut through the user-info would leave no '@' to
		// tell it by.
		a = redact.Text(a)
		switch {
		case strings.Contains(a, "\n"):
			parts[i] = fmt.Sprintf("<script, %d lines>", strings.Count(strings.TrimRight(a, "\n"), "\n")+1)
		case len(a) > maxArg:
			parts[i] = a[:maxArg] + "..."
		default:
			parts[i] = a
		}
	}
	return strings.Join(parts, " ")
}

// QuoteArgv renders argv as a shell would need it typed, for logs and traces (never to be
// run through a shell: processes start from argv), URLs without their credentials.
func QuoteArgv(argv []string) string {
	red := make([]string, len(argv))
	for i, a := range argv {
		red[i] = redact.Text(a)
	}
	return quoteArgv(red)
}
