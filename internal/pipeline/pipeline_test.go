package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeStages builds n stages named s0..s(n-1) whose inputs come from the inputs map and
// which record in ran the stages that actually ran.
type fakeStages struct {
	inputs map[string]string
	fail   map[string]error
	skip   map[string]string
	hook   map[string]func(ctx context.Context) // runs inside the stage
	ran    []string
}

func (f *fakeStages) stages(names ...string) []Stage {
	var out []Stage
	for _, n := range names {
		out = append(out, Stage{
			Name: n,
			Skip: func() string { return f.skip[n] },
			Inputs: func(context.Context) (map[string]string, error) {
				return map[string]string{"v": f.inputs[n]}, nil
			},
			Run: func(ctx context.Context, log io.Writer) (Result, error) {
				fmt.Fprintf(log, "stage %s running\n", n)
				if h := f.hook[n]; h != nil {
					h(ctx)
				}
				if err := ctx.Err(); err != nil {
					return Result{}, err
				}
				f.ran = append(f.ran, n)
				return Result{Detail: n + " done"}, f.fail[n]
			},
		})
	}
	return out
}

func newOpts(t *testing.T) Options {
	t.Helper()
	dir := t.TempDir()
	return Options{StampDir: filepath.Join(dir, "stamps"), LogDir: filepath.Join(dir, "logs"),
		Key: []byte("0123456789abcdef0123456789abcdef"),
		CodeOf: func(err error) int {
			if errors.Is(err, context.Canceled) {
				return 130
			}
			return 4
		}}
}

func outcomes(s *Summary) string {
	var parts []string
	for _, st := range s.Stages {
		parts = append(parts, st.Name+"="+string(st.Outcome))
	}
	return strings.Join(parts, " ")
}

