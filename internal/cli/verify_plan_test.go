package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/config"
	"github.com/mpspatch/mpspatch/verify"
)

// verifyPlanOf parses args as verify's flags, runs nothing, and returns the plan they
// make with cfg as the configuration (the flags → options → plan path of the command).
func verifyPlanOf(t *testing.T, cfg config.Config, args ...string) (verify.Plan, error) {
	t.Helper()
	d := &deps{io: IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, global: &globalOptions{}}
	var got *verifyOptions
	cmd := newVerifyCmdRun(d, func(_ context.Context, o *verifyOptions) error {
		got = o
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("verify %v: %v", args, err)
	}
	if got == nil {
		t.Fatalf("verify %v: the run function was not called", args)
	}
	if err := got.resolve(cfg); err != nil {
		return verify.Plan{}, err
	}
	return got.plan()
}

// TestVerifyFlagsMakeThePlan: --suite, --no-scaling, --device and --threads against the
// config's [verify] defaults, with nothing run.
func TestVerifyFlagsMakeThePlan(t *testing.T) {
	cfg := config.Default()
	cfg.Verify.Device = "cuda"
	cfg.Verify.Threads = []int{4}
	cfg.Verify.Python = "/opt/py/bin/python3"
	for _, tc := range []struct {
		name  string
		args  []string
		check func(t *testing.T, p verify.Plan)
	}{
		{"defaults from the config", nil, func(t *testing.T, p verify.Plan) {
			if p.Device != "cuda" || p.Python != "/opt/py/bin/python3" || p.Profile != "quick" || p.Repeat != 1 {
				t.Errorf("plan: %+v", p)
			}
			if !reflect.DeepEqual(p.Threads, []int{4}) || p.ThreadsToBench {
				t.Errorf("the config's threads go to the suites only: %v, to the benchmark %v", p.Threads, p.ThreadsToBench)
			}
			if p.NoScaling || p.Suites != nil || p.CheckTorch != nil {
				t.Errorf("plan: %+v", p)
			}
		}},
		{"--device given empty picks the best, not the config's", []string{"--device", ""}, func(t *testing.T, p verify.Plan) {
			if p.Device != "" {
				t.Errorf("device %q, want \"\"", p.Device)
			}
		}},
		{"--device cpu", []string{"--device", "cpu"}, func(t *testing.T, p verify.Plan) {
			if p.Device != "cpu" {
				t.Errorf("device %q", p.Device)
			}
		}},
		{"--suite, repeated and comma-separated", []string{"--suite", "raw_ops, models", "--suite", "scaling"}, func(t *testing.T, p verify.Plan) {
			if !reflect.DeepEqual(p.Suites, []string{"raw_ops", "models", "scaling"}) || p.NoScaling {
				t.Errorf("suites %q, no-scaling %v", p.Suites, p.NoScaling)
			}
		}},
		{"--suite with --no-scaling", []string{"--suite", "scaling", "--no-scaling"}, func(t *testing.T, p verify.Plan) {
			if !reflect.DeepEqual(p.Suites, []string{"scaling"}) || !p.NoScaling {
				t.Errorf("suites %q, no-scaling %v", p.Suites, p.NoScaling)
			}
		}},
		{"--threads go to the benchmark too", []string{"--threads", "2,8"}, func(t *testing.T, p verify.Plan) {
			if !reflect.DeepEqual(p.Threads, []int{2, 8}) || !p.ThreadsToBench {
				t.Errorf("threads %v, to the benchmark %v", p.Threads, p.ThreadsToBench)
			}
		}},
		{"--tree checks the torch", []string{"--tree", "pytorch", "--allow-foreign-torch"}, func(t *testing.T, p verify.Plan) {
			if p.CheckTorch == nil || !p.AllowForeign {
				t.Errorf("check %v, allow foreign %v", p.CheckTorch != nil, p.AllowForeign)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := verifyPlanOf(t, cfg, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
	for _, args := range [][]string{{"--device", "tpu"}, {"--profile", "huge"}, {"--repeat", "0"}, {"--threads", "0"}, {"--suites-dir", t.TempDir()}} {
		if _, err := verifyPlanOf(t, cfg, args...); exitCodeOf(err) != ExitUsage || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("verify %v: have %v (exit %d), want a usage error naming %s", args, err, exitCodeOf(err), args[0])
		}
	}
}

// TestVerifyRelativeInterpreter: --python venv/bin/python (verify --help's example) is the
// interpreter under the directory mpspatch runs in, although the suites run elsewhere.
func TestVerifyRelativeInterpreter(t *testing.T) {
	py := verifyPython(t)
	suites := writeSuitesWith(t, map[string]string{"test_small.py": "def test_one():\n    pass\n"})
	cwd := t.TempDir()
	t.Chdir(cwd)
	if err := os.MkdirAll(filepath.Join("venv", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(py, filepath.Join("venv", "bin", "python")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runMain(t, "verify", "--python", "venv/bin/python", "--device", "cpu",
		"--suites-dir", suites, "--no-scaling", "--report-dir", "rep")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "patched: 1 pass") {
		t.Errorf("stdout lacks the pass:\n%s", stdout)
	}
}

// TestVerifyThatFailsEarlyLeavesNothing: an interpreter that is missing or is not Python
// is an environment error (exit 5) in one sentence, and ./mpspatch-report is not left in
// the directory verify ran in.
func TestVerifyThatFailsEarlyLeavesNothing(t *testing.T) {
	for _, tc := range []struct{ python, want string }{
		{"/bin/true", "/bin/true is not a Python interpreter: the probe printed nothing"},
		{"venv/bin/python", `python interpreter "venv/bin/python" not found`},
	} {
		t.Run(tc.python, func(t *testing.T) {
			cwd := t.TempDir()
			t.Chdir(cwd)
			code, stdout, stderr := runMain(t, "verify", "--python", tc.python, "--device", "cpu")
			if code != ExitUnsupported {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitUnsupported, stdout, stderr)
			}
			if !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
				t.Errorf("stderr is not the one sentence %q:\n%s", tc.want, stderr)
			}
			entries, err := os.ReadDir(cwd)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				t.Errorf("verify left %s in the working directory", e.Name())
			}
		})
	}
}

// TestRunVerifyStageLogsItsCommandLine: run's verify stage calls the session directly and
// its log starts with the `mpspatch verify` line that does the same again by hand.
func TestRunVerifyStageLogsItsCommandLine(t *testing.T) {
	f := newRunFixture(t)
	t.Setenv("FAKE_MODE", "ok")
	hostOS = "linux"
	code, stdout, stderr := runMain(t, f.args()...)
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	_, rep := runOutcomes(t, stdout)
	stage := rep.Stages[len(rep.Stages)-1]
	if stage.Name != "verify" || !strings.Contains(stage.Detail, "1 pass") {
		t.Fatalf("verify stage: %+v", stage)
	}
	data, err := os.ReadFile(stage.Log)
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	first, _, _ := strings.Cut(log, "\n")
	want := "$ mpspatch --config " + f.config + " verify --tree " + f.dir + " --allow-foreign-torch --device cpu"
	if !strings.HasPrefix(first, want) {
		t.Fatalf("the log's first line:\n%s\nwant it to start with\n%s", first, want)
	}
	for _, w := range []string{"patched: torch ", "patched: 1 pass", "\nexit 0\n"} {
		if !strings.Contains(log, w) {
			t.Errorf("the log lacks %q:\n%s", w, log)
		}
	}

	// The line does the same again by hand.
	again := strings.Fields(strings.TrimPrefix(first, "$ mpspatch "))
	code, stdout, stderr = runMain(t, again...)
	if code != ExitOK || !strings.Contains(stdout, "patched: 1 pass") {
		t.Errorf("%s: exit %d\n%s\n%s", first, code, stdout, stderr)
	}
}
