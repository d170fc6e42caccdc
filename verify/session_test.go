package verify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestWithOne(t *testing.T) {
	for _, tc := range []struct{ in, want []int }{
		{[]int{2, 4, 8}, []int{1, 2, 4, 8}},
		{[]int{8, 1, 2}, []int{1, 2, 8}},
		{nil, []int{1}},
	} {
		have := withOne(tc.in)
		if len(have) != len(tc.want) {
			t.Errorf("withOne(%v) = %v, want %v", tc.in, have, tc.want)
			continue
		}
		for i := range have {
			if have[i] != tc.want[i] {
				t.Errorf("withOne(%v) = %v, want %v", tc.in, have, tc.want)
				break
			}
		}
	}
}

// TestPlanSelection: named suites narrow the run and the benchmark joins only when named;
// --no-scaling keeps it out whatever is named; a plan that selects nothing is ErrPlan.
func TestPlanSelection(t *testing.T) {
	all := []string{"test_models.py", "test_raw_ops.py"}
	for _, tc := range []struct {
		name      string
		suites    []string
		noScaling bool
		files     []string
		scaling   bool
		wantErr   string
	}{
		{name: "everything", files: all, scaling: true},
		{name: "everything without the benchmark", noScaling: true, files: all},
		{name: "one suite", suites: []string{"models"}, files: []string{"test_models.py"}},
		{name: "one suite and the benchmark", suites: []string{"models", "scaling"}, files: []string{"test_models.py"}, scaling: true},
		{name: "the benchmark alone", suites: []string{"bench_scaling.py"}, scaling: true},
		{name: "the benchmark by its stem", suites: []string{"bench_scaling"}, scaling: true},
		{name: "the benchmark named and refused", suites: []string{"scaling"}, noScaling: true, wantErr: "--suite selected nothing"},
		{name: "unknown", suites: []string{"nope"}, wantErr: `unknown suite "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, scaling, err := Plan{Suites: tc.suites, NoScaling: tc.noScaling}.selection(all)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrPlan) {
					t.Fatalf("have %v, want an ErrPlan error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 0 || len(tc.files) != 0 {
				if !reflect.DeepEqual(files, tc.files) {
					t.Errorf("files: have %v, want %v", files, tc.files)
				}
			}
			if scaling != tc.scaling {
				t.Errorf("scaling: have %v, want %v", scaling, tc.scaling)
			}
		})
	}
}

// quietObserver takes a session's milestones and keeps what its suites produce.
type quietObserver struct{ Report }

func (*quietObserver) Probing(string, string) {}
func (*quietObserver) Ready(RunInfo, []Env)   {}
func (*quietObserver) Running(Env, int)       {}

// TestSessionThatFailsEarlyLeavesNoReportDir: a session that ends before any suite ran
// (no interpreter, not a Python, a torch refused) takes away the report directory it made
// for the probe's log, and leaves a directory that was there, with its files, as it was.
func TestSessionThatFailsEarlyLeavesNoReportDir(t *testing.T) {
	py := testPython(t)
	refuse := func(context.Context, Env) error { return errors.New("not the tree's build") }
	for _, tc := range []struct {
		name    string
		plan    Plan
		wantErr error
	}{
		{"no interpreter", Plan{Python: "/nonexistent/python3"}, ErrUnsupported},
		{"not a python", Plan{Python: "/bin/true"}, ErrUnsupported},
		{"foreign torch", Plan{Python: py, Device: "cpu", CheckTorch: refuse}, ErrUnsupported},
		{"no baseline", Plan{Python: py, Device: "cpu", Baseline: "/nonexistent/python3"}, ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			tc.plan.ReportDir = filepath.Join(parent, "report", "nested")
			tc.plan.Profile, tc.plan.Repeat = "quick", 1
			rep, err := Run(context.Background(), tc.plan, &quietObserver{})
			if rep != nil || !errors.Is(err, tc.wantErr) {
				t.Fatalf("have %v, %v; want no report and %v", rep, err, tc.wantErr)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("the session left %s behind: %v", entries[0].Name(), err)
			}

			// A report directory that was there stays, with what it held.
			mine := filepath.Join(tc.plan.ReportDir, "logs", "mine.txt")
			if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(mine, []byte("keep\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(context.Background(), tc.plan, &quietObserver{}); err == nil {
				t.Fatal("want an error")
			}
			entries, _ := os.ReadDir(filepath.Dir(mine))
			if len(entries) != 1 || entries[0].Name() != "mine.txt" {
				t.Errorf("logs/ holds %v, want only mine.txt", entries)
			}
		})
	}
}

// TestProbeOfWhatIsNotPython: a program that exits 0 without the probe's answer is named
// as not a Python interpreter, an environment error (exit 5), never a JSON error.
func TestProbeOfWhatIsNotPython(t *testing.T) {
	for _, tc := range []struct{ python, want string }{
		{"/bin/true", "/bin/true is not a Python interpreter: the probe printed nothing"},
		{"/bin/echo", "/bin/echo is not a Python interpreter: the probe's answer is not its JSON line"},
	} {
		_, err := probeWith(context.Background(), tc.python, TargetPatched, "", probeOptions{})
		if err == nil || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: have %v, want ErrUnsupported saying %q", tc.python, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "JSON input") {
			t.Errorf("%s: the error is the decoder's: %v", tc.python, err)
		}
	}
}

func TestInterpreterPath(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"python3", "python3"},
		{"/usr/bin/python3", "/usr/bin/python3"},
		{"venv/bin/python", filepath.Join(wd, "venv/bin/python")},
		{"./python", filepath.Join(wd, "python")},
		{"../x/python", filepath.Join(filepath.Dir(wd), "x/python")},
	} {
		if have := interpreterPath(tc.in); have != tc.want {
			t.Errorf("interpreterPath(%q) = %q, want %q", tc.in, have, tc.want)
		}
	}
}
