package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mpspatch/mpspatch/internal/run"
)

// BenchScript is the scaling benchmark among the suite files; it is a script, not tests.
const BenchScript = "bench_scaling.py"

// suiteOptions configure the run of the suites against one interpreter (one target).
type suiteOptions struct {
	Target string // TargetPatched or TargetBaseline
	Env    Env    // from Probe: interpreter, resolved device

	Profile string // quick or full
	Threads []int  // passed to the suites as --threads; nil: the suites' default
	// BenchThreads is passed to the benchmark as --threads; nil: its own default per profile.
	BenchThreads []int
	// Repeat runs every suite file this many times; a test passes only if every run passes.
	Repeat  int
	Files   []string // test files to run (names inside SuitesDir), in order
	Scaling bool     // run BenchScript after the tests
	// Timeout kills a suite process that reports nothing (no test start or end, no benchmark
	// row) for this long: the running test is recorded as a timeout. Zero: no limit.
	Timeout time.Duration

	SuitesDir string // directory holding the suite files (and conftest.py); the working dir
	LogDir    string // per-process logs and event files are written here
	ReportDir string // result log paths are written relative to this directory when under it

	KillGrace time.Duration // SIGTERM to SIGKILL; zero: internal/run's default
	Poll      time.Duration // how often the events file is read; zero: 100ms
}

// SelfTests are the suite directory's tests of its own machinery (comparison, boundary search,
// the event protocol): they belong to the project's `make test` (test-python), not to a user's
// report about their torch, so listSuites leaves them out.
var SelfTests = []string{"test_harness.py"}

func isSelfTest(name string) bool {
	for _, s := range SelfTests {
		if name == s {
			return true
		}
	}
	return false
}

// listSuites returns the concurrency suites in dir (test_*.py but not SelfTests), sorted.
func listSuites(dir string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "test_*.py"))
	if err != nil {
		return nil, fmt.Errorf("list suites in %s: %w", dir, err)
	}
	out := make([]string, 0, len(m))
	for _, p := range m {
		if name := filepath.Base(p); !isSelfTest(name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// isBenchName says whether a --suite name names the scaling benchmark, which is not
// among the suite files selectSuites picks from.
func isBenchName(n string) bool {
	return n == "scaling" || n == "bench_scaling" || n == BenchScript
}

// selectSuites picks the files named by names from all. A name matches a file by its full
// name, its stem, or its stem without the test_ prefix ("raw_ops" selects test_raw_ops.py).
// The order is that of all. An unknown name is an error that lists the known ones.
func selectSuites(all, names []string) ([]string, error) {
	if len(names) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		if isBenchName(n) {
			continue // the session runs the benchmark (Plan.selection)
		}
		found := false
		for _, f := range all {
			stem := strings.TrimSuffix(f, ".py")
			if n == f || n == stem || "test_"+n == stem {
				want[f] = true
				found = true
			}
		}
		if !found {
			for _, s := range SelfTests {
				if stem := strings.TrimSuffix(s, ".py"); n == s || n == stem || "test_"+n == stem {
					return nil, fmt.Errorf("suite %q is the suites' self-test; `make test-python` runs it, verify does not (have: %s)", n, strings.Join(all, ", "))
				}
			}
			return nil, fmt.Errorf("unknown suite %q (have: %s)", n, strings.Join(all, ", "))
		}
	}
	var out []string
	for _, f := range all {
		if want[f] {
			out = append(out, f)
		}
	}
	return out, nil
}

// runSuites runs every file of opts against one interpreter and reports each outcome to obs as it
// arrives. Each file runs in its own process; when that process dies or hangs inside a test,
// the test is recorded as a crash or timeout and the rest of the file runs in a fresh process
// with the finished and crashed tests deselected: a crash costs one test, never the file.
// It returns an error only when it could not go on (interrupted, cannot start python, cannot
// write its files); test failures are results, not errors.
func runSuites(ctx context.Context, opts suiteOptions, obs events) error {
	if opts.Repeat < 1 {
		opts.Repeat = 1
	}
	if opts.Poll == 0 {
		opts.Poll = 100 * time.Millisecond
	}
	if opts.LogDir == "" {
		return errors.New("verify: no log directory")
	}
	// The suite processes run in SuitesDir: every path handed to them must be absolute.
	for _, p := range []*string{&opts.LogDir, &opts.ReportDir, &opts.SuitesDir} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		*p = abs
	}
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return fmt.Errorf("verify: create log dir: %w", err)
	}
	r := &runner{opts: opts, obs: obs, env: opts.Env}
	for rep := 1; rep <= opts.Repeat; rep++ {
		for _, f := range opts.Files {
			if err := r.runFile(ctx, f, rep); err != nil {
				return err
			}
		}
	}
	if opts.Scaling {
		if _, err := os.Stat(filepath.Join(opts.SuitesDir, BenchScript)); err != nil {
			obs.Notice(opts.Target, BenchScript+" is not among the suites; no scaling benchmark")
			return nil
		}
		if err := r.runBench(ctx); err != nil {
			return err
		}
	}
	return nil
}

