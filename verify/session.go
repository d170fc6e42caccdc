package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Plan is one verify session, as the verify command and the verify stage of `mpspatch run`
// build it from their flags and the configuration: which interpreters, what runs, where it
// is reported. The caller has checked each value's form; Run checks what needs the suites
// or the interpreters.
type Plan struct {
	// Python is the interpreter whose torch is verified; Baseline, when set, a second one
	// (stock PyTorch) run against the same suites for comparison. A relative path is taken
	// from the working directory, a bare name is looked up in PATH.
	Python, Baseline string
	Device           string // mps, cuda or cpu; "": the best the patched interpreter has
	Profile          string // quick or full
	Threads          []int  // thread counts for the suites; nil: the suites' own
	// ThreadsToBench sends Threads (with 1 added, the efficiency's reference) to the scaling
	// benchmark too; otherwise the benchmark picks its counts by profile.
	ThreadsToBench bool
	Repeat         int // every suite file runs this many times; a test passes only if all pass
	// Suites names the suite files to run (see selectSuites); none: every suite and the
	// benchmark. Named suites narrow the run: the benchmark joins only when named.
	Suites    []string
	NoScaling bool          // never run the scaling benchmark
	Timeout   time.Duration // per-test silence before the test is a timeout; 0: none
	ReportDir string        // results.jsonl, junit.xml, report.html and logs/ go here
	SuitesDir string        // run the suites in this directory; "": the embedded ones

	// CheckTorch, when set, is asked about the patched interpreter's torch before anything
	// runs; its error says why that torch is not the build meant. (The caller knows builds:
	// verify does not import the builder.)
	CheckTorch func(context.Context, Env) error
	// AllowForeign makes CheckTorch's error a warning on the environment instead.
	AllowForeign bool
}

// Observer receives a session's milestones and, as they happen, everything its suites
// produce. Calls come from one goroutine. internal/cli prints from it.
type Observer interface {
	// Probing: the interpreter of target is being asked which torch it loads.
	Probing(target, interpreter string)
	// Ready: every interpreter answered and the reports are open; envs are in run order.
	Ready(info RunInfo, envs []Env)
	// Running: the suite files (files of them) start against e.
	Running(e Env, files int)

	// Env: what is known about a target changed (the suites named the device).
	Env(Env)
	Started(target, id string)
	Result(Result)
	Scaling(ScalingRow)
	Boundary(BoundaryRow)
	// Notice reports runner decisions a reader should know about (a restart after a crash).
	Notice(target, msg string)
}

// ErrPlan marks a plan that names what is not there (an unknown suite, a selection of
// nothing): the caller's usage error.
var ErrPlan = errors.New("invalid verify plan")

// ProbeError is an interpreter that failed the torch probe. Log is the probe's log, kept
// in the report directory and named by the message, when the interpreter printed anything
// ("" otherwise: the log is not kept).
type ProbeError struct {
	Target string
	Log    string
	Err    error
}

func (e *ProbeError) Error() string { return e.Err.Error() }
func (e *ProbeError) Unwrap() error { return e.Err }

// kindError gives err a kind (ErrPlan, ErrUnsupported) for errors.Is without changing its
// message.
type kindError struct{ kind, err error }

func (e *kindError) Error() string        { return e.err.Error() }
func (e *kindError) Unwrap() error        { return e.err }
func (e *kindError) Is(target error) bool { return target == e.kind }

// Run is one verify session: it materialises the suites, probes the interpreters (and asks
// plan.CheckTorch about the patched one), opens the report directory, and runs the suites
// against each target in turn, reporting to obs as it goes.
//
// An error before anything ran comes with no report and leaves the report directory as it
// was, but for a failed probe's log, which the error names (ProbeError); ErrUnsupported
// marks an environment that cannot run the suites, ErrPlan a plan that selects nothing
// there is. Once the suites ran, the report is returned, with an error when the session
// could not finish (interrupted: Report.Interrupted) or its reports could not be written.
// Test failures are in the report, never an error.
func Run(ctx context.Context, plan Plan, obs Observer) (*Report, error) {
	suitesDir := plan.SuitesDir
	if suitesDir == "" {
		tmp, err := os.MkdirTemp("", "mpspatch-suites-")
		if err != nil {
			return nil, fmt.Errorf("create suite dir: %w", err)
		}
		defer os.RemoveAll(tmp)
		if err := WriteSuites(tmp); err != nil {
			return nil, err
		}
		suitesDir = tmp
	}
	all, err := listSuites(suitesDir)
	if err != nil {
		return nil, err
	}
	files, scaling, err := plan.selection(all)
	if err != nil {
		return nil, err
	}

	out := &litter{}
	envs, err := probeAll(ctx, plan, obs, out)
	if err != nil {
		var pe *ProbeError
		keep := ""
		if errors.As(err, &pe) {
			keep = pe.Log
		}
		out.clean(keep)
		return nil, err
	}

	info := RunInfo{Profile: plan.Profile, Device: envs[0].Device, Threads: plan.Threads,
		Repeat: plan.Repeat, Timeout: plan.Timeout.String(), Suites: plan.Suites, Scaling: scaling,
		StartedAt: time.Now().UTC()}
	dw, err := newDirWriter(plan.ReportDir, info)
	if err != nil {
		out.clean("")
		return nil, err
	}
	for _, e := range envs {
		dw.Env(e)
	}
	obs.Ready(info, envs)

	var benchThreads []int
	if plan.ThreadsToBench {
		benchThreads = withOne(plan.Threads)
	}
	fan := observers{dw, obs}
	var runErr error
	for _, e := range envs {
		obs.Running(e, len(files))
		runErr = runSuites(ctx, suiteOptions{
			Target: e.Target, Env: e, Profile: plan.Profile, Threads: plan.Threads,
			BenchThreads: benchThreads, Repeat: plan.Repeat, Files: files, Scaling: scaling,
			Timeout: plan.Timeout, SuitesDir: suitesDir, LogDir: filepath.Join(plan.ReportDir, "logs"),
			ReportDir: plan.ReportDir,
		}, fan)
		if runErr != nil {
			break
		}
	}
	closeErr := dw.Close(runErr != nil && ctx.Err() != nil)
	switch {
	case runErr != nil:
		return dw.Report(), runErr
	case closeErr != nil:
		return dw.Report(), fmt.Errorf("reports: %w", closeErr)
	}
	return dw.Report(), nil
}

