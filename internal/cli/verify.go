package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mpspatch/mpspatch/internal/config"
	"github.com/mpspatch/mpspatch/internal/suiteparam"
	"github.com/mpspatch/mpspatch/verify"
)

// verifyFlags are the flags verify shares with run's verify stage: each is declared,
// defaulted from the config and checked here, once, for both commands.
type verifyFlags struct {
	device    string
	deviceSet bool // --device given, even as "": the config's device does not apply
	profile   string
	suites    []string
	noScaling bool
	suitesDir string
	// allowForeign runs the suites even when the tree's build is not the torch loaded.
	allowForeign bool
}

// addVerifyFlags declares the shared verify flags on f; deviceDefault says what an unset
// --device with no [verify] device means to this command.
func addVerifyFlags(f *pflag.FlagSet, o *verifyFlags, deviceDefault string) {
	f.BoolVar(&o.allowForeign, "allow-foreign-torch", false, "run the suites even when the torch loaded is not the tree's build (a warning instead)")
	f.StringVar(&o.device, "device", "", "device the suites run on: mps, cuda or cpu (default: [verify] device, else "+deviceDefault+")")
	f.StringVar(&o.profile, "profile", "", "suite profile: quick or full (default: [verify] profile)")
	f.StringArrayVar(&o.suites, "suite", nil, "run only this suite file (repeatable): raw_ops, test_models.py, ...")
	f.BoolVar(&o.noScaling, "no-scaling", false, "skip the scaling benchmark")
	f.StringVar(&o.suitesDir, "suites-dir", "", "run the suites in this directory instead of the embedded ones (for suite authors)")
}

// checkDevice is the one check of a --device value ("" leaves the choice to the default).
func checkDevice(device string) error {
	if _, err := suiteparam.ParseDevice(device); err != nil {
		return usageErrorf("--device: %v", err)
	}
	return nil
}

// verifyOptions are verify's flags: the shared ones and verify's own.
type verifyOptions struct {
	verifyFlags
	tree      string
	python    string
	threads   []int
	repeat    int
	baseline  string
	timeout   time.Duration
	reportDir string
	render    string

	threadsSet bool // --threads given on the command line (also sent to the benchmark)
}

func newVerifyCmd(d *deps) *cobra.Command {
	return newVerifyCmdRun(d, nil)
}

