package builder

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/run"
	"github.com/mpspatch/mpspatch/internal/testenv"
)

// copyTree copies testdata/tree (setup.py, aten/, torch/, a tiny CMake project) to a
// temp dir, so stamps and logs land there.
func copyTree(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "pytorch")
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata", "tree"))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// fakeOptions returns Options that run the test binary as python, in mode.
func fakeOptions(t *testing.T, tree, mode string, extraEnv ...string) (Options, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	transcriptPath := filepath.Join(t.TempDir(), "transcript.jsonl")
	// GORACE: a -race binary otherwise sleeps a second at exit, every time it plays python.
	env := append(os.Environ(), "GORACE=atexit_sleep_ms=0", "MPSPATCH_FAKE_PYTHON=1", "FAKE_MODE="+mode, "FAKE_TRANSCRIPT="+transcriptPath,
		"FAKE_BUILD_DIR="+filepath.Join(t.TempDir(), "build"), "FAKE_CCACHE_STATE="+filepath.Join(t.TempDir(), "ccache-state"))
	env = append(env, extraEnv...)
	return Options{
		Tree: tree, Python: exe, BaseEnv: env, GOOS: "linux",
		ToolVersion: "v0.1.0-test", SeriesHash: "abc123",
		Patches: []PatchRef{{Name: "0001-a.patch", SHA256: "aa"}, {Name: "0002-b.patch", SHA256: "bb"}},
		Cache:   CacheOptions{Tool: "none"},
	}, transcriptPath
}

// readSteps returns every start of a fake tool, in order.
func readSteps(t *testing.T, path string) []transcript {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the fake tools left no transcript: %v", err)
	}
	var steps []transcript
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var tr transcript
		if err := json.Unmarshal([]byte(line), &tr); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, tr)
	}
	return steps
}

// readTranscript returns the build step: the python start that is not a "-c" probe.
func readTranscript(t *testing.T, path string) transcript {
	t.Helper()
	for _, s := range readSteps(t, path) {
		if len(s.Argv) > 1 && s.Argv[1] != "-c" && s.Argv[0] != "ccache" {
			s.Argv = s.Argv[1:]
			return s
		}
	}
	t.Fatal("the fake python was never started to build")
	return transcript{}
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Report(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func TestPreflight(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		edit      func(o *Options)
		remove    string
		extraEnv  []string
		wantErr   error  // errors.Is target
		wantWhat  string // EnvError.What
		wantWarn  string
		wantSDK   bool
		wantInErr string
	}{
		{name: "linux warns", wantWarn: "MPS is Apple-only"},
		{name: "darwin sdk", edit: func(o *Options) { o.GOOS = "darwin"; o.Xcrun = o.Python }, wantSDK: true},
		{name: "darwin without sdk", edit: func(o *Options) { o.GOOS = "darwin"; o.Xcrun = o.Python },
			extraEnv: []string{"FAKE_NO_SDK=1"}, wantWhat: "xcrun", wantInErr: "unable to find sdk"},
		{name: "darwin without xcrun", edit: func(o *Options) { o.GOOS = "darwin"; o.Xcrun = "/nonexistent/xcrun" },
			wantWhat: "xcrun"},
		{name: "no setup.py", remove: "setup.py", wantErr: ErrNotPyTorch, wantInErr: "missing setup.py"},
		{name: "no aten", remove: "aten", wantErr: ErrNotPyTorch, wantInErr: "missing aten"},
		{name: "python not found", edit: func(o *Options) { o.Python = "/nonexistent/python3" },
			wantWhat: "python", wantInErr: `"/nonexistent/python3" not found`},
		{name: "python not in PATH", edit: func(o *Options) { o.Python = "mpspatch-no-such-python" },
			wantWhat: "python", wantInErr: "not found"},
		{name: "externally managed python", extraEnv: []string{"FAKE_EXTERNALLY_MANAGED=1"}, wantWhat: "python", wantInErr: "--venv"},
		{name: "externally managed, told to break it", extraEnv: []string{"FAKE_EXTERNALLY_MANAGED=1", "PIP_BREAK_SYSTEM_PACKAGES=1"}, wantWarn: "MPS is Apple-only"},
		{name: "python without pip", extraEnv: []string{"FAKE_NO_PIP=1"}, wantWhat: "pip", wantInErr: "no pip module"},
		{name: "no pip needed for a custom command", extraEnv: []string{"FAKE_NO_PIP=1"},
			edit: func(o *Options) { o.Args = []string{"setup.py", "develop"} }, wantWarn: "MPS is Apple-only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := copyTree(t)
			if tt.remove != "" {
				os.RemoveAll(filepath.Join(tree, tt.remove))
			}
			opts, _ := fakeOptions(t, tree, "ok", tt.extraEnv...)
			if tt.edit != nil {
				tt.edit(&opts)
			}
			env, err := preflight(ctx, opts)
			wantFail := tt.wantErr != nil || tt.wantWhat != ""
			if (err != nil) != wantFail {
				t.Fatalf("preflight error = %v, want failure %v", err, wantFail)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
			if tt.wantWhat != "" {
				var ee *EnvError
				if !errors.As(err, &ee) || ee.What != tt.wantWhat {
					t.Errorf("error = %v (%T), want *EnvError about %s", err, err, tt.wantWhat)
				}
			}
			if tt.wantInErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantInErr)) {
				t.Errorf("error = %v, want it to contain %q", err, tt.wantInErr)
			}
			if err != nil {
				return
			}
			if env.Python != opts.Python || env.PythonVersion != "3.11.7" {
				t.Errorf("python = %q %q, want %q 3.11.7", env.Python, env.PythonVersion, opts.Python)
			}
			if tt.wantSDK != (env.SDK != "") {
				t.Errorf("SDK = %q, want one: %v", env.SDK, tt.wantSDK)
			}
			if tt.wantWarn != "" && (len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], tt.wantWarn)) {
				t.Errorf("warnings = %q, want one about %q", env.Warnings, tt.wantWarn)
			}
			if tt.wantWarn == "" && len(env.Warnings) != 0 {
				t.Errorf("warnings = %q, want none", env.Warnings)
			}
		})
	}
}

