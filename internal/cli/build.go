package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/builder"
	"github.com/mpspatch/mpspatch/internal/series"
)

type buildOptions struct {
	treeOptions
	python string
	venv   string
	jobs   int
	env    []string
	force  bool
}

func newBuildCmd(d *deps) *cobra.Command {
	opts := &buildOptions{}
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build and install PyTorch from a patched tree",
		Long: `Build PyTorch in the tree with the configured interpreter, by default
` + "`python -m pip install -e . -v --no-build-isolation`" + ` ([build] python and args), with
USE_MPS=1, MAX_JOBS from --jobs, and the environment from [build] env and --env.

Before the build: the tree must look like PyTorch (setup.py, aten/, torch/; else exit 2),
the interpreter must run and have pip (else exit 5), and on macOS ` + "`xcrun --show-sdk-path`" + `
must find an SDK (else exit 5). On Linux the build goes on with a warning: MPS is
Apple-only, so the patched code is not compiled there.

Progress (ninja's [done/total], percent, ETA) goes to stderr: one redrawn line on a
terminal, a plain line per 5% otherwise. The whole output goes to
<log_dir>/build-<timestamp>.log in the tree. A failed build (exit 4) names that log and
quotes the first compiler errors.

After a successful build, <tree>/torch/mpspatch_provenance.json records the mpspatch
version, the upstream commit (the tree's HEAD), the series hash and applied patches,
the build time, python and platform, the build's inputs and the compiler cache's hit
rate; verify reads it.

Up to date: when the upstream commit, each applied patch (by hash), the interpreter
(path and version), the build arguments and environment and the compiler launcher are
those of the stamped build, nothing is built and build says so (--force builds anyway).
Otherwise it names what changed and builds; ninja recompiles only what that touched.

--venv DIR (or [build] venv) builds in a virtual environment: created with --python
when missing, the tree's requirements.txt and pyproject.toml [build-system] requires
installed into it (again whenever they change). A requirement pip cannot find is named
(exit 5).

Compiler cache: ccache, else sccache, when found in PATH ([build.cache] tool) is set as
CMAKE_{C,CXX,OBJC,OBJCXX}_COMPILER_LAUNCHER; [build.cache] remote shares it (Redis,
HTTP, S3, GCS, WebDAV), the password coming from the variable named by password_env.
The hit rate, from the tool's own statistics, is printed and stamped.

After every build and on every up-to-date run, torch is imported with the build's
interpreter from outside the tree: a torch from anywhere else (a wheel or older install
shadowing the build) or with another git version is exit 4, naming the path and how to
remove it.`,
		Example: `  mpspatch build --tree ~/src/pytorch --venv ~/venvs/torch --jobs 10
  mpspatch build --tree . --python ~/venvs/torch/bin/python --env USE_CUDA=0 --env BUILD_TEST=0
  mpspatch build --tree ~/src/pytorch --venv ~/venvs/torch --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("jobs") {
				opts.jobs = -1
			}
			return runBuild(cmd.Context(), d, opts)
		},
	}
	addTreeFlags(cmd, &opts.treeOptions)
	f := cmd.Flags()
	f.StringVar(&opts.python, "python", "", "interpreter that builds PyTorch, or creates --venv (default: config build.python)")
	f.StringVar(&opts.venv, "venv", "", "virtual environment to build in, created with the tree's build requirements when missing (default: config build.venv)")
	f.BoolVar(&opts.force, "force", false, "build even when the stamp says the tree is up to date")
	f.IntVarP(&opts.jobs, "jobs", "j", 0, "parallel compile jobs, sets MAX_JOBS (default: config build.jobs; 0 lets PyTorch decide)")
	f.StringArrayVar(&opts.env, "env", nil, "`KEY=VALUE` added to the build environment (repeatable; overrides config build.env)")
	return cmd
}

// buildReport is the result of `mpspatch build`.
type buildReport struct {
	Tree string `json:"tree"`
	// UpToDate: nothing changed since the stamped build, so none ran; Changes say why
	// one did.
	UpToDate   bool                `json:"up_to_date"`
	Changes    []string            `json:"changes"`
	Venv       []string            `json:"venv"`
	Log        string              `json:"log"`
	Stamp      string              `json:"stamp"`
	Seconds    float64             `json:"seconds"`
	Provenance builder.Provenance  `json:"provenance"`
	Cache      *builder.CacheStats `json:"cache"`
	Torch      builder.TorchCheck  `json:"torch"`
	Warnings   []string            `json:"warnings"`

	res *builder.Result // what the text rendering shows
}

func runBuild(ctx context.Context, d *deps, opts *buildOptions) error {
	rep, err := build(ctx, d, opts)
	if err != nil {
		return err
	}
	return writeBuild(d.printer(), rep)
}

// writeBuild renders build's result on stdout.
func writeBuild(p *printer, rep *buildReport) error {
	res := rep.res
	return p.Result(rep, func(w io.Writer) {
		if res.UpToDate {
			fmt.Fprintf(w, "%s %s: nothing changed since the build of %s (--force rebuilds)\n", p.Paint(green, "up to date"),
				rep.Tree, res.Provenance.BuiltAt.Format(time.RFC3339))
		} else {
			fmt.Fprintf(w, "%s %s in %s\n", p.Paint(green, "built"), rep.Tree, res.Duration.Round(time.Second))
			fmt.Fprintf(w, "  because: %s\n", strings.Join(res.Changes, "; "))
			fmt.Fprintf(w, "  log:   %s\n", res.LogPath)
		}
		fmt.Fprintf(w, "  stamp: %s\n", res.StampPath)
		if n := len(res.Provenance.Patches); n > 0 {
			fmt.Fprintf(w, "  series sha256:%s (%s applied)\n", res.Provenance.SeriesHash, plural(n, "patch"))
		}
		if res.Cache != nil {
			fmt.Fprintf(w, "  compiler cache: %s\n", res.Cache)
		}
		fmt.Fprintf(w, "  torch: %s imports %s\n", res.Torch.Python, res.Torch.File)
	})
}

// build does the work of `mpspatch build`, with its progress on d's stderr, and returns
// what it built; writeBuild shows it.
func build(ctx context.Context, d *deps, opts *buildOptions) (*buildReport, error) {
	p := d.printer()
	cfg, err := d.config()
	if err != nil {
		return nil, err
	}
	env := maps.Clone(cfg.Build.Env)
	if env == nil {
		env = map[string]string{}
	}
	for _, kv := range opts.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t\n") {
			return nil, usageErrorf("--env %q: want KEY=VALUE", kv)
		}
		env[k] = v
	}
	jobs := opts.jobs
	if jobs < 0 {
		jobs = cfg.Build.Jobs
	}
	python := opts.python
	if python == "" {
		python = cfg.Build.Python
	}
	venv := opts.venv
	if venv == "" {
		venv = cfg.Build.Venv
	}
	if venv != "" {
		if venv, err = filepath.Abs(venv); err != nil {
			return nil, usageErrorf("--venv %s: %v", opts.venv, err)
		}
	}
	if fi, err := os.Stat(opts.tree); err != nil || !fi.IsDir() {
		return nil, usageErrorf("tree %s: %v", opts.tree, errOr(err, errors.New("not a directory")))
	}
	tree, err := filepath.Abs(opts.tree)
	if err != nil {
		return nil, usageErrorf("tree %s: %v", opts.tree, err)
	}

	warn := &warnings{p: p}
	seriesHash, applied := appliedSeries(ctx, d, opts, warn)

	bar := newProgressLine(p, d.io.ErrTTY)
	warn.bar = bar
	cc := cfg.Build.Cache
	res, err := builder.Build(ctx, builder.Options{
		Tree: tree, Python: python, Venv: venv, Args: cfg.Build.Args, Jobs: jobs, Env: env, Force: opts.force,
		LogDir: cfg.Build.LogDir, SeriesHash: seriesHash, Patches: applied, ToolVersion: version,
		Cache: builder.CacheOptions{Tool: cc.Tool, Remote: cc.Remote, RemoteOnly: cc.RemoteOnly,
			PasswordEnv: cc.PasswordEnv, Dir: cc.Dir, Env: cc.Env},
		Reporter: buildReporter{bar: bar, warn: warn, p: p},
	})
	bar.finish()
	var shadow *builder.ShadowError
	if errors.As(err, &shadow) {
		// The build (if one ran) succeeded and is stamped; the interpreter imports
		// another torch. Exit 4: nothing must test that torch as if it were this build.
		return nil, withCode(ExitBuildFailed, err)
	}
	if err != nil {
		var be *builder.BuildError
		var ee *builder.EnvError
		switch {
		case ctx.Err() != nil:
			return nil, err
		case errors.Is(err, builder.ErrNotPyTorch):
			return nil, withCode(ExitUsage, err)
		case errors.As(err, &ee):
			return nil, withCode(ExitUnsupported, err)
		case errors.As(err, &be):
			return nil, withCode(ExitBuildFailed, err)
		}
		return nil, withCode(ExitBuildFailed, fmt.Errorf("build %s: %w", tree, err))
	}
	// Warnings from preflight were shown as they came; show the rest now.
	for _, w := range res.Warnings {
		warn.warn(w)
	}
	rep := &buildReport{res: res, Tree: tree, UpToDate: res.UpToDate, Changes: nonNil(res.Changes), Venv: nonNil(res.Venv),
		Log: res.LogPath, Stamp: res.StampPath, Seconds: res.Duration.Seconds(),
		Provenance: res.Provenance, Cache: res.Cache, Torch: res.Torch, Warnings: nonNil(res.Warnings)}
	if res.UpToDate {
		rep.Log = res.Provenance.Log
	}
	return rep, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// appliedSeries finds what the stamp records about the series: the series hash when the
// tree holds the whole series, and the names of the patches it holds. Problems are
// warnings: a build of an unpatched tree is legitimate (a baseline), just recorded so.
func appliedSeries(ctx context.Context, d *deps, opts *buildOptions, warn *warnings) (string, []builder.PatchRef) {
	s, err := d.loadSeries(ctx, &opts.treeOptions)
	if err != nil {
		warn.warn(fmt.Sprintf("provenance: series not recorded: %v", err))
		return "", nil
	}
	root, err := os.OpenRoot(opts.tree)
	if err != nil {
		warn.warn(fmt.Sprintf("provenance: series not recorded: %v", err))
		return "", nil
	}
	defer root.Close()
	if len(s.Patches) == 0 {
		return s.Hash(), nil
	}
	// Under `mpspatch run`, which holds the tree's lock across its build, through its lock.
	st, err := series.InspectLocked(root, s, heldTreeLock(ctx))
	if err != nil {
		warn.warn(fmt.Sprintf("provenance: series not recorded: inspect %s: %v", opts.tree, err))
		return "", nil
	}
	var applied []builder.PatchRef
	for i, ps := range st.Patches {
		if ps.State == series.Applied {
			sum := sha256.Sum256(s.Patches[i].Raw)
			applied = append(applied, builder.PatchRef{Name: ps.Name, SHA256: hex.EncodeToString(sum[:])})
		}
	}
	switch summary := st.Summary(); {
	case len(s.Patches) == 0 || (summary == series.Applied && len(applied) == len(s.Patches)):
		return s.Hash(), applied
	case len(applied) == 0:
		warn.warn(fmt.Sprintf("the tree holds none of the series %s: building stock PyTorch", s.Source))
	default:
		warn.warn(fmt.Sprintf("the tree holds %d of %d patches of %s (%s): the stamp records no series hash",
			len(applied), len(s.Patches), s.Source, summary))
	}
	return "", applied
}

// warnings prints each warning once, clearing a progress line first.
type warnings struct {
	mu   sync.Mutex
	p    *printer
	bar  *progressLine
	seen map[string]bool
}

func (w *warnings) warn(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	if w.seen[msg] {
		return
	}
	w.seen[msg] = true
	if w.bar != nil {
		w.bar.clear()
	}
	w.p.Warnf("%s", msg)
}

// buildReporter renders builder events on the progress line.
type buildReporter struct {
	bar  *progressLine
	warn *warnings
	p    *printer
}

// Note implements builder's optional hook for what is about to happen and why.
func (r buildReporter) Note(msg string) {
	r.bar.clear()
	r.p.Progressf("build: %s", msg)
}

func (r buildReporter) Report(e builder.Event) {
	r.bar.update(buildProgressKey(e), formatBuildEvent(e), e.Phase == builder.PhaseDone)
}

// Warn implements builder's optional warning hook.
func (r buildReporter) Warn(msg string) { r.warn.warn(msg) }

// buildProgressKey changes when a plain (non-terminal) log should get a new line: a new
// phase, or another 5% of the compile.
func buildProgressKey(e builder.Event) string {
	if e.Phase == builder.PhaseRequirements {
		return e.Line // one line per requirement collected
	}
	if e.Phase != builder.PhaseCompile || e.Percent < 0 {
		return string(e.Phase)
	}
	return fmt.Sprintf("%s %d", e.Phase, int(e.Percent)/5)
}

func formatBuildEvent(e builder.Event) string {
	if e.Phase == builder.PhaseRequirements || e.Phase == builder.PhaseVenv {
		return fmt.Sprintf("build: %s: %s", e.Phase, e.Line)
	}
	var b strings.Builder
	b.WriteString("build: ")
	b.WriteString(string(e.Phase))
	if e.Percent >= 0 {
		fmt.Fprintf(&b, " %3.0f%%", e.Percent)
	}
	if e.Total > 0 {
		fmt.Fprintf(&b, " [%d/%d]", e.Done, e.Total)
	}
	fmt.Fprintf(&b, " elapsed %s", e.Elapsed.Round(time.Second))
	if e.ETA > 0 {
		fmt.Fprintf(&b, " eta %s", e.ETA.Round(time.Second))
	}
	return b.String()
}

// progressLine shows progress on stderr. On a terminal it is one line redrawn in place
// at most every redrawEvery; elsewhere (CI logs, pipes) a plain line is written when the
// caller's key changes, or after plainEvery without one, so logs stay short. Nothing is
// written with --quiet.
type progressLine struct {
	mu        sync.Mutex
	w         io.Writer
	tty       bool
	quiet     bool
	now       func() time.Time
	lastDraw  time.Time
	lastKey   string
	drawn     bool // a redrawn line is on the terminal
	lastShown string
}

const (
	redrawEvery = 100 * time.Millisecond
	plainEvery  = 30 * time.Second
	maxBarWidth = 110
)

func newProgressLine(p *printer, tty bool) *progressLine {
	return &progressLine{w: p.err, tty: tty, quiet: p.quiet, now: time.Now}
}

// update shows text; force draws it even when the rate limit says wait.
func (l *progressLine) update(key, text string, force bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.quiet {
		return
	}
	now := l.now()
	if l.tty {
		if !force && key == l.lastKey && now.Sub(l.lastDraw) < redrawEvery {
			return
		}
		if len(text) > maxBarWidth {
			text = text[:maxBarWidth-3] + "..."
		}
		fmt.Fprintf(l.w, "\r\x1b[K%s", text)
		l.drawn = true
	} else {
		if !force && key == l.lastKey && now.Sub(l.lastDraw) < plainEvery {
			return
		}
		if text == l.lastShown {
			return
		}
		fmt.Fprintln(l.w, text)
	}
	l.lastKey, l.lastDraw, l.lastShown = key, now, text
}

// clear removes a redrawn line so other output starts on a clean line.
func (l *progressLine) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.drawn = false
		l.lastKey = "" // redraw on the next update
	}
}

// finish ends a redrawn line with a newline, leaving the last state visible.
func (l *progressLine) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		fmt.Fprintln(l.w)
		l.drawn = false
	}
}