// newVerifyCmdRun builds the verify command; runF, when not nil, runs instead of the
// session with the options the flags gave (tests of the flags run nothing).
func newVerifyCmdRun(d *deps, runF func(context.Context, *verifyOptions) error) *cobra.Command {
	opts := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Run the concurrency suites against a PyTorch build and report",
		Long: `Run the Python concurrency suites (embedded in mpspatch) against the torch that an
interpreter loads, each suite file in its own process, and report every test.

Before anything runs, verify prints which torch is loaded: version, git hash, path, and the
mpspatch provenance stamp next to it when the build came from 'mpspatch build'. With --tree it
refuses (exit 5) to run when that torch is not the tree's build (loaded from elsewhere, or a
git version other than the tree's HEAD), unless --allow-foreign-torch.

A crash (segfault, abort, Metal assertion) or a hang past --timeout is recorded against the
test that was running, and the rest of the file continues in a fresh process: a crash costs
one test. Known crash messages are named (double-commit, handler-after-commit,
encoder-already-encoding, invalid-kerneldag, matmul-index-not-found, metal-assertion).

With --repeat N each suite file runs N times, and a test passes only if all N runs pass;
nothing is ever rerun automatically. --baseline runs the same suites against a second
interpreter (stock PyTorch) and reports both side by side; only the patched run decides
the exit status. A relative interpreter path is taken from the current directory; a bare
name (python3) is looked up in PATH.

Reports go to --report-dir: results.jsonl, junit.xml and report.html (self-contained, with
the scaling chart), written as results arrive; a verify that fails before running leaves
none. Exit 1 when any test fails, errors, crashes or times out; 5 when the interpreter is
not Python or has no torch or pytest.`,
		Example: `  mpspatch verify --device mps --profile full --repeat 5
  mpspatch verify --python venv/bin/python --baseline stock/bin/python --suite models
  mpspatch verify --device cpu --profile quick --json > results.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.threadsSet = cmd.Flags().Changed("threads")
			opts.deviceSet = cmd.Flags().Changed("device")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runVerify(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.tree, "tree", "", "PyTorch tree the build came from; refuse to run when python loads another torch")
	f.StringVar(&opts.python, "python", "", "interpreter whose torch is verified (default: [verify] python)")
	addVerifyFlags(f, &opts.verifyFlags, "the best available")
	f.IntSliceVar(&opts.threads, "threads", nil, "thread counts, e.g. 2,4,8 (default: [verify] threads)")
	f.IntVar(&opts.repeat, "repeat", 1, "run every suite file N times; a test passes only if all N runs pass")
	f.StringVar(&opts.baseline, "baseline", "", "second interpreter (stock PyTorch) to run the same suites against")
	f.DurationVar(&opts.timeout, "timeout", 0, "per-test limit before the test is a timeout (default: [verify] timeout)")
	f.StringVar(&opts.reportDir, "report-dir", "", "where reports are written (default: [verify] report_dir)")
	f.StringVar(&opts.render, "render", "", "run nothing: redraw junit.xml and report.html in --report-dir from a results.jsonl")
	return cmd
}

// resolve fills unset options from the config and checks them.
func (o *verifyOptions) resolve(c config.Config) error {
	v := c.Verify
	if o.python == "" {
		o.python = v.Python
	}
	if o.python == "" {
		o.python = "python3"
	}
	if !o.deviceSet {
		o.device = string(v.Device)
	}
	if o.profile == "" {
		o.profile = string(v.Profile)
	}
	if !o.threadsSet {
		o.threads = v.Threads
	}
	if o.baseline == "" {
		o.baseline = v.BaselinePython
	}
	if o.timeout == 0 {
		o.timeout = v.Timeout.Duration
	}
	if o.reportDir == "" {
		o.reportDir = v.ReportDir
	}
	if o.reportDir == "" {
		o.reportDir = "mpspatch-report"
	}
	if err := checkDevice(o.device); err != nil {
		return err
	}
	if _, err := suiteparam.ParseProfile(o.profile); err != nil {
		return usageErrorf("--profile: %v", err)
	}
	if o.repeat < 1 {
		return usageErrorf("--repeat: want 1 or more, have %d", o.repeat)
	}
	if o.timeout < 0 {
		return usageErrorf("--timeout: must not be negative")
	}
	for _, n := range o.threads {
		if n < 1 || n > 256 {
			return usageErrorf("--threads: thread count %d out of range 1..256", n)
		}
	}
	var names []string
	for _, s := range o.suites {
		for _, n := range strings.Split(s, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	o.suites = names
	return nil
}

// plan is the verify session the resolved options ask for.
func (o *verifyOptions) plan() (verify.Plan, error) {
	suitesDir := o.suitesDir
	if suitesDir != "" {
		abs, err := filepath.Abs(suitesDir)
		if err != nil {
			return verify.Plan{}, usageErrorf("--suites-dir %s: %v", o.suitesDir, err)
		}
		if _, err := os.Stat(filepath.Join(abs, "conftest.py")); err != nil {
			return verify.Plan{}, withCode(ExitUsage, fmt.Errorf("--suites-dir %s: no conftest.py there: %w", o.suitesDir, err))
		}
		suitesDir = abs
	}
	plan := verify.Plan{
		Python: o.python, Baseline: o.baseline, Device: o.device, Profile: o.profile,
		Threads: o.threads, ThreadsToBench: o.threadsSet, Repeat: o.repeat, Suites: o.suites,
		NoScaling: o.noScaling, Timeout: o.timeout, ReportDir: o.reportDir, SuitesDir: suitesDir,
		AllowForeign: o.allowForeign,
	}
	if tree := o.tree; tree != "" {
		plan.CheckTorch = func(ctx context.Context, e verify.Env) error { return foreignTorch(ctx, e, tree) }
	}
	return plan, nil
}

// args is the verify command line that runs o, for a log a person re-runs it from.
func (o *verifyOptions) args() []string {
	args := []string{"verify"}
	add := func(flag, value string) {
		if value != "" {
			args = append(args, flag, value)
		}
	}
	add("--python", o.python)
	add("--tree", o.tree)
	if o.allowForeign {
		args = append(args, "--allow-foreign-torch")
	}
	if o.deviceSet {
		args = append(args, "--device", o.device)
	}
	add("--profile", o.profile)
	if o.threadsSet {
		args = append(args, "--threads", joinInts(o.threads))
	}
	if o.repeat > 1 {
		args = append(args, "--repeat", fmt.Sprint(o.repeat))
	}
	add("--baseline", o.baseline)
	for _, s := range o.suites {
		args = append(args, "--suite", s)
	}
	if o.timeout > 0 {
		args = append(args, "--timeout", o.timeout.String())
	}
	add("--report-dir", o.reportDir)
	if o.noScaling {
		args = append(args, "--no-scaling")
	}
	add("--suites-dir", o.suitesDir)
	return args
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}

func runVerify(ctx context.Context, d *deps, opts *verifyOptions) error {
	p := d.printer()
	p.Stream()
	cfg, err := d.config()
	if err != nil {
		return err
	}
	if err := opts.resolve(cfg); err != nil {
		return err
	}
	if opts.render != "" {
		return renderVerify(p, opts)
	}
	plan, err := opts.plan()
	if err != nil {
		return err
	}
	term := &verifyTerminal{p: p, live: d.io.ErrTTY && !d.global.quiet && !p.json}
	rep, err := verify.Run(ctx, plan, term)
	term.clear()
	return finishVerify(ctx, p, rep, err, opts.reportDir)
}

// verifyInLog is `mpspatch verify` with the options o, for run's verify stage: the same
// defaults, checks and session, its text output made safe in log, which starts with the
// command line that does the same again by hand and ends with its exit code.
func verifyInLog(ctx context.Context, d *deps, o *verifyOptions, log io.Writer) (*verify.Report, error) {
	args := o.args()
	if d.global.configPath != "" {
		args = append([]string{"--config", d.global.configPath}, args...)
	}
	fmt.Fprintf(log, "$ mpspatch %s\n", strings.Join(args, " "))
	rep, err := func() (*verify.Report, error) {
		cfg, err := d.config()
		if err != nil {
			return nil, err
		}
		if err := o.resolve(cfg); err != nil {
			return nil, err
		}
		plan, err := o.plan()
		if err != nil {
			return nil, err
		}
		safe := newSafeWriter(log, false, false)
		defer safe.Flush()
		p := newPrinter(IOStreams{Out: safe, Err: safe}, false, false)
		term := &verifyTerminal{p: p}
		rep, err := verify.Run(ctx, plan, term)
		term.clear()
		return rep, finishVerify(ctx, p, rep, err, o.reportDir)
	}()
	code := exitCodeOf(err)
	fmt.Fprintf(log, "exit %d\n", code)
	var silent *silentError
	if errors.As(err, &silent) {
		err = withCode(code, errors.New(codeSummaries[code])) // the table in the log says which tests
	}
	return rep, err
}

// finishVerify shows the result of a verify session (the table, or the --json summary)
// and maps it to the command's exit: 1 when a test failed or none reported, 5 for an
// environment that cannot run the suites, 2 for a plan that selects nothing there is.
func finishVerify(ctx context.Context, p *printer, rep *verify.Report, err error, reportDir string) error {
	if rep == nil {
		return verifyStartError(ctx, err)
	}
	if p.json {
		_ = p.StreamSummary(verify.SummaryRecord(rep))
	} else {
		writeVerifyTable(p, rep, reportDir, verify.HTMLFile, verify.JUnitFile, verify.ResultsFile)
	}
	switch {
	case err != nil && rep.Interrupted:
		return ctx.Err()
	case err != nil:
		return fmt.Errorf("verify: %w", err)
	case rep.Failed():
		return &silentError{ExitCheckFailed}
	case len(rep.Results) == 0:
		return withCode(ExitCheckFailed, errors.New("verify: the suites reported no results"))
	}
	return nil
}

// verifyStartError maps the error of a session that failed before anything ran.
func verifyStartError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err() // "interrupted", whatever step it cut short
	}
	var pe *verify.ProbeError
	isProbe := errors.As(err, &pe)
	if isProbe && pe.Log != "" {
		err = &logError{err: err, log: pe.Log} // the --json error's details.log
	}
	switch {
	case errors.Is(err, verify.ErrUnsupported):
		return withCode(ExitUnsupported, err)
	case errors.Is(err, verify.ErrPlan):
		return withCode(ExitUsage, err)
	case isProbe:
		return err
	}
	return fmt.Errorf("verify: %w", err)
}