func TestBuildFakeSuccess(t *testing.T) {
	ctx := context.Background()
	tree := copyTree(t)
	g := &gitcli.Git{Env: gitcli.DeterministicEnv(t.TempDir())}
	if _, err := run.Run(ctx, run.Cmd{Argv: []string{"git", "init", "-q"}, Dir: tree, Env: g.Env}); err != nil {
		t.Fatal(err)
	}
	head, err := g.Commit(ctx, tree, "fixture\n", CommitOptionsAll())
	if err != nil {
		t.Fatal(err)
	}

	opts, transcriptPath := fakeOptions(t, tree, "ok", "USE_CUDA=1", "MAX_JOBS=99")
	rec := &recorder{}
	opts.Reporter = rec
	opts.Jobs = 3
	opts.Env = map[string]string{"USE_CUDA": "0", "BUILD_TEST": "0"}
	opts.Git = g
	now := time.Date(2025, 12, 12, 9, 30, 0, 0, time.UTC)
	opts.Now = func() time.Time { now = now.Add(time.Second); return now }

	res, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}

	tr := readTranscript(t, transcriptPath)
	if !slices.Equal(tr.Argv, DefaultArgs) {
		t.Errorf("python argv = %q, want %q", tr.Argv, DefaultArgs)
	}
	if tr.Dir != tree {
		t.Errorf("python ran in %s, want the tree %s", tr.Dir, tree)
	}
	for k, want := range map[string]string{"USE_MPS": "1", "MAX_JOBS": "3", "USE_CUDA": "0", "BUILD_TEST": "0"} {
		if tr.Env[k] != want {
			t.Errorf("build env %s = %q, want %q", k, tr.Env[k], want)
		}
	}

	var compile []string
	phases := map[Phase]bool{}
	for _, e := range rec.all() {
		phases[e.Phase] = true
		if e.Phase == PhaseCompile {
			compile = append(compile, e.Line)
		}
	}
	wantCompile := []string{
		"[1/4] Building CXX object caffe2/CMakeFiles/torch_cpu.dir/k1.cpp.o",
		"[2/4] Building CXX object caffe2/CMakeFiles/torch_cpu.dir/k2.cpp.o",
		"[3/4] Building CXX object caffe2/CMakeFiles/torch_cpu.dir/k3.cpp.o",
		"[4/4] Building CXX object caffe2/CMakeFiles/torch_cpu.dir/k4.cpp.o",
	}
	if !slices.Equal(compile, wantCompile) {
		t.Errorf("compile events %q, want %q", compile, wantCompile)
	}
	for _, p := range []Phase{PhaseConfigure, PhaseCompile, PhaseInstall, PhaseDone} {
		if !phases[p] {
			t.Errorf("no %s event", p)
		}
	}

	// The log is named after the start time; the clock gives 09:30:01 onwards.
	name := filepath.Base(res.LogPath)
	started, err := time.Parse("20060102T150405Z", strings.TrimSuffix(strings.TrimPrefix(name, "build-"), ".log"))
	if err != nil || filepath.Dir(res.LogPath) != filepath.Join(tree, ".mpspatch", "logs") || started.Before(time.Date(2025, 12, 12, 9, 30, 1, 0, time.UTC)) {
		t.Errorf("log = %s, want .mpspatch/logs/build-<start time>.log in the tree", res.LogPath)
	}
	log, err := os.ReadFile(res.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-m pip install -e . -v --no-build-isolation", "[4/4] Building CXX", "Successfully installed", "# exit status 0"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}

	p, err := ReadProvenance(tree)
	if err != nil {
		t.Fatal(err)
	}
	want := Provenance{
		Schema: 1, Tool: "mpspatch", ToolVersion: "v0.1.0-test", UpstreamCommit: head,
		SeriesHash: "abc123", Patches: []string{"0001-a.patch", "0002-b.patch"},
		BuiltAt: started.Add(res.Duration), BuildSeconds: res.Duration.Seconds(),
		Python: opts.Python, PythonVersion: "3.11.7", Platform: "linux/" + p.Platform[len("linux/"):],
		Env: map[string]string{"USE_MPS": "1", "MAX_JOBS": "3", "USE_CUDA": "0", "BUILD_TEST": "0"},
		Log: res.LogPath,
	}
	if p.Inputs == nil || p.InputsHash != p.Inputs.hash() || p.Inputs.UpstreamCommit != head || p.Inputs.Python != opts.Python ||
		len(p.Inputs.Patches) != 2 || p.Inputs.Patches[1].SHA256 != "bb" || p.Inputs.Env["USE_CUDA"] != "0" || p.Inputs.Env["MAX_JOBS"] != "" {
		t.Errorf("stamp inputs = %+v (hash %s)", p.Inputs, p.InputsHash)
	} else {
		want.Inputs, want.InputsHash = p.Inputs, p.InputsHash
	}
	if res.Duration <= 0 || !strings.HasPrefix(p.Platform, "linux/") || !equalProvenance(p, want) {
		t.Errorf("stamp:\n have %+v\n want %+v", p, want)
	}
	if res.StampPath != filepath.Join(tree, ProvenanceFile) {
		t.Errorf("StampPath = %s", res.StampPath)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "MPS is Apple-only") {
		t.Errorf("warnings = %q, want only the linux one", res.Warnings)
	}
}

