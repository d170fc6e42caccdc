package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/pipeline"
	"github.com/mpspatch/mpspatch/internal/redact"
	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/internal/statekey"
	"github.com/mpspatch/mpspatch/internal/suiteparam"
	"github.com/mpspatch/mpspatch/metalcheck"
	"github.com/mpspatch/mpspatch/verify"
)

// hostOS is the platform the run decides Mac-only stages by; tests override it.
var hostOS = runtime.GOOS

type runOptions struct {
	dir         string
	patches     string
	from, until string
	full        bool
	build       bool
	python      string
	reportDir   string
	format      string
	summaryFile string
	// verifyFlags are verify's own flags, declared and checked by verify (addVerifyFlags).
	verifyFlags
}

// The stages of `mpspatch run`, in order.
var runStages = []string{"clone", "apply", "audit", "build", "probe", "verify"}

// newRunCmd builds run; runF, when not nil, replaces the work (tests of the flags read
// the options it is given and run nothing).
func newRunCmd(d *deps, runF func(context.Context, *runOptions) error) *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [DIR]",
		Short: "Do the whole job: clone, apply, audit, build, probe, verify — resumable",
		Long: `Run the whole flow in one command: clone PyTorch at the pinned commit into DIR (or
--dir), apply the series, audit the MPS sources, build, run the Metal probe, and verify
with the concurrency suites. Each stage runs the same code as its own command, with its
full output in a log under DIR/.mpspatch/run/logs/ that starts with the command line doing
the same by hand; its progress is shown on stderr meanwhile (one redrawn line on a
terminal).

Resumable: each stage that succeeds records a stamp of what it depended on (the series,
the pinned commit, the interpreter, flags, the patched files, the mpspatch version), chained
to the stage before it. A re-run skips the stages whose inputs are unchanged and says so;
when something changed, that stage and every stage after it run again. The apply stage is
judged by the tree itself: it is up to date only while the files the series touches are as
it left them (as status sees them), so a tree unapplied since is applied again. --from
STAGE runs from there whatever the stamps say; --until STAGE stops after it. A stage
interrupted by Ctrl-C or a kill has no stamp and runs again next time; the stamps of
finished stages stay valid. Stamps are authenticated with a key kept in the user's config
directory and bound to this checkout (its directory and path), so stamps that came with a
checkout, or with a copy of one, are never trusted.

run holds the tree's lock from before the apply until the build is done: another mpspatch
that would write the tree meanwhile waits a few seconds, then gives up (exit 3). What run
writes (DIR/.mpspatch/run: stamps, logs, reports) is checked before the first write: a
symbolic link on the way there, or a report directory under .git, is refused (exit 2).
A directory that is neither empty nor a checkout is refused before anything is written.

Stages that need a Mac are reported as skipped, with the reason, on other platforms: the
MPS build (--build builds anyway, e.g. a CPU or CUDA build), the Metal probe, and verify on
mps (--device cpu or cuda runs the suites against --python instead).

At the end one summary: per stage its outcome, time, and its report or log; text, --json,
or --format markdown (also appended to --summary-file, by default $GITHUB_STEP_SUMMARY
when that is set). The exit code is the first failing stage's code.`,
		Example: `  mpspatch run ~/src/pytorch                       # on a Mac: everything
  mpspatch run --dir pytorch --device cpu --python /usr/bin/python3   # Linux CI: the suites on CPU
  mpspatch run pytorch --from build                # rebuild and re-verify
  mpspatch run pytorch --until audit --format markdown`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if cmd.Flags().Changed("dir") && args[0] != opts.dir {
					return usageErrorf("give the directory once: as an argument or as --dir")
				}
				opts.dir = args[0]
			}
			if err := opts.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.dir, "dir", "pytorch", "the PyTorch checkout: cloned there when missing")
	f.StringVar(&opts.patches, "patches", "", "series directory (default: config patches.dir, else the built-in series)")
	f.StringVar(&opts.from, "from", "", "run this stage and every later one whatever their stamps say ("+strings.Join(runStages, ", ")+")")
	f.StringVar(&opts.until, "until", "", "stop after this stage")
	f.BoolVar(&opts.full, "full", false, "clone the whole history (for rebasing the series), not only the commit")
	f.BoolVar(&opts.build, "build", false, "build on a platform without MPS too (default: build only on macOS)")
	f.StringVar(&opts.python, "python", "", "interpreter that builds and is verified (default: config build.python / verify.python)")
	addVerifyFlags(f, &opts.verifyFlags, "mps")
	_ = f.MarkHidden("suites-dir")
	f.StringVar(&opts.reportDir, "report-dir", "", "where verify and audit reports go (default: DIR/.mpspatch/run/report)")
	f.StringVar(&opts.format, "format", "", "summary format: text, json or markdown (default text; json with --json)")
	f.StringVar(&opts.summaryFile, "summary-file", "", "also append the Markdown summary to this file (default: $GITHUB_STEP_SUMMARY when set)")
	return cmd
}