type runner struct {
	opts suiteOptions
	obs  events
	env  Env
}

// procResult is what one suite process left behind.
type procResult struct {
	res      run.Result
	open     []string // tests started and never ended, in start order
	openAt   map[string]time.Time
	ended    []string
	started  int
	hung     bool // killed by the runner for reporting nothing within Timeout
	stderr   string
	stdout   string // pytest's report: collection errors land here, not on stderr
	log      string
	finished time.Time
}

func (r *runner) suiteArgs(file string) []string {
	argv := []string{interpreterPath(r.env.Interpreter), "-m", "pytest", file,
		"--device", r.env.Device, "--profile", r.opts.Profile}
	if len(r.opts.Threads) > 0 {
		argv = append(argv, "--threads", joinInts(r.opts.Threads))
	}
	// -s: a crash leaves no chance to print captured output, so nothing is captured; every
	// line a test or the framework writes reaches the log and the signature scan.
	return append(argv, "-p", "no:cacheprovider", "-q", "-s")
}

func (r *runner) runFile(ctx context.Context, file string, rep int) error {
	done := map[string]bool{}
	var deselect []string
	for attempt := 1; ; attempt++ {
		pr, err := r.runProcess(ctx, file, r.suiteArgs(file), rep, attempt, deselect)
		if err != nil {
			return err
		}
		for _, id := range pr.ended {
			if !done[id] {
				done[id] = true
				deselect = append(deselect, id)
			}
		}
		death := classifyExit(pr.res)
		if len(pr.open) == 0 {
			r.fileLevel(file, rep, attempt, pr, death)
			return nil
		}
		if pytestFinished(pr.res) {
			// pytest ended normally yet a test never reported its end: a broken conftest.
			for _, id := range pr.open {
				r.result(Result{ID: id, File: file, Repeat: rep, Outcome: Error, Log: pr.log,
					Message: "the suite reported the start of this test but never its end (" + death.String() + ")"})
			}
			return nil
		}
		again := false
		for i, id := range pr.open {
			res := Result{ID: id, File: file, Repeat: rep, Log: pr.log,
				Duration: pr.finished.Sub(pr.openAt[id]).Seconds()}
			last := i == len(pr.open)-1
			switch {
			case !last:
				res.Outcome = Error
				res.Message = "started but never ended before another test started in the same process"
			case pr.hung:
				res.Outcome = Timeout
				res.Message = fmt.Sprintf("no progress for %s; process group killed", r.opts.Timeout)
				res.Signatures = matchSignatures(pr.stderr)
			default:
				res.Outcome = Crash
				res.Death = death.String()
				res.Signatures = matchSignatures(pr.stderr + pr.stdout)
				res.Message = crashMessage(death, pr.stderr)
			}
			r.result(res)
			if done[id] {
				// Deselected yet run again: the suite ignores MPSPATCH_DESELECT; restarting
				// would loop forever.
				r.result(Result{ID: file, File: file, Repeat: rep, Outcome: Error, Log: pr.log,
					Message: "the suite ran " + id + " although it was deselected (MPSPATCH_DESELECT not honoured); rest of the file not run"})
				return nil
			}
			done[id] = true
			deselect = append(deselect, id)
			again = true
		}
		if !again {
			return nil
		}
		r.obs.Notice(r.opts.Target, fmt.Sprintf("%s: %s in %s; continuing the file in a fresh process (%d deselected)",
			file, outcomeWord(pr, death), pr.open[len(pr.open)-1], len(deselect)))
	}
}

// fileLevel records a process that broke outside any test (collection, session teardown),
// or that collected nothing at all on its first try.
func (r *runner) fileLevel(file string, rep, attempt int, pr procResult, death processDeath) {
	res := Result{ID: file, File: file, Repeat: rep, Log: pr.log}
	switch {
	case pr.hung:
		res.Outcome = Timeout
		res.Message = fmt.Sprintf("no progress for %s outside any test (collection or teardown hung); process group killed", r.limit(false))
	case !pytestFinished(pr.res):
		res.Outcome = Error
		if death.Signal != "" {
			res.Outcome = Crash
		}
		res.Death = death.String()
		res.Signatures = matchSignatures(pr.stderr + pr.stdout)
		res.Message = "suite process failed outside any test (" + death.String() + "): " + pytestError(pr)
	case pr.res.ExitCode == 5 && attempt == 1 && pr.started == 0:
		res.Outcome = Error
		res.Message = "no tests collected"
	default:
		return
	}
	res.Duration = pr.res.Duration.Seconds()
	r.result(res)
}