// CommitOptionsAll stages everything.
func CommitOptionsAll() gitcli.CommitOptions { return gitcli.CommitOptions{} }

func equalProvenance(a, b Provenance) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// warnRecorder is a Reporter that also takes warnings as they arise.
type warnRecorder struct {
	recorder
	warnings []string
	// compileBeforeWarn counts compile events seen before the first warning.
	compileBeforeWarn int
}

func (w *warnRecorder) Warn(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.warnings) == 0 {
		for _, e := range w.events {
			if e.Phase == PhaseCompile {
				w.compileBeforeWarn++
			}
		}
	}
	w.warnings = append(w.warnings, msg)
}

func TestBuildWithoutGit(t *testing.T) {
	tree := copyTree(t)
	opts, _ := fakeOptions(t, tree, "ok")
	rec := &warnRecorder{}
	opts.Reporter = rec
	res, err := Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Provenance.UpstreamCommit != "" {
		t.Errorf("upstream commit = %q without .git", res.Provenance.UpstreamCommit)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "no .git") }) {
		t.Errorf("warnings = %q, want one about the missing .git", res.Warnings)
	}
	// The warner saw the same warnings, the platform one before the build started.
	if !slices.Equal(rec.warnings, res.Warnings) {
		t.Errorf("Warn calls %q, want %q", rec.warnings, res.Warnings)
	}
	if rec.compileBeforeWarn != 0 {
		t.Errorf("the first warning came after %d compile events, want before the build", rec.compileBeforeWarn)
	}
}

