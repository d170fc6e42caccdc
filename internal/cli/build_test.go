package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/builder"
	"github.com/mpspatch/mpspatch/internal/run"
)

// fakePythonBuild is the fake python, built once per test binary (a go build costs seconds
// on a loaded 2-core machine, and the build and run tests each need it); TestMain removes it.
var fakePythonBuild struct {
	sync.Once
	dir, path string
	err       error
}

// fakePython returns testdata/fakepython built into a temp dir. It keeps no state of its
// own: each test points FAKE_TRANSCRIPT and FAKE_MODE at its own files.
func fakePython(t *testing.T) string {
	t.Helper()
	b := &fakePythonBuild
	b.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "mpspatch-fakepython-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "python3")
		_, b.err = run.Output(context.Background(), run.Cmd{Argv: []string{"go", "build", "-o", b.path, "./testdata/fakepython"}})
	})
	if b.err != nil {
		t.Fatalf("build the fake python: %v", b.err)
	}
	return b.path
}

// pytorchTree makes the smallest tree the builder accepts.
func pytorchTree(t *testing.T) string {
	t.Helper()
	tree := filepath.Join(t.TempDir(), "pytorch")
	for _, d := range []string{"aten", "torch"} {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "setup.py"), []byte("# stand-in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return tree
}

type fakeTranscript struct {
	Argv []string          `json:"argv"`
	Dir  string            `json:"dir"`
	Env  map[string]string `json:"env"`
}

func TestBuildCommand(t *testing.T) {
	py := fakePython(t)
	cfgPath := filepath.Join(t.TempDir(), "mpspatch.toml")
	cfg := "[build]\njobs = 6\nlog_dir = \"build-logs\"\nenv = { USE_CUDA = \"0\", BUILD_TEST = \"1\" }\n[build.cache]\ntool = \"none\"\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		mode       string
		args       []string
		noTree     bool
		wantCode   int
		wantStderr []string
		notStderr  []string
	}{
		{name: "success", mode: "ok", args: []string{"--jobs", "2", "--env", "BUILD_TEST=0", "--env", "EMPTY="},
			wantStderr: []string{"MPS is Apple-only", "build: compile  50% [10/20]", "build: compile 100% [20/20]", "build: done"}},
		{name: "quiet", mode: "ok", args: []string{"--quiet"},
			wantStderr: []string{"MPS is Apple-only"}, notStderr: []string{"build: compile"}},
		{name: "compile error", mode: "fail", wantCode: ExitBuildFailed,
			wantStderr: []string{"build failed", "exit status 1", "first errors:",
				"aten/src/ATen/mps/MPSStream.mm:42:5: error: use of undeclared identifier 'streamLock'", "build-logs/build-"}},
		{name: "no python", mode: "ok", args: []string{"--python", filepath.Join(t.TempDir(), "python3")},
			wantCode: ExitUnsupported, wantStderr: []string{"not found"}},
		{name: "not pytorch", mode: "ok", noTree: true, wantCode: ExitUsage, wantStderr: []string{"not a PyTorch checkout", "missing setup.py"}},
		{name: "bad env", mode: "ok", args: []string{"--env", "NOEQUALS"}, wantCode: ExitUsage, wantStderr: []string{`--env "NOEQUALS": want KEY=VALUE`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := pytorchTree(t)
			if tt.noTree {
				tree = t.TempDir()
			}
			transcriptPath := filepath.Join(t.TempDir(), "transcript.json")
			t.Setenv("FAKE_MODE", tt.mode)
			t.Setenv("FAKE_TRANSCRIPT", transcriptPath)
			args := append([]string{"--config", cfgPath, "build", "--tree", tree, "--python", py, "--json"}, tt.args...)
			code, stdout, stderr := runMain(t, args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, stdout, stderr)
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			for _, not := range tt.notStderr {
				if strings.Contains(stderr, not) {
					t.Errorf("stderr has %q:\n%s", not, stderr)
				}
			}
			if tt.wantCode != ExitOK {
				if _, err := os.Stat(filepath.Join(tree, builder.ProvenanceFile)); err == nil {
					t.Error("a failed build left a provenance stamp")
				}
				// --json: the failure is one error document; a failed build names its log.
				e := errorMember(t, oneJSONDocument(t, stdout), tt.wantCode)
				if log, _ := e["details"].(map[string]any)["log"].(string); tt.wantCode == ExitBuildFailed && !strings.Contains(log, "build-logs") {
					t.Errorf("the error of a failed build does not name its log: %v", e)
				}
				return
			}

			var rep buildReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
			}
			if rep.Stamp != filepath.Join(tree, builder.ProvenanceFile) || !strings.HasPrefix(rep.Log, filepath.Join(tree, "build-logs")+string(filepath.Separator)) {
				t.Errorf("report paths: stamp %s, log %s", rep.Stamp, rep.Log)
			}
			stamp, err := builder.ReadProvenance(tree)
			if err != nil {
				t.Fatal(err)
			}
			if stamp.ToolVersion != version || stamp.Python != py || stamp.Log != rep.Log {
				t.Errorf("stamp: %+v", stamp)
			}

			data, err := os.ReadFile(transcriptPath)
			if err != nil {
				t.Fatal(err)
			}
			var tr fakeTranscript
			if err := json.Unmarshal(data, &tr); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tr.Argv, builder.DefaultArgs) || tr.Dir != tree {
				t.Errorf("python ran as %q in %s, want %q in %s", tr.Argv, tr.Dir, builder.DefaultArgs, tree)
			}
			wantEnv := map[string]string{"USE_MPS": "1", "MAX_JOBS": "6", "USE_CUDA": "0", "BUILD_TEST": "1"}
			if tt.name == "success" {
				wantEnv["MAX_JOBS"], wantEnv["BUILD_TEST"], wantEnv["EMPTY"] = "2", "0", ""
			}
			for k, v := range wantEnv {
				if have, ok := tr.Env[k]; !ok || have != v {
					t.Errorf("build env %s = %q (set: %v), want %q", k, have, ok, v)
				}
				if stamp.Env[k] != v {
					t.Errorf("stamp env %s = %q, want %q", k, stamp.Env[k], v)
				}
			}
		})
	}
}

