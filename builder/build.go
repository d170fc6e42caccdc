package builder

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/run"
)

// DefaultArgs are the interpreter arguments that build and install PyTorch in place.
var DefaultArgs = []string{"-m", "pip", "install", "-e", ".", "-v", "--no-build-isolation"}

// Options say what to build and how.
type Options struct {
	// Tree is the PyTorch checkout (setup.py and aten/ at its top).
	Tree string
	// Python is the interpreter; empty means "python3".
	Python string
	// Args follow Python; nil means DefaultArgs.
	Args []string
	// Jobs sets MAX_JOBS; 0 leaves it to the PyTorch build.
	Jobs int
	// Env is added to the build's environment after the defaults (USE_MPS=1) and MAX_JOBS,
	// so it overrides both.
	Env map[string]string
	// LogDir receives build-<timestamp>.log; relative paths are taken from Tree.
	LogDir string

	// SeriesHash and Patches describe the applied series for the provenance stamp and
	// the up-to-date check.
	SeriesHash string
	Patches    []PatchRef
	// Force builds even when the stamp says the tree is up to date.
	Force bool
	// Venv, when set, is a virtual environment to build in: created with Python when
	// missing, the tree's build requirements installed; its interpreter then builds.
	Venv string
	// Cache configures the compiler cache used as CMake's compiler launcher.
	Cache CacheOptions
	// ToolVersion is mpspatch's version, for the stamp.
	ToolVersion string

	// Reporter receives progress; nil means none.
	Reporter Reporter

	// BaseEnv is the environment the build starts from; nil means os.Environ().
	BaseEnv []string
	// GOOS is the platform rules to apply; empty means runtime.GOOS. Tests set it.
	GOOS string
	// Xcrun is the xcrun program used on darwin; empty means "xcrun".
	Xcrun string
	// Git reads the tree's HEAD for the stamp; nil means git from PATH.
	Git *gitcli.Git
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// launcher is the resolved compiler cache, whose variables buildEnv adds.
	launcher *Launcher
}

func (o *Options) python() string {
	if o.Python == "" {
		return "python3"
	}
	return o.Python
}

func (o *Options) args() []string {
	if o.Args == nil {
		return DefaultArgs
	}
	return o.Args
}

func (o *Options) goos() string {
	if o.GOOS == "" {
		return runtime.GOOS
	}
	return o.GOOS
}

func (o *Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// ErrNotPyTorch says the tree is not a PyTorch checkout.
var ErrNotPyTorch = errors.New("not a PyTorch checkout")

// EnvError says the machine cannot build: no interpreter, no pip, no macOS SDK.
type EnvError struct {
	What string // "python", "pip", "xcrun"
	Err  error
}

func (e *EnvError) Error() string { return "build environment: " + e.Err.Error() }
func (e *EnvError) Unwrap() error { return e.Err }

// BuildError is a build that ran and failed.
type BuildError struct {
	Argv    []string
	Result  run.Result
	LogPath string
	// FirstErrors quotes the first error lines of the output.
	FirstErrors []string
	// Last is the last progress seen ("failed at 1234/5678").
	Last Event
}

func (e *BuildError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "build failed: %s %s: %s", filepath.Base(e.Argv[0]), strings.Join(e.Argv[1:], " "), e.Result)
	if e.Last.Total > 0 {
		fmt.Fprintf(&b, " at step %d/%d", e.Last.Done, e.Last.Total)
	}
	fmt.Fprintf(&b, "; full output in %s", e.LogPath)
	if len(e.FirstErrors) > 0 {
		b.WriteString("\nfirst errors:")
		for _, l := range e.FirstErrors {
			b.WriteString("\n  " + l)
		}
	}
	return b.String()
}

// Environment is what preflight found.
type Environment struct {
	// Python is the interpreter's sys.executable and PythonVersion its version.
	Python        string
	PythonVersion string
	// SDK is `xcrun --show-sdk-path` on darwin.
	SDK string
	// Warnings are things the caller should tell the user.
	Warnings []string
}

// pythonProbe prints the interpreter's path, version and whether pip is importable.
// and whether it is an "externally managed" system interpreter (PEP 668) that pip refuses
// to install into.
const pythonProbe = `import importlib.util, os, platform, sys, sysconfig
print(sys.executable)
print(platform.python_version())
print(importlib.util.find_spec("pip") is not None)
print(sys.prefix == sys.base_prefix and os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))`

