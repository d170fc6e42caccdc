package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/confined"
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

// stateDirs opens dir's .mpspatch/run/stamps and .mpspatch/run/logs, creating them.
func stateDirs(t *testing.T, dir string) (stamps, logs *confined.Dir) {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	stamps, err = confined.Open(root, dir, ".mpspatch/run/stamps", true)
	if err != nil {
		t.Fatal(err)
	}
	logs, err = confined.Open(root, dir, ".mpspatch/run/logs", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stamps.Close(); logs.Close() })
	return stamps, logs
}

func newOpts(t *testing.T) Options {
	t.Helper()
	dir := t.TempDir()
	stamps, logs := stateDirs(t, dir)
	return Options{Stamps: stamps, Logs: logs, Checkout: "checkout " + dir,
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

// TestAStageRefusedByItsInputsTouchesNoStampOrLog: a first stage whose Inputs fail ends
// the run as failed, with its code and reason, without a log and without reading, removing
// or writing a stamp; so a run refused there needs neither directory (mpspatch run
// refuses a checkout of another commit this way, before it writes into the checkout).
func TestAStageRefusedByItsInputsTouchesNoStampOrLog(t *testing.T) {
	f := &fakeStages{inputs: map[string]string{}}
	stages := f.stages("clone", "apply", "verify")
	stages[0].Inputs = func(context.Context) (map[string]string, error) {
		return nil, errors.New("usage: not the pinned commit")
	}
	s, err := Run(context.Background(), stages, Options{Until: "apply", CodeOf: func(error) int { return 2 }})
	if err != nil {
		t.Fatal(err)
	}
	if have, want := outcomes(s), "clone=failed apply=not-reached"; have != want {
		t.Fatalf("have %s, want %s", have, want)
	}
	if s.Code != 2 || s.Stages[0].Log != "" || !strings.Contains(s.Stages[0].Reason, "not the pinned commit") || len(f.ran) != 0 {
		t.Errorf("code %d, stage %+v, ran %v", s.Code, s.Stages[0], f.ran)
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
	path := filepath.Join(opts.Stamps.Path(), "verify.json")
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

// TestStateIsRecordedAsTheStageLeftIt: a stage that changes what it is judged by (apply
// changes the tree) is stamped with the state after it ran. It is up to date while that
// state holds, and runs again, with every later stage, once the state changes back.
func TestStateIsRecordedAsTheStageLeftIt(t *testing.T) {
	tree := "base"
	ran := 0
	stages := []Stage{
		{
			Name:  "apply",
			State: func(context.Context) (map[string]string, error) { return map[string]string{"tree": tree}, nil },
			Run: func(context.Context, io.Writer) (Result, error) {
				ran++
				tree = "applied"
				return Result{}, nil
			},
		},
		{Name: "audit", Run: func(context.Context, io.Writer) (Result, error) { return Result{}, nil }},
	}
	opts := newOpts(t)
	if have, want := outcomes(mustRun(t, stages, opts)), "apply=ran audit=ran"; have != want {
		t.Fatalf("first run: have %s, want %s", have, want)
	}
	if have, want := outcomes(mustRun(t, stages, opts)), "apply=up-to-date audit=up-to-date"; have != want {
		t.Fatalf("second run: have %s, want %s", have, want)
	}
	tree = "base" // unapplied behind the pipeline's back
	if have, want := outcomes(mustRun(t, stages, opts)), "apply=ran audit=ran"; have != want {
		t.Fatalf("after the state went back: have %s, want %s", have, want)
	}
	if ran != 2 {
		t.Errorf("apply ran %d times, want 2", ran)
	}

	// A state that cannot be read after the stage ran fails the stage: no stamp.
	broken := stages
	broken[0].State = func(context.Context) (map[string]string, error) {
		if ran == 3 {
			return nil, errors.New("the tree cannot be read")
		}
		return map[string]string{"tree": tree}, nil
	}
	tree = "edited"
	s := mustRun(t, broken, opts)
	if have, want := outcomes(s), "apply=failed audit=not-reached"; have != want || !strings.Contains(s.Stages[0].Reason, "cannot be read") {
		t.Fatalf("unreadable state after the stage: have %s (%q), want %s", have, s.Stages[0].Reason, want)
	}
}

// TestStampsOfAnotherCheckoutAreNotTrusted: the same key, the same stamp files, another
// checkout: every stage runs.
func TestStampsOfAnotherCheckoutAreNotTrusted(t *testing.T) {
	f := &fakeStages{inputs: map[string]string{}}
	opts := newOpts(t)
	mustRun(t, f.stages("apply", "verify"), opts)
	other := opts
	other.Checkout = "another checkout"
	if have, want := outcomes(mustRun(t, f.stages("apply", "verify"), other)), "apply=ran verify=ran"; have != want {
		t.Errorf("another checkout: have %s, want %s", have, want)
	}
}

// TestLogsAreNewFilesNeverFollowedLinks: a link planted at the name a log would take is
// left alone (the log takes another name), and what it points to is not written.
func TestLogsAreNewFilesNeverFollowedLinks(t *testing.T) {
	f := &fakeStages{inputs: map[string]string{}}
	opts := newOpts(t)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	opts.Now = func() time.Time { return at }
	if err := os.Symlink(victim, filepath.Join(opts.Logs.Path(), "apply-20250101T000000Z.log")); err != nil {
		t.Fatal(err)
	}
	s := mustRun(t, f.stages("apply"), opts)
	if have := s.Stages[0].Log; have != filepath.Join(opts.Logs.Path(), "apply-20250101T000000Z-2.log") {
		t.Errorf("log: have %s", have)
	}
	if data, err := os.ReadFile(victim); err != nil || string(data) != "mine\n" {
		t.Errorf("the link's target was written: %q, %v", data, err)
	}
}

// FuzzStampDecode: a stamp file is outside input. Whatever it holds, decoding neither
// panics nor accepts it without a MAC made with the key for this stage and checkout.
func FuzzStampDecode(f *testing.F) {
	store := &stampStore{key: []byte("0123456789abcdef0123456789abcdef"), checkout: "c"}
	good := stamp{Stage: "apply", Checkout: "c", Digest: "d", Inputs: map[string]string{"a": "b"}}
	good.MAC = store.mac(good)
	data, err := json.Marshal(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"stage":"apply","checkout":"c","digest":"d","mac":""}`))
	f.Add([]byte(`{"stage":"apply","unknown":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, ok := store.decode("apply", data)
		if !ok {
			return
		}
		if st.Stage != "apply" || st.Checkout != "c" || st.MAC != store.mac(st) {
			t.Fatalf("accepted a stamp that is not authentic: %+v", st)
		}
	})
}