func mustRun(t *testing.T, stages []Stage, opts Options) *Summary {
	t.Helper()
	s, err := Run(context.Background(), stages, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunSkipsWhatIsUpToDateAndRedoesFromAChange(t *testing.T) {
	f := &fakeStages{inputs: map[string]string{"clone": "a", "apply": "b", "build": "c", "verify": "d"}}
	opts := newOpts(t)
	names := []string{"clone", "apply", "build", "verify"}

	first := mustRun(t, f.stages(names...), opts)
	if have, want := outcomes(first), "clone=ran apply=ran build=ran verify=ran"; have != want {
		t.Fatalf("first run: have %s, want %s", have, want)
	}
	f.ran = nil
	second := mustRun(t, f.stages(names...), opts)
	if have, want := outcomes(second), "clone=up-to-date apply=up-to-date build=up-to-date verify=up-to-date"; have != want {
		t.Fatalf("second run: have %s, want %s", have, want)
	}
	if len(f.ran) != 0 {
		t.Fatalf("second run ran %v", f.ran)
	}
	if second.Stages[1].Detail != "apply done" {
		t.Errorf("an up-to-date stage keeps its detail from the stamp: have %q", second.Stages[1].Detail)
	}

	// A change in apply's inputs redoes apply and everything after it, even though the
	// later stages' own inputs did not change.
	f.inputs["apply"] = "b2"
	f.ran = nil
	third := mustRun(t, f.stages(names...), opts)
	if have, want := outcomes(third), "clone=up-to-date apply=ran build=ran verify=ran"; have != want {
		t.Fatalf("after a change: have %s, want %s", have, want)
	}
}

func TestRunFromAndUntil(t *testing.T) {
	f := &fakeStages{inputs: map[string]string{}}
	opts := newOpts(t)
	names := []string{"a", "b", "c", "d"}
	mustRun(t, f.stages(names...), opts)

	opts.From = "c"
	if have, want := outcomes(mustRun(t, f.stages(names...), opts)), "a=up-to-date b=up-to-date c=ran d=ran"; have != want {
		t.Errorf("--from c: have %s, want %s", have, want)
	}
	opts.From, opts.Until = "", "b"
	if have, want := outcomes(mustRun(t, f.stages(names...), opts)), "a=up-to-date b=up-to-date"; have != want {
		t.Errorf("--until b: have %s, want %s", have, want)
	}
	opts.From, opts.Until = "d", "b"
	if _, err := Run(context.Background(), f.stages(names...), opts); err == nil {
		t.Error("--until before --from: want an error")
	}
	opts.From, opts.Until = "nope", ""
	if _, err := Run(context.Background(), f.stages(names...), opts); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown --from: have %v", err)
	}
}

func TestRunStopsAtTheFirstFailureWithItsCode(t *testing.T) {
	f := &fakeStages{inputs: map[string]string{}, fail: map[string]error{"build": errors.New("compiler error")}}
	opts := newOpts(t)
	s := mustRun(t, f.stages("apply", "build", "verify"), opts)
	if have, want := outcomes(s), "apply=ran build=failed verify=not-reached"; have != want {
		t.Fatalf("have %s, want %s", have, want)
	}
	if s.Code != 4 || s.Stages[1].Code != 4 || !strings.Contains(s.Stages[1].Reason, "compiler error") {
		t.Errorf("code %d, stage %+v", s.Code, s.Stages[1])
	}
	// The failure wrote no stamp: the next run redoes build, not apply.
	delete(f.fail, "build")
	f.ran = nil
	if have, want := outcomes(mustRun(t, f.stages("apply", "build", "verify"), opts)), "apply=up-to-date build=ran verify=ran"; have != want {
		t.Errorf("after the fix: have %s, want %s", have, want)
	}
	log, err := os.ReadFile(s.Stages[1].Log)
	if err != nil || !strings.Contains(string(log), "stage build running") {
		t.Errorf("build's log: %q, %v", log, err)
	}
}

func TestInterruptKeepsFinishedStampsAndRedoesTheInterruptedStage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeStages{inputs: map[string]string{}, hook: map[string]func(context.Context){"build": func(context.Context) { cancel() }}}
	opts := newOpts(t)
	s, err := Run(ctx, f.stages("apply", "build", "verify"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if have, want := outcomes(s), "apply=ran build=interrupted verify=not-reached"; have != want {
		t.Fatalf("have %s, want %s", have, want)
	}
	if s.Code != 130 {
		t.Errorf("code: have %d, want 130", s.Code)
	}
	f.hook = nil
	if have, want := outcomes(mustRun(t, f.stages("apply", "build", "verify"), opts)), "apply=up-to-date build=ran verify=ran"; have != want {
		t.Errorf("resume: have %s, want %s", have, want)
	}
}

func TestPlantedOrForeignStampsAreNotTrusted(t *testing.T) {
	f := &fakeStages{inputs: map[string]string{}}
	opts := newOpts(t)
	mustRun(t, f.stages("apply", "verify"), opts)

	// Another key (another user, or a stamp that came with the checkout): not trusted.
	other := opts
	other.Key = []byte("another key, another machine....")
	if have, want := outcomes(mustRun(t, f.stages("apply", "verify"), other)), "apply=ran verify=ran"; have != want {
		t.Errorf("foreign key: have %s, want %s", have, want)
	}

	// A stamp edited by hand to claim success for other inputs: its MAC no longer holds.
	path := filepath.Join(opts.StampDir, "verify.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), "verify done", "all passed", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if have, want := outcomes(mustRun(t, f.stages("apply", "verify"), other)), "apply=up-to-date verify=ran"; have != want {
		t.Errorf("edited stamp: have %s, want %s", have, want)
	}

	// A stamp that is not a regular file (a FIFO would block a reader) is ignored.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	if have, want := outcomes(mustRun(t, f.stages("apply", "verify"), other)), "apply=up-to-date verify=ran"; have != want {
		t.Errorf("symlinked stamp: have %s, want %s", have, want)
	}
}

func TestSkippedStagesAreReportedAndChainTheirReason(t *testing.T) {
	f := &fakeStages{inputs: map[string]string{}, skip: map[string]string{"build": "needs macOS"}}
	opts := newOpts(t)
	s := mustRun(t, f.stages("apply", "build", "verify"), opts)
	if have, want := outcomes(s), "apply=ran build=skipped verify=ran"; have != want {
		t.Fatalf("have %s, want %s", have, want)
	}
	if s.Stages[1].Reason != "needs macOS" || s.Code != 0 {
		t.Errorf("skipped stage: %+v, code %d", s.Stages[1], s.Code)
	}
	// When the stage starts running (e.g. on a Mac, or with --build), what follows it
	// is redone: its result did not exist when verify last ran.
	delete(f.skip, "build")
	if have, want := outcomes(mustRun(t, f.stages("apply", "build", "verify"), opts)), "apply=up-to-date build=ran verify=ran"; have != want {
		t.Errorf("have %s, want %s", have, want)
	}
}