// selection is the suite files plan runs, in order, and whether the benchmark runs.
func (plan Plan) selection(all []string) (files []string, scaling bool, err error) {
	files, err = selectSuites(all, plan.Suites)
	if err != nil {
		return nil, false, &kindError{ErrPlan, err}
	}
	scaling = !plan.NoScaling
	if len(plan.Suites) > 0 {
		// Named suites narrow the run; the benchmark joins only when named.
		scaling = !plan.NoScaling && slices.ContainsFunc(plan.Suites, isBenchName)
		if len(files) == 0 && !scaling {
			return nil, false, &kindError{ErrPlan, errors.New("--suite selected nothing")}
		}
	}
	return files, scaling, nil
}

// probeAll asks the patched interpreter, then the baseline, which torch they load, each
// writing its output to a log in the report directory.
func probeAll(ctx context.Context, plan Plan, obs Observer, out *litter) ([]Env, error) {
	obs.Probing(TargetPatched, plan.Python)
	patched, err := probeTarget(ctx, plan.Python, TargetPatched, plan.Device, plan.ReportDir, out)
	if err != nil {
		return nil, err
	}
	if plan.CheckTorch != nil {
		if err := plan.CheckTorch(ctx, patched); err != nil {
			if !plan.AllowForeign {
				return nil, &kindError{ErrUnsupported, err}
			}
			patched.Warnings = append(patched.Warnings, err.Error()+" (--allow-foreign-torch: running anyway)")
		}
	}
	envs := []Env{patched}
	if plan.Baseline == "" {
		return envs, nil
	}
	obs.Probing(TargetBaseline, plan.Baseline)
	base, err := probeTarget(ctx, plan.Baseline, TargetBaseline, patched.Device, plan.ReportDir, out)
	if err != nil {
		return nil, err
	}
	if base.TorchPath == patched.TorchPath {
		base.Warnings = append(base.Warnings, "the baseline loads the same torch as the patched run ("+base.TorchPath+"): the comparison means nothing")
	}
	return append(envs, base), nil
}

func probeTarget(ctx context.Context, python, target, device, reportDir string, out *litter) (Env, error) {
	logPath := ""
	if dir := filepath.Join(reportDir, "logs"); out.mkdirAll(dir) == nil {
		logPath = filepath.Join(dir, "probe-"+target+".log")
		out.file(logPath)
	}
	e, err := probeWith(ctx, python, target, device, probeOptions{LogPath: logPath})
	if err == nil {
		return e, nil
	}
	if ctx.Err() != nil {
		return Env{}, ctx.Err()
	}
	var pe *ProbeError
	if !errors.As(err, &pe) {
		pe = &ProbeError{Err: err} // nothing printed: no log worth keeping
	}
	pe.Target = target
	if target != TargetPatched {
		pe.Err = fmt.Errorf("%s: %w", target, pe.Err)
	}
	return Env{}, pe
}

// litter is what a session created in the report directory before it knew there would be
// a report: taken away again when the session ends before running anything, so a verify
// that fails at the start leaves no ./mpspatch-report behind.
type litter struct {
	dirs, files []string // in creation order
}

// mkdirAll is os.MkdirAll, remembering the directories it created.
func (l *litter) mkdirAll(dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		l.dirs = append(l.dirs, missing[i])
	}
	return nil
}

// file remembers path when it does not exist yet: the session is about to create it.
func (l *litter) file(path string) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		l.files = append(l.files, path)
	}
}

// clean removes what the session created, but keep (a log an error names) and anything
// placed in its directories since; a directory that is not empty stays.
func (l *litter) clean(keep string) {
	for _, f := range l.files {
		if f != keep {
			_ = os.Remove(f)
		}
	}
	for i := len(l.dirs) - 1; i >= 0; i-- {
		_ = os.Remove(l.dirs[i]) // only an empty directory goes
	}
}

// withOne returns threads with 1 first: the benchmark's efficiency is relative to one thread.
func withOne(threads []int) []int {
	out := []int{1}
	for _, n := range threads {
		if n != 1 {
			out = append(out, n)
		}
	}
	slices.Sort(out[1:])
	return out
}

// interpreterPath is the path an interpreter named by the user is started by: a relative
// path (venv/bin/python) is taken from the working directory, which the suite processes,
// running in the suites' directory, do not share; a bare name is left to PATH.
func interpreterPath(python string) string {
	if filepath.IsAbs(python) || !strings.ContainsRune(python, filepath.Separator) && !strings.ContainsRune(python, '/') {
		return python
	}
	if abs, err := filepath.Abs(python); err == nil {
		return abs
	}
	return python
}