func TestProgressLine(t *testing.T) {
	type step struct {
		after time.Duration
		key   string
		text  string
		force bool
		clear bool
	}
	steps := []step{
		{0, "compile 0", "a", false, false},
		{50 * time.Millisecond, "compile 0", "b", false, false}, // too soon, same key
		{50 * time.Millisecond, "compile 1", "c", false, false}, // new key
		{50 * time.Millisecond, "compile 1", "d", false, false}, // too soon
		{200 * time.Millisecond, "compile 1", "e", false, false},
		{0, "", "", false, true},
		{time.Millisecond, "compile 1", "f", false, false}, // redrawn after a clear
		{time.Millisecond, "compile 1", "g", true, false},  // forced
		{40 * time.Second, "compile 1", "h", false, false},
	}
	tests := []struct {
		tty  bool
		want string
	}{
		{tty: true, want: "\r\x1b[Ka\r\x1b[Kc\r\x1b[Ke\r\x1b[K\r\x1b[Kf\r\x1b[Kg\r\x1b[Kh\n"},
		// Plain: a line per key change, after 30s without one, or when forced; clear is moot.
		{tty: false, want: "a\nc\ng\nh\n"},
	}
	for _, tt := range tests {
		name := "plain"
		if tt.tty {
			name = "terminal"
		}
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			l := &progressLine{w: &buf, tty: tt.tty, now: func() time.Time { return clock }}
			for _, s := range steps {
				clock = clock.Add(s.after)
				if s.clear {
					l.clear()
					continue
				}
				l.update(s.key, s.text, s.force)
			}
			l.finish()
			if buf.String() != tt.want {
				t.Errorf("output %q, want %q", buf.String(), tt.want)
			}
		})
	}
}

func TestFormatBuildEvent(t *testing.T) {
	tests := []struct {
		e    builder.Event
		want string
	}{
		{builder.Event{Phase: builder.PhaseStart, Percent: -1, Elapsed: 1500 * time.Millisecond}, "build: start elapsed 2s"},
		{builder.Event{Phase: builder.PhaseCompile, Done: 123, Total: 4567, Percent: 2.69, Elapsed: time.Minute, ETA: 37 * time.Minute},
			"build: compile   3% [123/4567] elapsed 1m0s eta 37m0s"},
		{builder.Event{Phase: builder.PhaseCompile, Percent: 45}, "build: compile  45% elapsed 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if have := formatBuildEvent(tt.e); have != tt.want {
				t.Errorf("formatBuildEvent = %q, want %q", have, tt.want)
			}
		})
	}
}

// TestBuildCommandUpToDate: the second run builds nothing and says so; --force builds;
// a torch imported from elsewhere is exit 4 naming the path and the remedy.
func TestBuildCommandUpToDate(t *testing.T) {
	py := fakePython(t)
	cfgPath := filepath.Join(t.TempDir(), "mpspatch.toml")
	if err := os.WriteFile(cfgPath, []byte("[build.cache]\ntool = \"none\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tree := pytorchTree(t)
	transcriptPath := filepath.Join(t.TempDir(), "transcript.json")
	t.Setenv("FAKE_MODE", "ok")
	t.Setenv("FAKE_TRANSCRIPT", transcriptPath)
	build := func(extra ...string) (int, string, string) {
		return runMain(t, append([]string{"--config", cfgPath, "build", "--tree", tree, "--python", py}, extra...)...)
	}
	if code, _, stderr := build(); code != ExitOK {
		t.Fatalf("first build: exit %d\n%s", code, stderr)
	}
	os.Remove(transcriptPath)
	code, stdout, stderr := build()
	if code != ExitOK || !strings.Contains(stdout, "up to date "+tree+": nothing changed") || strings.Contains(stderr, "build: compile") {
		t.Errorf("second build: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if _, err := os.Stat(transcriptPath); err == nil {
		t.Error("an up-to-date build started the build command")
	}
	code, stdout, stderr = build("--force", "--json")
	var rep buildReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != ExitOK {
		t.Fatalf("--force: exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	if rep.UpToDate || !slices.Equal(rep.Changes, []string{"--force"}) || !strings.Contains(stderr, "build: building: --force") {
		t.Errorf("--force: report %+v\nstderr: %s", rep, stderr)
	}

	t.Setenv("FAKE_TORCH_FILE", "/opt/venv/lib/python3.12/site-packages/torch/__init__.py")
	t.Setenv("FAKE_TORCH_OWNER", "torch")
	code, _, stderr = build()
	if code != ExitBuildFailed {
		t.Fatalf("shadowed: exit %d, want %d\n%s", code, ExitBuildFailed, stderr)
	}
	for _, want := range []string{"imports torch from /opt/venv/lib/python3.12/site-packages/torch, not from the tree", py + " -m pip uninstall -y torch"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