// preflight checks that opts can build before anything long starts: the tree looks like
// PyTorch, the interpreter runs (and has pip when the build uses it), and on darwin the
// macOS SDK is there. On other platforms it warns that MPS cannot be built.
func preflight(ctx context.Context, opts Options) (Environment, error) {
	var env Environment
	for _, p := range []struct {
		name string
		dir  bool
	}{{"setup.py", false}, {"aten", true}, {"torch", true}} {
		fi, err := os.Stat(filepath.Join(opts.Tree, p.name))
		if err != nil || fi.IsDir() != p.dir {
			return env, fmt.Errorf("build preflight: %s: %w (want setup.py, aten/ and torch/ at its top; missing %s)", opts.Tree, ErrNotPyTorch, p.name)
		}
	}

	out, err := run.Output(ctx, run.Cmd{
		Argv: []string{opts.python(), "-c", pythonProbe}, Dir: opts.Tree,
		Env: buildEnv(opts), Timeout: time.Minute,
	})
	if err != nil {
		if ctx.Err() != nil {
			return env, fmt.Errorf("build preflight: %w", ctx.Err())
		}
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return env, &EnvError{What: "python", Err: fmt.Errorf("python interpreter %q not found (set [build] python or --python): %w", opts.python(), err)}
		}
		return env, &EnvError{What: "python", Err: fmt.Errorf("python interpreter %q does not run: %w", opts.python(), err)}
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 3 {
		return env, &EnvError{What: "python", Err: fmt.Errorf("python interpreter %q: unexpected probe output %q", opts.python(), out)}
	}
	env.Python, env.PythonVersion = strings.TrimSpace(lines[0]), strings.TrimSpace(lines[1])
	if usesPip(opts.args()) && strings.TrimSpace(lines[2]) != "True" {
		return env, &EnvError{What: "pip", Err: fmt.Errorf("python interpreter %s has no pip module (install pip for it, or build in a virtual environment: --venv DIR)", env.Python)}
	}
	if usesPip(opts.args()) && len(lines) > 3 && strings.TrimSpace(lines[3]) == "True" && envValue(buildEnv(opts), "PIP_BREAK_SYSTEM_PACKAGES") == "" {
		return env, &EnvError{What: "python", Err: fmt.Errorf("python interpreter %s is externally managed (PEP 668, e.g. Debian's python3): pip refuses to install into it; build in a virtual environment instead: mpspatch build --venv ~/venvs/torch (or [build] venv)", env.Python)}
	}

	if opts.goos() == "darwin" {
		xcrun := opts.Xcrun
		if xcrun == "" {
			xcrun = "xcrun"
		}
		sdk, err := run.Output(ctx, run.Cmd{Argv: []string{xcrun, "--show-sdk-path"}, Env: buildEnv(opts), Timeout: time.Minute})
		if err != nil {
			if ctx.Err() != nil {
				return env, fmt.Errorf("build preflight: %w", ctx.Err())
			}
			return env, &EnvError{What: "xcrun", Err: fmt.Errorf("no macOS SDK (`xcrun --show-sdk-path` failed; install Xcode or its command line tools): %w", err)}
		}
		env.SDK = strings.TrimSpace(string(sdk))
	} else {
		env.Warnings = append(env.Warnings, fmt.Sprintf("building on %s: MPS is Apple-only, so this build has no MPS backend and the patched code is not compiled", opts.goos()))
	}
	return env, nil
}

func usesPip(args []string) bool {
	return len(args) >= 2 && args[0] == "-m" && args[1] == "pip"
}

// buildEnv is the base environment plus USE_MPS=1, MAX_JOBS and opts.Env, later entries
// replacing earlier ones of the same name.
func buildEnv(opts Options) []string {
	base := opts.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	set := map[string]string{}
	var order []string
	put := func(k, v string) {
		if _, ok := set[k]; !ok {
			order = append(order, k)
		}
		set[k] = v
	}
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		put(k, v)
	}
	if opts.launcher != nil {
		for _, k := range slices.Sorted(maps.Keys(opts.launcher.env)) {
			put(k, opts.launcher.env[k])
		}
	}
	for k, v := range buildVars(opts) {
		put(k, v)
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+set[k])
	}
	return env
}

// buildVars are the variables mpspatch itself sets, as recorded in the stamp.
func buildVars(opts Options) map[string]string {
	vars := map[string]string{"USE_MPS": "1"}
	if opts.Jobs > 0 {
		vars["MAX_JOBS"] = strconv.Itoa(opts.Jobs)
	}
	for k, v := range opts.Env {
		vars[k] = v
	}
	return vars
}

// warner is an optional interface of a Reporter: Build calls Warn with each warning as it
// arises (before an hour-long build, not after), besides listing it in Result.Warnings.
type warner interface {
	Warn(msg string)
}

// noter is an optional interface of a Reporter: Build calls Note with what it is about to
// do and why ("rebuilding: patch 0003-x.patch changed"), before it does it.
type noter interface {
	Note(msg string)
}