func TestBuildFakeFailure(t *testing.T) {
	tree := copyTree(t)
	opts, _ := fakeOptions(t, tree, "fail")
	_, err := Build(context.Background(), opts)
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("error = %v (%T), want *BuildError", err, err)
	}
	wantErrs := []string{
		"/src/pytorch/aten/src/ATen/mps/MPSStream.mm:42:5: error: use of undeclared identifier 'streamLock'",
		"/src/pytorch/aten/src/ATen/mps/MPSStream.mm:57:3: fatal error: 'missing.h' file not found",
	}
	if !slices.Equal(be.FirstErrors, wantErrs) {
		t.Errorf("FirstErrors = %q, want %q", be.FirstErrors, wantErrs)
	}
	if be.Result.ExitCode != 1 {
		t.Errorf("exit code = %d, want 1", be.Result.ExitCode)
	}
	msg := err.Error()
	for _, want := range append([]string{"build failed", "exit status 1", "at step 2/3", be.LogPath, "first errors:"}, wantErrs...) {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if _, err := os.Stat(filepath.Join(tree, ProvenanceFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed build wrote a stamp (stat: %v)", err)
	}
}

func TestBuildCancelled(t *testing.T) {
	tree := copyTree(t)
	opts, _ := fakeOptions(t, tree, "hang")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel as soon as the build reports progress: the child is running then.
	opts.Reporter = reporterFunc(func(e Event) {
		if e.Phase == PhaseCompile {
			cancel()
		}
	})
	_, err := Build(ctx, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if !strings.Contains(err.Error(), "log: "+filepath.Join(tree, ".mpspatch", "logs")) {
		t.Errorf("error %q does not name the log", err)
	}
}

// TestBuildRealNinja runs the builder over real cmake and ninja output: the fake python
// configures and builds testdata/tree/CMakeLists.txt as PyTorch's setup.py would.
func TestBuildRealNinja(t *testing.T) {
	needTools(t, "cmake", "ninja", "cc")
	t.Run("success", func(t *testing.T) {
		tree := copyTree(t)
		opts, _ := fakeOptions(t, tree, "cmake")
		rec := &recorder{}
		opts.Reporter = rec
		if _, err := Build(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		var sawConfigure bool
		var last Event
		for _, e := range rec.all() {
			switch e.Phase {
			case PhaseConfigure:
				sawConfigure = true
			case PhaseCompile:
				if e.Done < last.Done && e.Total == last.Total {
					t.Errorf("progress went back: %d/%d after %d/%d", e.Done, e.Total, last.Done, last.Total)
				}
				last = e
			}
		}
		if !sawConfigure {
			t.Error("no configure phase from cmake's \"-- \" lines")
		}
		// 6 kernels + main compiled, the library and the probe linked: 9 ninja steps.
		if last.Done != 9 || last.Total != 9 || last.Percent != 100 {
			t.Errorf("last compile event %d/%d %.0f%%, want 9/9 100%%", last.Done, last.Total, last.Percent)
		}
	})
	t.Run("compiler error", func(t *testing.T) {
		tree := copyTree(t)
		opts, _ := fakeOptions(t, tree, "cmake", "FAKE_BREAK=ON")
		_, err := Build(context.Background(), opts)
		var be *BuildError
		if !errors.As(err, &be) {
			t.Fatalf("error = %v (%T), want *BuildError", err, err)
		}
		want := filepath.Join(tree, "src", "k3.c") + ":2:2: error: #error deliberately broken for the builder tests"
		if len(be.FirstErrors) == 0 || be.FirstErrors[0] != want {
			t.Errorf("FirstErrors = %q, want first %q", be.FirstErrors, want)
		}
	})
}

// TestBuildRealPip is the whole thing with real tools: a fresh virtual environment, its
// pip doing an editable install of testdata/tree offline, whose setup.py runs cmake and
// ninja as PyTorch's does.
func TestBuildRealPip(t *testing.T) {
	t.Parallel() // each has its own venv, trees and caches
	ctx := context.Background()
	base := testenv.Python(t)
	venv := filepath.Join(t.TempDir(), "venv")
	if _, err := run.Output(ctx, run.Cmd{Argv: []string{base, "-m", "venv", venv}}); err != nil {
		t.Fatalf("create a virtual environment with %s (Debian: python3-venv; set MPSPATCH_PYTHON for another interpreter): %v", base, err)
	}
	python := filepath.Join(venv, "bin", "python")
	env := append(os.Environ(), "PIP_NO_INDEX=1", "PIP_NO_CACHE_DIR=1", "PIP_DISABLE_PIP_VERSION_CHECK=1")

	t.Run("success", func(t *testing.T) {
		tree := copyTree(t)
		rec := &recorder{}
		res, err := Build(ctx, Options{Tree: tree, Python: python, BaseEnv: env, Jobs: 2, Reporter: rec, GOOS: "linux", Cache: CacheOptions{Tool: "none"}})
		if err != nil {
			t.Fatal(err)
		}
		phases := map[Phase]bool{}
		var last Event
		for _, e := range rec.all() {
			phases[e.Phase] = true
			if e.Phase == PhaseCompile {
				last = e
			}
		}
		for _, p := range []Phase{PhaseConfigure, PhaseCompile, PhaseInstall, PhaseDone} {
			if !phases[p] {
				t.Errorf("no %s event from the real build", p)
			}
		}
		if last.Done != 9 || last.Total != 9 {
			t.Errorf("last compile event %d/%d, want 9/9", last.Done, last.Total)
		}
		log, err := os.ReadFile(res.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(log), "Successfully installed mpspatch-fixture-0.0.0") {
			t.Errorf("log lacks pip's success line:\n%s", log)
		}
		p, err := ReadProvenance(tree)
		if err != nil {
			t.Fatal(err)
		}
		// sys.executable of a venv is its bin/python (not resolved through the symlink).
		if p.Python != python || p.PythonVersion == "" || p.Env["MAX_JOBS"] != "2" {
			t.Errorf("stamp python %q %q env %v, want %s", p.Python, p.PythonVersion, p.Env, python)
		}
	})
	t.Run("compiler error", func(t *testing.T) {
		tree := copyTree(t)
		_, err := Build(ctx, Options{Tree: tree, Python: python, BaseEnv: append(env, "MPSPATCH_FIXTURE_BREAK=1"), GOOS: "linux", Cache: CacheOptions{Tool: "none"}})
		var be *BuildError
		if !errors.As(err, &be) {
			t.Fatalf("error = %v (%T), want *BuildError", err, err)
		}
		want := filepath.Join(tree, "src", "k3.c") + ":2:2: error: #error deliberately broken for the builder tests"
		if len(be.FirstErrors) == 0 || be.FirstErrors[0] != want {
			t.Errorf("FirstErrors = %q, want first %q", be.FirstErrors, want)
		}
		if !strings.Contains(err.Error(), be.LogPath) {
			t.Errorf("error does not name the log: %v", err)
		}
	})
}
