package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/suiteparam"
	"github.com/mpspatch/mpspatch/verify"
)

type verifyOptions struct {
	tree      string
	python    string
	device    string
	profile   string
	threads   []int
	repeat    int
	baseline  string
	suites    []string
	timeout   time.Duration
	reportDir string
	noScaling bool
	suitesDir string
	render    string
	// allowForeign runs the suites even when --tree's build is not the torch loaded.
	allowForeign bool

	threadsSet bool // --threads given on the command line (also sent to the benchmark)
}

func newVerifyCmd(d *deps) *cobra.Command {
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
the exit status.

Reports go to --report-dir: results.jsonl, junit.xml and report.html (self-contained, with
the scaling chart), written as results arrive. Exit 1 when any test fails, errors, crashes
or times out; 5 when the interpreter has no torch or pytest.`,
		Example: `  mpspatch verify --device mps --profile full --repeat 5
  mpspatch verify --python venv/bin/python --baseline stock/bin/python --suite models
  mpspatch verify --device cpu --profile quick --json > results.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.threadsSet = cmd.Flags().Changed("threads")
			return runVerify(cmd.Context(), d, cmd, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.tree, "tree", "", "PyTorch tree the build came from; refuse to run when python loads another torch")
	f.BoolVar(&opts.allowForeign, "allow-foreign-torch", false, "with --tree: run even when the torch loaded is not the tree's build (a warning instead)")
	f.StringVar(&opts.python, "python", "", "interpreter whose torch is verified (default: [verify] python)")
	f.StringVar(&opts.device, "device", "", "mps, cuda or cpu (default: [verify] device, else the best available)")
	f.StringVar(&opts.profile, "profile", "", "quick or full (default: [verify] profile)")
	f.IntSliceVar(&opts.threads, "threads", nil, "thread counts, e.g. 2,4,8 (default: [verify] threads)")
	f.IntVar(&opts.repeat, "repeat", 1, "run every suite file N times; a test passes only if all N runs pass")
	f.StringVar(&opts.baseline, "baseline", "", "second interpreter (stock PyTorch) to run the same suites against")
	f.StringArrayVar(&opts.suites, "suite", nil, "run only this suite file (repeatable): raw_ops, test_models.py, ...")
	f.DurationVar(&opts.timeout, "timeout", 0, "per-test limit before the test is a timeout (default: [verify] timeout)")
	f.StringVar(&opts.reportDir, "report-dir", "", "where reports are written (default: [verify] report_dir)")
	f.BoolVar(&opts.noScaling, "no-scaling", false, "skip the scaling benchmark")
	f.StringVar(&opts.render, "render", "", "run nothing: redraw junit.xml and report.html in --report-dir from a results.jsonl")
	f.StringVar(&opts.suitesDir, "suites-dir", "", "run the suites in this directory instead of the embedded ones (for suite authors)")
	return cmd
}