// Result is a successful build, or an up-to-date tree.
type Result struct {
	// UpToDate is set when nothing changed since the stamped build: no build ran.
	UpToDate bool
	// Changes say why the build ran (what differs from the stamped build).
	Changes []string
	// Venv lists what was done to the virtual environment (created, requirements).
	Venv      []string
	LogPath   string
	StampPath string
	Duration  time.Duration
	Env       Environment
	// Provenance is the stamp written (or, when up to date, the one found).
	Provenance Provenance
	// Launcher is the compiler cache used; nil for none. Cache is what it did.
	Launcher *Launcher
	Cache    *CacheStats
	// Torch is which torch the build's interpreter imports, checked after the build.
	Torch TorchCheck
	// Warnings come from preflight and from writing the stamp.
	Warnings []string
}

// Build brings the tree's build up to date. With opts.Venv it first makes the virtual
// environment usable. After preflight and the compiler cache lookup it computes the
// build's Inputs; when they equal those in the stamp (and not opts.Force) no build runs
// (Result.UpToDate). Otherwise it runs the build with its full output in
// <LogDir>/build-<timestamp>.log, writes the provenance stamp with the inputs and the
// cache's statistics, and checks which torch the interpreter imports. A failed build is a
// *BuildError naming the log and quoting the first errors; a torch from elsewhere (or a
// stale one) is a *ShadowError, with the Result filled in.
func Build(ctx context.Context, opts Options) (*Result, error) {
	res := &Result{}
	warn := func(msg string) {
		res.Warnings = append(res.Warnings, msg)
		if w, ok := opts.Reporter.(warner); ok {
			w.Warn(msg)
		}
	}
	note := func(msg string) {
		if n, ok := opts.Reporter.(noter); ok {
			n.Note(msg)
		}
	}
	logDir := opts.LogDir
	if logDir == "" {
		logDir = filepath.Join(".mpspatch", "logs")
	}
	if !filepath.IsAbs(logDir) {
		logDir = filepath.Join(opts.Tree, logDir)
	}
	if opts.Venv != "" {
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			return nil, fmt.Errorf("build: create log directory: %w", err)
		}
		did, err := ensureVenv(ctx, opts, logDir)
		res.Venv = did
		for _, d := range did {
			note("venv: " + d)
		}
		if err != nil {
			return nil, err
		}
		opts.Python = venvPython(opts.Venv)
	}

	env, err := preflight(ctx, opts)
	if err != nil {
		return nil, err
	}
	res.Env = env
	for _, w := range env.Warnings {
		warn(w)
	}
	launcher, err := resolveLauncher(ctx, opts.Cache, opts.Tree, buildEnv(opts))
	if err != nil {
		return nil, err
	}
	opts.launcher, res.Launcher = launcher, launcher

	head := ""
	if _, err := os.Stat(filepath.Join(opts.Tree, ".git")); err == nil {
		g := opts.Git
		if g == nil {
			g = &gitcli.Git{}
		}
		head, err = g.HeadCommit(ctx, opts.Tree)
		if err != nil {
			warn(fmt.Sprintf("provenance: upstream commit unknown: %v", err))
		}
	} else {
		warn("provenance: the tree has no .git, so the upstream commit is not recorded")
	}
	in := buildInputs(opts, env, head)

	prev, perr := ReadProvenance(opts.Tree)
	// pending marks a build that started and did not succeed: pip may have uninstalled the
	// previous build before failing, so the stamp no longer describes what is installed.
	pending := filepath.Join(logDir, "build.pending")
	pendingLog, pendErr := os.ReadFile(pending)
	switch {
	case pendErr == nil:
		res.Changes = []string{fmt.Sprintf("the last build did not finish (%s)", strings.TrimSpace(string(pendingLog)))}
	case perr != nil && errors.Is(perr, ErrNoProvenance):
		res.Changes = []string{"no build stamp (first build)"}
	case perr != nil:
		res.Changes = []string{fmt.Sprintf("the build stamp is unreadable (%v)", perr)}
	case prev.Inputs == nil:
		res.Changes = []string{"the build stamp does not record its inputs (an older mpspatch wrote it)"}
	case prev.InputsHash != in.hash():
		res.Changes = prev.Inputs.changes(in)
	case opts.Force:
		res.Changes = []string{"--force"}
	default:
		// Up to date: no build, but still make sure the interpreter imports this build.
		res.UpToDate, res.Provenance = true, prev
		res.StampPath = filepath.Join(opts.Tree, ProvenanceFile)
		res.Cache = prev.Cache
		tc, err := checkTorch(ctx, env.Python, opts.Tree, prev.UpstreamCommit, buildEnv(opts))
		res.Torch = tc
		return res, err
	}
	note("building: " + strings.Join(res.Changes, "; "))

	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("build: create log directory: %w", err)
	}
	var before map[string]int
	if launcher != nil {
		note("compiler cache: " + launcher.String() + remoteSuffix(launcher.Remote))
		if before, err = launcher.counters(ctx, buildEnv(opts)); err != nil {
			warn(err.Error())
		}
	}

	tr := newTracker(opts.Reporter, opts.Now)
	started := opts.now()
	res.LogPath = logPath(logDir, "build", started)
	argv := append([]string{opts.python()}, opts.args()...)
	if err := atomicfile.WriteBytes(pending, []byte(res.LogPath+"\n"), atomicfile.Options{}); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	outW, errW := &lineWriter{t: tr}, &lineWriter{t: tr}
	_, err = run.Run(ctx, run.Cmd{
		Argv: argv, Dir: opts.Tree, Env: buildEnv(opts),
		Stdout: outW, Stderr: errW, LogPath: res.LogPath,
	})
	outW.flush()
	errW.flush()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("build interrupted (log: %s): %w", res.LogPath, ctx.Err())
		}
		var ee *run.ExitError
		if errors.As(err, &ee) {
			return nil, &BuildError{Argv: argv, Result: ee.Result, LogPath: res.LogPath, FirstErrors: tr.firstErrors(maxQuoted), Last: tr.Last()}
		}
		return nil, fmt.Errorf("build: start %s (log: %s): %w", argv[0], res.LogPath, err)
	}
	tr.finish()
	finished := opts.now()
	res.Duration = finished.Sub(started)
	if launcher != nil && before != nil {
		if after, err := launcher.counters(ctx, buildEnv(opts)); err != nil {
			warn(err.Error())
		} else {
			res.Cache = launcher.statsBetween(before, after)
		}
	}

	names := make([]string, 0, len(opts.Patches))
	for _, p := range opts.Patches {
		names = append(names, p.Name)
	}
	p := Provenance{
		Schema: provenanceSchema, Tool: "mpspatch", ToolVersion: opts.ToolVersion,
		UpstreamCommit: head, SeriesHash: opts.SeriesHash, Patches: names,
		BuiltAt: finished.UTC().Truncate(time.Second), BuildSeconds: res.Duration.Round(time.Millisecond).Seconds(),
		Python: env.Python, PythonVersion: env.PythonVersion,
		Platform: opts.goos() + "/" + runtime.GOARCH, SDK: env.SDK,
		Env: buildVars(opts), Log: res.LogPath,
		Inputs: &in, InputsHash: in.hash(), Cache: res.Cache,
	}
	res.Provenance = p
	res.StampPath, err = writeProvenance(opts.Tree, p)
	if err != nil {
		return res, err
	}
	if err := os.Remove(pending); err != nil {
		return res, fmt.Errorf("build: %w", err)
	}
	tc, err := checkTorch(ctx, env.Python, opts.Tree, head, buildEnv(opts))
	res.Torch = tc
	return res, err
}