func (r *runner) runBench(ctx context.Context) error {
	argv := []string{interpreterPath(r.env.Interpreter), BenchScript, "--device", r.env.Device, "--profile", r.opts.Profile}
	if len(r.opts.BenchThreads) > 0 {
		argv = append(argv, "--threads", joinInts(r.opts.BenchThreads))
	}
	pr, err := r.runProcess(ctx, BenchScript, argv, 1, 1, nil)
	if err != nil {
		return err
	}
	death := classifyExit(pr.res)
	res := Result{ID: BenchScript, File: BenchScript, Repeat: 1, Log: pr.log,
		Duration: pr.res.Duration.Seconds(), Outcome: Pass}
	switch {
	case pr.hung:
		res.Outcome = Timeout
		res.Message = fmt.Sprintf("no benchmark row for %s; process group killed", r.limit(false))
	case death.Signal != "":
		res.Outcome = Crash
		res.Death = death.String()
		res.Message = crashMessage(death, pr.stderr)
	case pr.res.ExitCode != 0:
		res.Outcome = Error
		res.Death = death.String()
		res.Message = "benchmark failed (" + death.String() + "): " + pytestError(pr)
	}
	if res.Outcome != Pass {
		res.Signatures = matchSignatures(pr.stderr + pr.stdout)
	}
	r.result(res)
	return nil
}

func (r *runner) result(res Result) {
	res.Target = r.opts.Target
	r.obs.Result(res)
}

// runProcess starts one suite process and follows its events file until it exits.
func (r *runner) runProcess(ctx context.Context, file string, argv []string, rep, attempt int, deselect []string) (procResult, error) {
	base := fmt.Sprintf("%s-%s.r%d.a%d", r.opts.Target, strings.TrimSuffix(file, ".py"), rep, attempt)
	evPath := filepath.Join(r.opts.LogDir, base+".events.jsonl")
	dsPath := filepath.Join(r.opts.LogDir, base+".deselect.txt")
	logPath := filepath.Join(r.opts.LogDir, base+".log")
	if err := os.WriteFile(evPath, nil, 0o644); err != nil {
		return procResult{}, fmt.Errorf("verify %s: create events file: %w", file, err)
	}
	var ds strings.Builder
	for _, id := range deselect {
		ds.WriteString(id + "\n")
	}
	if err := os.WriteFile(dsPath, []byte(ds.String()), 0o644); err != nil {
		return procResult{}, fmt.Errorf("verify %s: write deselect file: %w", file, err)
	}
	_ = os.Remove(logPath)
	env := append(os.Environ(),
		"MPSPATCH_EVENTS="+evPath,
		"MPSPATCH_DESELECT="+dsPath,
		"PYTHONUNBUFFERED=1",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONFAULTHANDLER=1",
	)
	if r.opts.Timeout > 0 {
		// A test that runs its own children (the boundary finder) keeps each under this.
		env = append(env, fmt.Sprintf("MPSPATCH_TEST_TIMEOUT=%g", r.opts.Timeout.Seconds()))
	}
	stderr := &tailBuffer{max: 256 << 10}
	stdout := &tailBuffer{max: 64 << 10}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p, err := run.Start(pctx, run.Cmd{
		Argv: argv, Dir: r.opts.SuitesDir, Env: env,
		Stdout: stdout, Stderr: stderr, LogPath: logPath, KillGrace: r.opts.KillGrace,
	})
	if err != nil {
		return procResult{}, fmt.Errorf("verify %s: %w", file, err)
	}
	type waited struct{ res run.Result }
	waitCh := make(chan waited, 1)
	go func() {
		res, _ := p.Wait() // the Result says everything; the error repeats it
		waitCh <- waited{res}
	}()

	pr := procResult{openAt: map[string]time.Time{}, log: r.relative(logPath)}
	ev, err := os.Open(evPath)
	if err != nil {
		cancel()
		<-waitCh
		return procResult{}, fmt.Errorf("verify %s: open events file: %w", file, err)
	}
	defer ev.Close()
	var rd eventReader
	last := time.Now()
	drain := func() bool {
		b, _ := io.ReadAll(ev)
		evs := rd.Feed(b)
		for _, e := range evs {
			r.handle(e, file, rep, &pr)
		}
		return len(evs) > 0
	}
	tick := time.NewTicker(r.opts.Poll)
	defer tick.Stop()
	for {
		select {
		case w := <-waitCh:
			pr.finished = time.Now()
			drain()
			for _, e := range rd.Close() {
				r.handle(e, file, rep, &pr)
			}
			pr.res = w.res
			pr.stderr = stderr.String()
			pr.stdout = stdout.String()
			if ctx.Err() != nil {
				return pr, ctx.Err()
			}
			return pr, nil
		case <-tick.C:
			if drain() {
				last = time.Now()
			}
			if r.opts.Timeout > 0 && !pr.hung && time.Since(last) > r.limit(len(pr.open) > 0) {
				pr.hung = true
				cancel() // run kills the whole process group: SIGTERM, then SIGKILL
			}
		}
	}
}