// check refuses flags that cannot work together, before anything is read or written.
func (o *runOptions) check() error {
	for _, s := range []string{o.from, o.until} {
		if s != "" && !slices.Contains(runStages, s) {
			return usageErrorf("stage %q: want one of %s", s, strings.Join(runStages, ", "))
		}
	}
	if o.from != "" && o.until != "" && slices.Index(runStages, o.until) < slices.Index(runStages, o.from) {
		return usageErrorf("--until %s comes before --from %s", o.until, o.from)
	}
	if err := checkDevice(o.device); err != nil {
		return err
	}
	return nil
}

func runRun(ctx context.Context, d *deps, opts *runOptions) error {
	format, err := d.outputFormat(opts.format, runFormats)
	if err != nil {
		return err
	}
	cfg, err := d.config()
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(opts.dir)
	if err != nil {
		return usageErrorf("--dir %s: %v", opts.dir, err)
	}
	s, err := d.loadSeries(ctx, &treeOptions{patches: opts.patches})
	if err != nil {
		return err
	}
	device := opts.device
	if device == "" {
		device = string(cfg.Verify.Device)
	}
	if device == "" {
		device = string(suiteparam.MPS)
	}
	reportDir := opts.reportDir
	if reportDir == "" {
		reportDir = filepath.Join(dir, filepath.FromSlash(runReportDir))
	} else if reportDir, err = filepath.Abs(reportDir); err != nil {
		return usageErrorf("--report-dir %s: %v", opts.reportDir, err)
	}
	if reportDir == dir {
		return usageErrorf("--report-dir %s is the tree itself; give the reports a directory of their own", opts.reportDir)
	}
	summaryFile := opts.summaryFile
	if summaryFile == "" {
		summaryFile = d.io.getenv("GITHUB_STEP_SUMMARY")
	}

	// Every place run writes is checked before the first write, and opened so that no
	// write can leave it; the tree's lock is held from here (see runState).
	state, err := openRunState(dir, reportDir)
	if err != nil {
		return err
	}
	defer state.close()

	r := &runner{d: d, opts: opts, dir: dir, device: device, reportDir: reportDir, series: s, state: state,
		url: cfg.Upstream.URL, commit: cfg.Upstream.Commit,
		buildPython: cmp.Or(opts.python, cfg.Build.Python), verifyPython: cmp.Or(opts.python, cfg.Verify.Python)}
	p := d.printer()
	r.view = newStageView(p, d.io.ErrTTY)
	key, err := statekey.Ensure()
	if err != nil {
		p.Warnf("%v; stages will not be stamped and all run every time", err)
	}
	sum, err := pipeline.Run(ctx, r.stages(), pipeline.Options{
		Stamps: state.stamps, Logs: state.logs, Key: key, Checkout: state.checkout,
		From: opts.from, Until: opts.until, CodeOf: exitCodeOf, Reporter: runReporter{p: p, view: r.view},
	})
	if err != nil {
		// The stages were checked above: what is left is a stamp or log that could not be
		// written (exit 2 when its directory was found unsafe since).
		return confinedError(err)
	}
	rep := runReport{Dir: dir, Series: s.Hash(), Device: device, Summary: sum}
	if summaryFile != "" {
		if err := appendFile(summaryFile, markdownRunSummary(rep)); err != nil {
			p.Warnf("summary file: %v", err)
		}
	}
	var perr error
	switch format {
	case formatJSON:
		// Through the printer, so a failed run's document carries the error member too.
		perr = p.RawResult(func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		})
	case formatMarkdown:
		_, perr = io.WriteString(d.io.Out, markdownRunSummary(rep))
	default:
		perr = p.Result(rep, func(w io.Writer) { writeRunText(w, p, rep) })
	}
	if perr != nil {
		return perr
	}
	if sum.Code != 0 {
		return &silentError{code: sum.Code}
	}
	return nil
}