func remoteSuffix(remote string) string {
	if remote == "" {
		return ""
	}
	return ", shared storage " + remote
}

// buildInputs gathers what the up-to-date check compares.
func buildInputs(opts Options, env Environment, head string) Inputs {
	in := Inputs{
		UpstreamCommit: head, SeriesHash: opts.SeriesHash, Patches: slices.Clone(opts.Patches),
		Python: env.Python, PythonVersion: env.PythonVersion, Args: slices.Clone(opts.args()),
		Env: map[string]string{}, Platform: opts.goos() + "/" + runtime.GOARCH, SDK: env.SDK,
	}
	if in.Patches == nil {
		in.Patches = []PatchRef{}
	}
	if opts.launcher != nil {
		in.Launcher = opts.launcher.Version + " (" + opts.launcher.Path + ")"
	}
	base := opts.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok && buildRelevant(k) {
			in.Env[k] = v
		}
	}
	for k, v := range buildVars(opts) {
		in.Env[k] = v
	}
	// Our own launcher variables are covered by Launcher; MAX_JOBS changes speed only.
	for _, k := range launcherVars {
		if opts.launcher != nil && in.Env[k] == opts.launcher.Path {
			delete(in.Env, k)
		}
	}
	delete(in.Env, "MAX_JOBS")
	return in
}

// logPath is dir/<kind>-<UTC timestamp>.log, with a counter added if that name is taken.
func logPath(dir, kind string, t time.Time) string {
	stamp := t.UTC().Format("20060102T150405Z")
	p := filepath.Join(dir, kind+"-"+stamp+".log")
	for i := 2; ; i++ {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p
		}
		p = filepath.Join(dir, fmt.Sprintf("%s-%s-%d.log", kind, stamp, i))
	}
}
