package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/pipeline"
	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/internal/statekey"
	"github.com/mpspatch/mpspatch/internal/suiteparam"
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
A directory that is neither empty nor a checkout, or a checkout of another commit that run
has no state in yet, is refused before anything is written into it.

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

	r := &runner{d: d, opts: opts, dir: dir, device: device, reportDir: reportDir, series: s,
		url: cfg.Upstream.URL, commit: cfg.Upstream.Commit,
		buildPython: cmp.Or(opts.python, cfg.Build.Python), verifyPython: cmp.Or(opts.python, cfg.Verify.Python)}
	p := d.printer()
	r.view = newStageView(p, d.io.ErrTTY)
	reporter := runReporter{p: p, view: r.view}

	var sum *pipeline.Summary
	if refusal := refusedCheckout(ctx, dir, r.commit); refusal != nil {
		// The clone stage would refuse this checkout: it is refused before run writes
		// its state into it, with the same summary (the clone failed, nothing after it
		// reached), and the directory is left as it was.
		stages := r.stages()
		stages[0].Inputs = func(context.Context) (map[string]string, error) { return nil, refusal }
		sum, err = pipeline.Run(ctx, stages, pipeline.Options{
			From: opts.from, Until: opts.until, CodeOf: exitCodeOf, Reporter: reporter,
		})
	} else {
		// Every place run writes is checked before the first write, and opened so that
		// no write can leave it; the tree's lock is held from here (see runState).
		var state *runState
		if state, err = openRunState(dir, reportDir); err != nil {
			return err
		}
		defer state.close()
		r.state = state
		key, kerr := statekey.Ensure()
		if kerr != nil {
			p.Warnf("%v; stages will not be stamped and all run every time", kerr)
		}
		sum, err = pipeline.Run(ctx, r.stages(), pipeline.Options{
			Stamps: state.stamps, Logs: state.logs, Key: key, Checkout: state.checkout,
			From: opts.from, Until: opts.until, CodeOf: exitCodeOf, Reporter: reporter,
		})
	}
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

// maxViewLine bounds a line the view holds while waiting for its end.
const maxViewLine = 4 << 10