// limit is how long a process may stay silent. Inside a test it is the per-test timeout;
// outside one (interpreter start, torch import, collection, the benchmark between rows) it is
// at least outsideTestLimit, so a slow import on a loaded machine is not taken for a hang.
func (r *runner) limit(inTest bool) time.Duration {
	if inTest {
		return r.opts.Timeout
	}
	return max(r.opts.Timeout, outsideTestLimit)
}

// outsideTestLimit bounds the silence of a suite process outside any test.
const outsideTestLimit = 2 * time.Minute

func (r *runner) handle(e suiteEvent, file string, rep int, pr *procResult) {
	switch e.Event {
	case "env":
		changed := false
		if r.env.DeviceName == "" && e.DeviceName != "" {
			r.env.DeviceName = e.DeviceName
			changed = true
		}
		if r.env.Platform == "" && e.Platform != "" {
			r.env.Platform = e.Platform
			changed = true
		}
		if changed {
			r.obs.Env(r.env)
		}
	case "start":
		if e.ID == "" {
			return
		}
		pr.started++
		pr.open = append(pr.open, e.ID)
		pr.openAt[e.ID] = time.Now()
		r.obs.Started(r.opts.Target, e.ID)
	case "end":
		if e.ID == "" {
			return
		}
		for i, id := range pr.open {
			if id == e.ID {
				pr.open = append(pr.open[:i], pr.open[i+1:]...)
				break
			}
		}
		pr.ended = append(pr.ended, e.ID)
		o := parseOutcome(e.Outcome)
		msg := e.Message
		if o == Error && e.Outcome != string(Error) {
			msg = fmt.Sprintf("unknown outcome %q from the suite: %s", e.Outcome, msg)
		}
		res := Result{ID: e.ID, File: file, Repeat: rep, Outcome: o, Duration: e.Duration,
			Message: msg, Log: pr.log}
		if o.Failed() {
			res.Signatures = matchSignatures(e.Message)
		}
		r.result(res)
	case "boundary":
		if e.Op != "" {
			r.obs.Boundary(BoundaryRow{Target: r.opts.Target, Op: e.Op, Threads: e.Threads, Max: e.Max, Message: e.Message})
		}
	case "scaling":
		r.obs.Scaling(ScalingRow{Target: r.opts.Target, Model: e.Model, Mode: e.Mode, Threads: e.Threads,
			FPS: e.FPS, Efficiency: e.Efficiency, HostMS: e.HostMS, DeviceMS: e.DeviceMS,
			Ceiling: e.Ceiling, Label: e.Label, GIL: e.GIL})
	}
}

func (r *runner) relative(p string) string {
	if r.opts.ReportDir == "" {
		return p
	}
	rel, err := filepath.Rel(r.opts.ReportDir, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return p
	}
	return filepath.ToSlash(rel)
}

func outcomeWord(pr procResult, d processDeath) string {
	if pr.hung {
		return "timeout"
	}
	return d.String()
}

// crashMessage is the one line a report shows for a crash: how it died and the most telling
// line the process wrote to stderr (a known signature, else Python's fatal-error line, else
// the last line that is not a stack frame).
func crashMessage(d processDeath, stderr string) string {
	line := tellingLine(stderr)
	if line == "" {
		return "process died: " + d.String()
	}
	return "process died: " + d.String() + ": " + line
}

func tellingLine(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for _, s := range crashSignatures {
		for _, l := range lines {
			if strings.Contains(l, s.Match) {
				return strings.TrimSpace(l)
			}
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "Fatal Python error") {
			return strings.TrimSpace(l)
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "File \"") || strings.HasPrefix(l, "Thread 0x") ||
			strings.HasPrefix(l, "Current thread") || strings.HasPrefix(l, "Extension modules") {
			continue
		}
		return l
	}
	return ""
}

// pytestError picks the line that says why pytest stopped: its first "E   " line (the
// exception of a collection error), else the last lines of stderr, else of stdout.
func pytestError(pr procResult) string {
	for _, l := range strings.Split(pr.stdout, "\n") {
		if strings.HasPrefix(l, "E   ") {
			return strings.TrimSpace(l[1:])
		}
	}
	if s := lastLines(pr.stderr, 3); s != "" {
		return s
	}
	return lastLines(pr.stdout, 3)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