// runReport is the result of `mpspatch run`.
type runReport struct {
	Dir    string `json:"dir"`
	Series string `json:"series"`
	Device string `json:"device"`
	*pipeline.Summary
}

// runner builds the stages of one run.
type runner struct {
	d         *deps
	opts      *runOptions
	dir       string
	device    string
	reportDir string
	series    *series.Series
	state     *runState
	url       string
	commit    string
	// The interpreters as configured or given: part of the build's and verify's inputs.
	buildPython, verifyPython string
	built                     bool // the build stage ran or is up to date in this run
	// view shows the running stage's progress on run's stderr.
	view *stageView
}

func (r *runner) stages() []pipeline.Stage {
	needsMac := func(what string) func() string {
		return func() string {
			if hostOS == "darwin" {
				return ""
			}
			return what + " needs macOS (this is " + hostOS + ")"
		}
	}
	common := func() map[string]string {
		return map[string]string{"mpspatch": version, "series": r.series.Hash()}
	}
	// The probe and verify read only the build: the tree's lock is given back when the
	// pipeline reaches them (a verify on a Mac takes an hour; status must not wait for it).
	afterTheTree := func(skip func() string) func() string {
		return func() string {
			r.state.releaseLock()
			return skip()
		}
	}
	return []pipeline.Stage{
		{
			Name: "clone",
			Inputs: func(context.Context) (map[string]string, error) {
				return map[string]string{"url": gitcli.RedactURL(r.url), "commit": r.commit, "full": fmt.Sprint(r.opts.full)}, nil
			},
			Run: r.clone,
		},
		{
			Name: "apply",
			Inputs: func(context.Context) (map[string]string, error) {
				return common(), nil
			},
			// Judged by the tree itself: up to date only while the files the series
			// touches are as this stage left them (an unapplied tree runs it again).
			State: r.treeState,
			Run:   r.apply,
		},
		{
			Name: "audit",
			Inputs: func(ctx context.Context) (map[string]string, error) {
				in := common()
				state, err := r.treeState(ctx)
				if err != nil {
					return nil, err
				}
				in["touched-files"] = state["tree"]
				return in, nil
			},
			Run: r.audit,
		},
		{
			Name: "build",
			Skip: func() string {
				if r.opts.build {
					return ""
				}
				return needsMac("the MPS build")() + "; --build builds anyway"
			},
			Inputs: func(context.Context) (map[string]string, error) {
				in := common()
				in["python"] = r.buildPython
				return in, nil
			},
			Run: r.build,
		},
		{
			Name: "probe",
			Skip: afterTheTree(needsMac("the Metal probe")),
			Inputs: func(context.Context) (map[string]string, error) {
				return map[string]string{"mpspatch": version}, nil
			},
			Run: r.probe,
		},
		{
			Name: "verify",
			Skip: afterTheTree(func() string {
				if r.device == "mps" && hostOS != "darwin" {
					return "verify on mps needs macOS (this is " + hostOS + "); --device cpu or cuda runs the suites here"
				}
				return ""
			}),
			Inputs: func(context.Context) (map[string]string, error) {
				in := common()
				in["device"], in["python"], in["profile"] = r.device, r.verifyPython, r.opts.profile
				in["suites"] = strings.Join(r.opts.suites, ",")
				in["scaling"] = fmt.Sprint(!r.opts.noScaling)
				in["suites-dir"] = r.opts.suitesDir
				in["report-dir"] = r.reportDir
				in["allow-foreign-torch"] = fmt.Sprint(r.opts.allowForeign)
				return in, nil
			},
			Run: r.verify,
		},
	}
}