// resolve fills unset options from the config and checks them.
func (o *verifyOptions) resolve(d *deps, cmd *cobra.Command) error {
	c, err := d.config()
	if err != nil {
		return err
	}
	v := c.Verify
	if o.python == "" {
		o.python = v.Python
	}
	if o.python == "" {
		o.python = "python3"
	}
	if !cmd.Flags().Changed("device") {
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
	if _, err := suiteparam.ParseDevice(o.device); err != nil {
		return usageErrorf("--device: %v", err)
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

func runVerify(ctx context.Context, d *deps, cmd *cobra.Command, opts *verifyOptions) error {
	p := d.printer()
	p.Stream()
	if err := opts.resolve(d, cmd); err != nil {
		return err
	}
	if opts.render != "" {
		return renderVerify(p, opts)
	}

	suiteDir := opts.suitesDir
	if suiteDir == "" {
		tmp, err := os.MkdirTemp("", "mpspatch-suites-")
		if err != nil {
			return fmt.Errorf("verify: create suite dir: %w", err)
		}
		defer os.RemoveAll(tmp)
		if err := verify.WriteSuites(tmp); err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		suiteDir = tmp
	} else if abs, err := filepath.Abs(suiteDir); err == nil {
		suiteDir = abs
		if _, err := os.Stat(filepath.Join(suiteDir, "conftest.py")); err != nil {
			return withCode(ExitUsage, fmt.Errorf("--suites-dir %s: no conftest.py there: %w", opts.suitesDir, err))
		}
	}
	all, err := verify.ListSuites(suiteDir)
	if err != nil {
		return err
	}
	files, err := verify.SelectSuites(all, opts.suites)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	scaling := !opts.noScaling
	if len(opts.suites) > 0 {
		// --suite narrows the run; the benchmark joins only when named.
		scaling = false
		for _, n := range opts.suites {
			if n == "scaling" || n == "bench_scaling" || n == verify.BenchScript {
				scaling = !opts.noScaling
			}
		}
		if len(files) == 0 && !scaling {
			return usageErrorf("--suite selected nothing")
		}
	}

	// Which torch is this? Asked before anything runs; no python, torch or pytest is exit 5.
	p.Progressf("verify: probing %s", opts.python)
	logPath := probeLog(opts.reportDir, verify.TargetPatched)
	patched, err := verify.ProbeLogged(ctx, opts.python, verify.TargetPatched, opts.device, logPath)
	if err != nil {
		return probeError(ctx, err, logPath)
	}
	if err := foreignTorch(ctx, patched, opts.tree); err != nil {
		if !opts.allowForeign {
			return withCode(ExitUnsupported, err)
		}
		patched.Warnings = append(patched.Warnings, err.Error()+" (--allow-foreign-torch: running anyway)")
	}
	envs := []verify.Env{patched}
	if opts.baseline != "" {
		p.Progressf("verify: probing baseline %s", opts.baseline)
		logPath := probeLog(opts.reportDir, verify.TargetBaseline)
		base, err := verify.ProbeLogged(ctx, opts.baseline, verify.TargetBaseline, patched.Device, logPath)
		if err != nil {
			return probeError(ctx, fmt.Errorf("baseline: %w", err), logPath)
		}
		if base.TorchPath == patched.TorchPath {
			base.Warnings = append(base.Warnings, "the baseline loads the same torch as the patched run ("+base.TorchPath+"): the comparison means nothing")
		}
		envs = append(envs, base)
	}

	info := verify.RunInfo{Profile: opts.profile, Device: patched.Device, Threads: opts.threads,
		Repeat: opts.repeat, Timeout: opts.timeout.String(), Suites: opts.suites, Scaling: scaling,
		StartedAt: time.Now().UTC()}
	dw, err := verify.NewDirWriter(opts.reportDir, info)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	term := &verifyTerminal{p: p, live: d.io.ErrTTY && !d.global.quiet && !p.json}
	obs := verify.Observers{dw, term}
	if p.json {
		_ = p.JSONLine(verify.RunRecord(info))
	}
	for _, e := range envs {
		for _, w := range e.Warnings {
			p.Warnf("%s: %s", e.Target, w)
		}
		obs.Env(e)
		if !p.json {
			writeEnv(p.out, e)
		}
	}
	if !p.json {
		fmt.Fprintf(p.out, "rule: %s\n\n", verify.VerdictRule)
	}

	var benchThreads []int
	if opts.threadsSet {
		benchThreads = withOne(opts.threads)
	}
	logDir := filepath.Join(opts.reportDir, "logs")
	var runErr error
	for _, e := range envs {
		term.clear()
		p.Progressf("verify: %s: %s on %s, profile %s, repeat %d", e.Target, plural(len(files), "suite file"), e.Device, opts.profile, opts.repeat)
		runErr = verify.Run(ctx, verify.Options{
			Target: e.Target, Env: e, Profile: opts.profile, Threads: opts.threads,
			BenchThreads: benchThreads, Repeat: opts.repeat, Files: files, Scaling: scaling,
			Timeout: opts.timeout, SuitesDir: suiteDir, LogDir: logDir, ReportDir: opts.reportDir,
		}, obs)
		if runErr != nil {
			break
		}
	}
	term.clear()
	interrupted := runErr != nil && ctx.Err() != nil
	closeErr := dw.Close(interrupted)
	rep := dw.Report()
	if p.json {
		_ = p.StreamSummary(verify.SummaryRecord(rep))
	} else {
		writeVerifyTable(p, rep, opts.reportDir, verify.HTMLFile, verify.JUnitFile, verify.ResultsFile)
	}
	switch {
	case runErr != nil && interrupted:
		return ctx.Err()
	case runErr != nil:
		return fmt.Errorf("verify: %w", runErr)
	case closeErr != nil:
		return fmt.Errorf("verify: reports: %w", closeErr)
	case rep.Failed():
		return &silentError{ExitCheckFailed}
	case len(rep.Results) == 0:
		return withCode(ExitCheckFailed, errors.New("verify: the suites reported no results"))
	}
	return nil
}

// renderVerify redraws the reports of an archived run (results.jsonl or `verify --json`
// output) with this mpspatch, and exits as that run would have.
func renderVerify(p *printer, opts *verifyOptions) error {
	rep, err := verify.ReadReportFile(opts.render)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("--render %s: %w", opts.render, err))
	}
	if err := verify.WriteReports(opts.reportDir, rep); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if p.json {
		_ = p.StreamSummary(verify.SummaryRecord(rep))
	} else {
		for _, e := range rep.Envs {
			writeEnv(p.out, e)
		}
		// --render redraws the HTML and JUnit reports; results.jsonl is its input, not written.
		writeVerifyTable(p, rep, opts.reportDir, verify.HTMLFile, verify.JUnitFile)
	}
	if rep.Failed() || rep.Interrupted || len(rep.Results) == 0 {
		return &silentError{ExitCheckFailed}
	}
	return nil
}

// probeLog is where the torch probe of target writes its output: next to the suites' logs,
// so the error of a failed probe can name it. "" (no log) when the directory cannot be made.
func probeLog(reportDir, target string) string {
	dir := filepath.Join(reportDir, "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	return filepath.Join(dir, "probe-"+target+".log")
}

func probeError(ctx context.Context, err error, logPath string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if fi, serr := os.Stat(logPath); logPath != "" && serr == nil && fi.Size() > 0 {
		err = &logError{err: err, log: logPath} // the --json error's details.log
	}
	if errors.Is(err, verify.ErrUnsupported) {
		return withCode(ExitUnsupported, err)
	}
	return err
}

// withOne returns threads with 1 first: the benchmark's efficiency is relative to one thread.
func withOne(threads []int) []int {
	out := []int{1}
	for _, n := range threads {
		if n != 1 {
			out = append(out, n)
		}
	}
	sort.Ints(out[1:])
	return out
}

func writeEnv(w io.Writer, e verify.Env) {
	git := e.TorchGit
	if git == "" {
		git = "unknown"
	}
	dev := e.Device
	if e.DeviceName != "" {
		dev += " (" + e.DeviceName + ")"
	}
	fmt.Fprintf(w, "%s: torch %s (git %s) at %s\n", e.Target, e.Torch, git, e.TorchPath)
	fmt.Fprintf(w, "  provenance: %s\n", e.ProvenanceSummary())
	fmt.Fprintf(w, "  python %s (%s), pytest %s, device %s\n", e.Python, e.Executable, e.Pytest, dev)
}

// verifyTerminal is the terminal half of the report: a progress line per finished test on
// stderr, or in --json mode one JSON line per record on stdout.
type verifyTerminal struct {
	p    *printer
	live bool // stderr is a terminal: show the running test on a line that is redrawn
	open bool // a "running" line is on screen
}

// clear removes the "running" line before a permanent line is written.
func (t *verifyTerminal) clear() {
	if t.open {
		fmt.Fprint(t.p.err, "\r\x1b[K")
		t.open = false
	}
}

func (t *verifyTerminal) Env(e verify.Env) {
	if t.p.json {
		_ = t.p.JSONLine(verify.EnvRecord(e))
	}
}

func (t *verifyTerminal) Started(target, id string) {
	if !t.live {
		return
	}
	t.clear()
	fmt.Fprintf(t.p.err, "[%s] running %s", target, id)
	t.open = true
}

func (t *verifyTerminal) Result(r verify.Result) {
	if t.p.json {
		_ = t.p.JSONLine(verify.ResultRecord(r))
	}
	word := strings.ToUpper(string(r.Outcome))
	c := green
	switch {
	case r.Outcome == verify.Skip:
		c = dim
	case r.Outcome.Failed():
		c = red
	}
	extra := ""
	if r.Death != "" {
		extra += " " + r.Death
	}
	if len(r.Signatures) > 0 {
		extra += " [" + strings.Join(r.Signatures, ",") + "]"
	}
	t.clear()
	rep := ""
	if r.Repeat > 1 {
		rep = fmt.Sprintf(" #%d", r.Repeat)
	}
	t.p.Progressf("[%s] %s %s%s (%.2fs)%s", r.Target, t.p.paintErr(c, fmt.Sprintf("%-7s", word)), r.ID, rep, r.Duration, extra)
}

func (t *verifyTerminal) Scaling(s verify.ScalingRow) {
	if t.p.json {
		_ = t.p.JSONLine(verify.ScalingRecord(s))
		return
	}
	t.clear()
	t.p.Progressf("[%s] scaling %s %s x%d: %.1f fwd/s, efficiency %.2f (%s)", s.Target, s.Model, s.Mode, s.Threads, s.FPS, s.Efficiency, s.Label)
}

func (t *verifyTerminal) Boundary(b verify.BoundaryRow) {
	if t.p.json {
		_ = t.p.JSONLine(verify.BoundaryRecord(b))
		return
	}
	t.clear()
	t.p.Progressf("[%s] thread boundary %s: %d of %d", b.Target, b.Op, b.Threads, b.Max)
}

func (t *verifyTerminal) Notice(target, msg string) {
	if t.p.json {
		_ = t.p.JSONLine(verify.NoticeRecord(target, msg))
	}
	t.clear()
	t.p.Progressf("[%s] %s", target, msg)
}

// writeVerifyTable is the text result: one row per test with a column per target, then the
// crashes with their signatures, the scaling labels, and the verdict.
func writeVerifyTable(p *printer, rep *verify.Report, reportDir string, written ...string) {
	w := p.out
	targets := rep.Targets()
	tw := newColumnWriter(w, 2)
	head := []string{"TEST"}
	for _, t := range targets {
		head = append(head, strings.ToUpper(t))
	}
	head = append(head, "TIME", "NOTE")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range rep.Rows() {
		cells := []string{row.ID}
		var notes []string
		for _, t := range targets {
			v, ok := row.ByTarget[t]
			if !ok {
				cells = append(cells, "-")
				continue
			}
			c := green
			if v.Outcome.Failed() {
				c = red
			} else if v.Outcome == verify.Skip {
				c = dim
			}
			cells = append(cells, p.Paint(c, v.Short()))
			if v.Outcome.Failed() {
				n := v.Death
				if len(v.Signatures) > 0 {
					n = strings.TrimSpace(n + " [" + strings.Join(v.Signatures, ",") + "]")
				}
				if n == "" {
					n = truncate(v.Message, 70)
				}
				if len(targets) > 1 {
					n = t + ": " + n
				}
				notes = append(notes, n)
			}
		}
		dur := "-"
		if v, ok := row.ByTarget[verify.TargetPatched]; ok {
			dur = fmt.Sprintf("%.1fs", v.Duration)
		}
		cells = append(cells, dur, strings.Join(notes, "; "))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()

	if crashes := rep.Crashes(); len(crashes) > 0 {
		fmt.Fprintln(w, "\ncrashes and timeouts:")
		for _, c := range crashes {
			fmt.Fprintf(w, "  %s %s #%d: %s\n", c.Target, c.ID, c.Repeat, c.Message)
			for _, s := range c.Signatures {
				fmt.Fprintf(w, "      %s\n", s)
			}
			if c.Log != "" {
				fmt.Fprintf(w, "      log: %s\n", filepath.Join(reportDir, c.Log))
			}
		}
	}
	if curves := rep.CurveLabels(); len(curves) > 0 {
		fmt.Fprintln(w, "\nscaling:")
		for _, c := range curves {
			fmt.Fprintf(w, "  %s %s: %s at %s; best %.1f fwd/s at %s\n",
				c.Target, c.Model, c.Label, plural(c.MaxThreads, "thread"), c.BestFPS, plural(c.BestThreads, "thread"))
		}
	}
	if len(rep.Boundaries) > 0 {
		fmt.Fprintln(w, "\nthread boundary (largest passing count):")
		for _, b := range rep.Boundaries {
			fmt.Fprintf(w, "  %s %s: %d of %d\n", b.Target, b.Op, b.Threads, b.Max)
		}
	}
	fmt.Fprintln(w)
	for _, t := range targets {
		fmt.Fprintf(w, "%s: %s\n", t, verify.CountsLine(rep.Counts(t)))
	}
	status := rep.Status()
	c := green
	if status != "pass" {
		c = red
	}
	fmt.Fprintf(w, "verify: %s; reports in %s (%s)\n", p.Paint(c, strings.ToUpper(status)), reportDir, strings.Join(written, ", "))
}

func truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