func (r *runner) withPatches(args ...string) []string {
	if r.opts.patches != "" {
		args = append(args, "--patches", r.opts.patches)
	}
	return args
}

// clone checks out the pinned commit into the directory, or accepts a checkout that is
// already there at that commit. A checkout at another commit is refused: the series was
// written for the pinned one, and silently patching another base is how wrong results
// start. A clone that was interrupted is handed to `mpspatch clone`, which resumes it.
func (r *runner) clone(ctx context.Context, log io.Writer) (pipeline.Result, error) {
	if _, err := os.Stat(filepath.Join(r.dir, ".git")); err == nil && !gitcli.CloneInterrupted(r.dir) {
		g := &gitcli.Git{}
		head, err := g.RevParse(ctx, r.dir, "HEAD")
		if err != nil {
			return pipeline.Result{}, gitError(err)
		}
		if head != r.commit {
			return pipeline.Result{}, usageErrorf("%s is a checkout of %s, not of the pinned commit %s; use another --dir or check out the pinned commit", r.dir, head, r.commit)
		}
		fmt.Fprintf(log, "%s is already a checkout of %s\n", r.dir, head)
		return pipeline.Result{Detail: "checkout already at " + shortSHA(head)}, nil
	}
	args := []string{"clone", "--dir", r.dir}
	if r.opts.full {
		args = append(args, "--full")
	}
	opts := &cloneOptions{dir: r.dir, full: r.opts.full, filter: defaultCloneFilter, jobs: defaultCloneJobs}
	var rep *cloneReport
	err := r.stage(ctx, log, args, func(ctx context.Context, d *deps) (err error) {
		if rep, err = clone(ctx, d, opts); err != nil {
			return err
		}
		return writeClone(d.printer(), rep)
	})
	if err != nil {
		return pipeline.Result{}, err
	}
	return pipeline.Result{Detail: "cloned " + shortSHA(rep.Commit), Report: rep.Log}, nil
}

// apply applies the series to the tree, under the lock run holds.
func (r *runner) apply(ctx context.Context, log io.Writer) (pipeline.Result, error) {
	opts := &applyOptions{treeOptions: treeOptions{tree: r.dir, patches: r.opts.patches}}
	var res pipeline.Result
	err := r.stage(ctx, log, r.withPatches("apply", "--tree", r.dir), func(ctx context.Context, d *deps) error {
		rep, err := apply(ctx, d, opts)
		if rep == nil {
			return err
		}
		// The report's text for the log; the stage's outcome is the apply's own, without
		// the silence of a command whose report went to the terminal.
		_ = writeApply(d.printer(), rep, err)
		if rep.Noop {
			res.Detail = "the tree already held the series"
		} else {
			res.Detail = plural(len(rep.Patches), "patch") + " applied"
		}
		return applyError(rep, err)
	})
	if err != nil {
		return pipeline.Result{}, err
	}
	return res, nil
}

// build builds the tree, under the lock run holds (nothing may change the tree while it
// compiles).
func (r *runner) build(ctx context.Context, log io.Writer) (pipeline.Result, error) {
	args := []string{"build", "--tree", r.dir}
	if r.opts.python != "" {
		args = append(args, "--python", r.opts.python)
	}
	// jobs -1: the config's build.jobs, as the command without --jobs.
	opts := &buildOptions{treeOptions: treeOptions{tree: r.dir, patches: r.opts.patches}, python: r.opts.python, jobs: -1}
	var rep *buildReport
	err := r.stage(ctx, log, r.withPatches(args...), func(ctx context.Context, d *deps) (err error) {
		if rep, err = build(ctx, d, opts); err != nil {
			return err
		}
		return writeBuild(d.printer(), rep)
	})
	if err != nil {
		return pipeline.Result{}, err
	}
	r.built = true
	detail := fmt.Sprintf("built in %.0f s", rep.Seconds)
	if rep.UpToDate {
		detail = "up to date (nothing built)"
	}
	return pipeline.Result{Detail: detail, Report: rep.Log}, nil
}

// probe runs the Metal probe with its default matrix.
func (r *runner) probe(ctx context.Context, log io.Writer) (pipeline.Result, error) {
	err := r.stage(ctx, log, []string{"probe"}, func(ctx context.Context, d *deps) error {
		rep, err := probeMetal(ctx, d, newProbeOptions())
		if rep == nil {
			return err
		}
		werr := writeProbe(d.printer(), rep, err)
		var silent *silentError
		if errors.As(werr, &silent) {
			// The report, in the log, names the scenarios; the reason says where it is.
			return withCode(silent.code, errors.New("scenarios failed; the report is in the log"))
		}
		return werr
	})
	return pipeline.Result{}, err
}

// audit runs the audit: its text report in the log, its SARIF kept in the report
// directory, where CI uploads it to code scanning.
func (r *runner) audit(ctx context.Context, log io.Writer) (pipeline.Result, error) {
	const sarifName = "audit.sarif"
	path := filepath.Join(r.state.report.Path(), sarifName)
	var res pipeline.Result
	err := r.stage(ctx, log, []string{"audit", "--tree", r.dir}, func(ctx context.Context, d *deps) error {
		rep, err := audit(ctx, d, &auditOptions{tree: r.dir})
		if err != nil {
			return err
		}
		var sarif bytes.Buffer
		if err := metalcheck.WriteSARIF(&sarif, rep.Result, rep.Reasons); err != nil {
			return err
		}
		// Redacted as the command's --format sarif is: as JSON, its strings only.
		if err := r.state.report.WriteFile(sarifName, redact.JSON(sarif.Bytes()), 0o644); err != nil {
			return err
		}
		res = pipeline.Result{Detail: plural(len(rep.New)+len(rep.Accepted), "finding"), Report: path}
		_ = writeAudit(d.printer(), "text", rep)
		fmt.Fprintf(d.io.Out, "SARIF: %s (mpspatch audit --tree %s --format sarif)\n", path, r.dir)
		if len(rep.New) > 0 {
			return withCode(ExitCheckFailed, fmt.Errorf("%s not in the baseline (see %s)", plural(len(rep.New), "new finding"), path))
		}
		return nil
	})
	return res, err
}

func (r *runner) verify(ctx context.Context, log io.Writer) (pipeline.Result, error) {
	// verify writes its reports by name: nothing in the directory may send them elsewhere
	// (checked before the run began, and again now that the build has run in the tree).
	if err := r.state.report.CheckNoLinks(); err != nil {
		return pipeline.Result{}, confinedError(err)
	}
	// The options `mpspatch verify` would have; the log shows that command line.
	o := &verifyOptions{verifyFlags: r.opts.verifyFlags, python: r.opts.python, reportDir: r.reportDir, repeat: 1}
	o.device, o.deviceSet = r.device, true
	if r.built {
		// Only a torch built in this tree is checked against it; without a build the
		// suites run against whatever torch the interpreter has, as the summary says.
		o.tree = r.dir
	} else {
		o.allowForeign = false
	}
	rep, err := verifyInLog(ctx, r.d, o, log)
	res := pipeline.Result{Report: filepath.Join(r.reportDir, verify.HTMLFile)}
	if rep != nil {
		counts := map[string]int{}
		for o, n := range rep.Counts(verify.TargetPatched) {
			counts[string(o)] = n
		}
		res.Detail = formatCounts(rep.Status(), counts)
	}
	return res, err
}

func formatCounts(status string, counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := []string{status}
	for _, k := range keys {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// stage does one command's work as a stage of run, under the tree lock run holds: in the
// log first the command line that does the same by hand, then what the command prints
// (its text result and progress), then how it ended. do's error is the stage's, as the
// command's own error: the pipeline's summary and progress line add only the stage.
func (r *runner) stage(ctx context.Context, log io.Writer, args []string, do func(context.Context, *deps) error) error {
	if r.d.global.configPath != "" {
		args = append([]string{"--config", r.d.global.configPath}, args...)
	}
	own := newSafeWriter(log, false, false)
	defer own.Flush()
	fmt.Fprintf(own, "$ mpspatch %s\n", strings.Join(args, " "))
	own.Flush()
	d, done := r.stageDeps(log)
	err := do(withHeldTreeLock(ctx, r.state.lock), d)
	done()
	code := exitCodeOf(err)
	if err != nil {
		if ctx.Err() != nil {
			code = ExitInterrupted
		}
		fmt.Fprintf(own, "mpspatch: %s\n", errorMessage(err, code))
	}
	fmt.Fprintf(own, "exit %d\n", code)
	if err != nil && strings.Contains(err.Error(), "\n") {
		// The summary's reason is one line; the rest (a build's first errors) is above.
		return firstLineError{err}
	}
	return err
}

// firstLineError is err, read as its first line.
type firstLineError struct{ err error }

func (e firstLineError) Error() string {
	line, _, _ := strings.Cut(e.err.Error(), "\n")
	return line
}

func (e firstLineError) Unwrap() error { return e.err }

// stageDeps are the deps of a command run as a stage: run's config, no --json, its
// results and progress in the stage's log (through the filters Main puts on stdout and
// stderr), its progress shown live too (see stageView). done flushes them.
func (r *runner) stageDeps(log io.Writer) (d *deps, done func()) {
	out := newSafeWriter(log, false, false)
	errw := newSafeWriter(io.MultiWriter(log, r.view), false, false)
	d = &deps{
		io:     IOStreams{In: strings.NewReader(""), Out: out, Err: errw, Getenv: r.d.io.Getenv},
		global: &globalOptions{configPath: r.d.global.configPath},
	}
	return d, func() {
		out.Flush()
		errw.Flush()
		r.view.end()
	}
}

// treeState is the tree's state for the files the series touches, as `mpspatch status`
// computes it (each file's version and blob, an interrupted write), read under the lock
// run holds: the apply stage's state, and the audit's input.
func (r *runner) treeState(context.Context) (map[string]string, error) {
	ts, err := series.InspectLocked(r.state.root, r.series, r.state.lock)
	if err != nil {
		return nil, engineError(fmt.Errorf("read the state of %s: %w", r.dir, err))
	}
	data, err := json.Marshal(struct {
		Applied     int                  `json:"applied"`
		Files       []series.FileStatus  `json:"files"`
		Interrupted *series.Interruption `json:"interrupted,omitempty"`
	}{ts.Applied, ts.Files, ts.Interrupted})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	return map[string]string{"tree": hex.EncodeToString(sum[:]), "summary": string(ts.Summary())}, nil
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// runReporter shows stage progress on stderr: a line as each stage starts and ends, the
// running stage's own progress between them (view).
type runReporter struct {
	p    *printer
	view *stageView
}

func (r runReporter) Start(name string, i, n int, log string) {
	r.view.bar.clear()
	r.p.Progressf("run: [%d/%d] %s (log %s)", i, n, name, log)
}

func (r runReporter) Done(s pipeline.StageReport) {
	r.view.end()
	r.view.bar.clear()
	switch s.Outcome {
	case pipeline.Ran:
		r.p.Progressf("run: %s done in %s%s", s.Name, roundSeconds(s.Seconds), suffix(s.Detail))
	case pipeline.UpToDate:
		r.p.Progressf("run: %s up to date, skipped%s", s.Name, suffix(s.Detail))
	case pipeline.Skipped:
		r.p.Progressf("run: %s skipped: %s", s.Name, s.Reason)
	case pipeline.Failed, pipeline.Interrupted:
		r.p.Progressf("run: %s %s (exit %d): %s", s.Name, s.Outcome, s.Code, s.Reason)
	}
}

// stageView shows the running stage's progress on run's stderr. It is written what the
// stage writes to its stderr, which are already the plain lines a command prints when its
// stderr is not a terminal (a line per build phase or 5%, per clone phase or 10%, never
// one per git update). On a terminal each line replaces the last on one redrawn line (the
// build's progressLine); elsewhere each is printed once. Warnings keep a line of their
// own; a command's closing error line is left to the stage's summary line.
type stageView struct {
	mu   sync.Mutex
	p    *printer
	bar  *progressLine
	part []byte // a line not yet ended
}

// maxViewLine bounds a line the view holds while waiting for its end.
const maxViewLine = 4 << 10

func newStageView(p *printer, tty bool) *stageView {
	return &stageView{p: p, bar: newProgressLine(p, tty)}
}

func (v *stageView) Write(b []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.part = append(v.part, b...)
	for {
		i := bytes.IndexByte(v.part, '\n')
		if i < 0 {
			break
		}
		v.show(string(v.part[:i]))
		v.part = v.part[i+1:]
	}
	if len(v.part) > maxViewLine {
		v.show(string(v.part))
		v.part = v.part[:0]
	}
	return len(b), nil
}

// end shows what is left of an unfinished line when a stage ends.
func (v *stageView) end() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.part) > 0 {
		v.show(string(v.part))
		v.part = v.part[:0]
	}
}

func (v *stageView) show(line string) {
	line = strings.TrimRight(line, "\r")
	switch {
	case line == "", strings.HasPrefix(line, "mpspatch: "):
	case strings.HasPrefix(line, "warning: "):
		v.bar.clear()
		v.p.Warnf("%s", strings.TrimPrefix(line, "warning: "))
	default:
		v.bar.update(line, line, false)
	}
}

func suffix(detail string) string {
	if detail == "" {
		return ""
	}
	return ": " + detail
}

func roundSeconds(s float64) string {
	return (time.Duration(s*1000) * time.Millisecond).Round(10 * time.Millisecond).String()
}

func writeRunText(w io.Writer, p *printer, rep runReport) {
	fmt.Fprintf(w, "mpspatch run %s (series %s, device %s)\n", rep.Dir, shortHash(rep.Series), rep.Device)
	for _, s := range rep.Stages {
		c := dim
		switch s.Outcome {
		case pipeline.Ran, pipeline.UpToDate:
			c = green
		case pipeline.Failed, pipeline.Interrupted:
			c = red
		}
		// Pad by the visible width: colour codes must not push the columns apart.
		label := string(s.Outcome)
		fmt.Fprintf(w, "  %-7s %s%s %8s  %s\n", s.Name, p.Paint(c, label), strings.Repeat(" ", max(0, 12-len(label))),
			roundSeconds(s.Seconds), runStageNote(s))
	}
	if rep.Code == 0 {
		fmt.Fprintf(w, "%s in %s\n", p.Paint(green, "ok"), roundSeconds(rep.Seconds))
	} else {
		fmt.Fprintf(w, "%s (exit %d) in %s\n", p.Paint(red, "failed"), rep.Code, roundSeconds(rep.Seconds))
	}
}

// runStageNote is the last column of a stage's line: what it did, or why not, and where
// to look.
func runStageNote(s pipeline.StageReport) string {
	var parts []string
	switch s.Outcome {
	case pipeline.Skipped, pipeline.Failed, pipeline.Interrupted:
		parts = append(parts, s.Reason)
	}
	if s.Detail != "" && s.Outcome != pipeline.Skipped {
		parts = append(parts, s.Detail)
	}
	if s.Report != "" {
		parts = append(parts, "report "+s.Report)
	} else if s.Log != "" && s.Outcome != pipeline.UpToDate {
		parts = append(parts, "log "+s.Log)
	}
	return strings.Join(parts, "; ")
}

// markdownRunSummary renders the summary as a Markdown table, for a CI job summary or a
// pull-request comment.
func markdownRunSummary(rep runReport) string {
	var b strings.Builder
	status := "ok"
	if rep.Code != 0 {
		status = fmt.Sprintf("failed (exit %d)", rep.Code)
	}
	fmt.Fprintf(&b, "### mpspatch run: %s\n\n", status)
	fmt.Fprintf(&b, "Series `%s`, device `%s`, %s.\n\n", shortHash(rep.Series), rep.Device, roundSeconds(rep.Seconds))
	b.WriteString("| stage | outcome | time | notes |\n|---|---|---|---|\n")
	for _, s := range rep.Stages {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", s.Name, s.Outcome, roundSeconds(s.Seconds), markdownCell(runStageNote(s)))
	}
	return b.String()
}

func markdownCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
