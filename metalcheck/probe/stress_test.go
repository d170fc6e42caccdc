package probe

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// runFake runs s in process against a Fake whose assertions are recorded instead of
// ending the process, and returns the child error, the events and the fake.
func runFake(t *testing.T, s Scenario, faults FakeFaults) (error, []Event, *Fake) {
	t.Helper()
	f := NewFake(faults)
	f.OnAssertion = func(string) {}
	var out bytes.Buffer
	err := RunChild(context.Background(), f, s, NewEmitter(&out))
	var events []Event
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		e, perr := parseLine([]byte(line))
		if perr != nil {
			t.Fatalf("child wrote a line the parent cannot read: %v: %q", perr, line)
		}
		events = append(events, e)
	}
	return err, events, f
}

func workersOf(events []Event) map[int]WorkerResult {
	m := map[int]WorkerResult{}
	for _, e := range events {
		if e.Type == EventWorker {
			m[e.Worker.Worker] = *e.Worker
		}
	}
	return m
}

func countTypes(events []Event) map[string]int {
	m := map[string]int{}
	for _, e := range events {
		m[e.Type]++
	}
	return m
}

func TestStressCleanRuns(t *testing.T) {
	for _, threads := range []int{1, 4, 16} {
		for _, q := range []QueueMode{QueuesPerThread, QueuesShared} {
			s := Scenario{Kind: KindStress, Threads: threads, Iterations: 5, Queues: q, Words: 257}
			t.Run(s.Slug(), func(t *testing.T) {
				err, events, f := runFake(t, s, FakeFaults{})
				if err != nil {
					t.Fatalf("have %v, want a passing run", err)
				}
				have := countTypes(events)
				want := map[string]int{EventHello: 1, EventDevice: 1, EventReady: threads, EventGo: 1,
					EventIter: threads * 5, EventWorker: threads, EventResult: 1}
				for k, n := range want {
					if have[k] != n {
						t.Errorf("have %d %s events, want %d", have[k], k, n)
					}
				}
				if events[0].Type != EventHello || events[len(events)-1].Type != EventResult {
					t.Errorf("have first %s last %s, want hello ... result", events[0].Type, events[len(events)-1].Type)
				}
				for w, r := range workersOf(events) {
					if !r.ok(5) {
						t.Errorf("worker %d: %+v", w, r)
					}
				}
				if f.Live() != 0 || f.openPools() != 0 {
					t.Errorf("have %d live objects and %d open pools after the run, want 0 and 0", f.Live(), f.openPools())
				}
				if a := f.Assertions(); len(a) != 0 {
					t.Errorf("have assertions %q in a correct run", a)
				}
			})
		}
	}
}

func TestStressDetectsFaults(t *testing.T) {
	s := Scenario{Kind: KindStress, Threads: 3, Iterations: 4, Queues: QueuesPerThread, Words: 32}
	oldGrace := handlerGrace
	handlerGrace = 50 * time.Millisecond
	t.Cleanup(func() { handlerGrace = oldGrace })
	tests := []struct {
		name   string
		faults FakeFaults
		worker int
		check  func(t *testing.T, r WorkerResult)
	}{
		{
			name:   "cross-talk names the writer",
			faults: FakeFaults{CrossTalk: &CrossTalk{Victim: Point{2, 1}, Writer: Point{0, 3}, Index: 9}},
			worker: 2,
			check: func(t *testing.T, r WorkerResult) {
				want := Mismatch{Iteration: 1, Index: 9, Have: expected(0, 3, 9), Want: expected(2, 1, 9), Wrong: 1,
					WrittenBy: &Origin{Worker: 0, Iteration: 3}}
				if r.Mismatch == nil || *r.Mismatch.WrittenBy != *want.WrittenBy || r.Mismatch.Index != want.Index ||
					r.Mismatch.Have != want.Have || r.Mismatch.Want != want.Want || r.Mismatch.Wrong != 1 || r.Mismatch.Iteration != 1 {
					t.Errorf("have mismatch %+v, want %+v", r.Mismatch, want)
				}
				if r.Iterations != 2 {
					t.Errorf("have %d iterations, want the worker to stop after the bad one (2)", r.Iterations)
				}
			},
		},
		{
			name: "dropped handlers", faults: FakeFaults{DropHandlers: true}, worker: 0,
			check: func(t *testing.T, r WorkerResult) {
				if r.Handlers != 0 || len(r.HandlerFaults) != 4 || !strings.Contains(r.HandlerFaults[0], "never ran") {
					t.Errorf("have %d handlers, faults %q", r.Handlers, r.HandlerFaults)
				}
			},
		},
		{
			name: "doubled handlers", faults: FakeFaults{DoubleHandlers: true}, worker: 1,
			check: func(t *testing.T, r WorkerResult) {
				if len(r.HandlerFaults) != 4 || !strings.Contains(r.HandlerFaults[3], "iteration 3 ran 2 times") {
					t.Errorf("have faults %q", r.HandlerFaults)
				}
			},
		},
		{
			name: "compile error", faults: FakeFaults{CompileErr: errors.New("syntax error at line 3")}, worker: 2,
			check: func(t *testing.T, r WorkerResult) {
				if r.Error != "iteration 0: compile kernel: syntax error at line 3" || r.Iterations != 0 {
					t.Errorf("have error %q after %d iterations", r.Error, r.Iterations)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err, events, f := runFake(t, s, tt.faults)
			if !errors.Is(err, ErrChecksFailed) {
				t.Fatalf("have %v, want ErrChecksFailed", err)
			}
			res := events[len(events)-1].Result
			if res == nil || res.OK || len(res.Failures) == 0 {
				t.Fatalf("have result %+v, want a failing one", res)
			}
			tt.check(t, workersOf(events)[tt.worker])
			if f.Live() != 0 || f.openPools() != 0 {
				t.Errorf("have %d live objects and %d open pools after the run, want 0 and 0", f.Live(), f.openPools())
			}
		})
	}
}

func TestControls(t *testing.T) {
	tests := []struct {
		name           string
		scenario       Scenario
		permissive     bool
		wantAssertions string // must be in at least one assertion; empty: none at all
	}{
		{"handler after commit", afterCommit, false, "Completed handler provided after commit call"},
		{"shared command buffer", sharedCB, false, "failed assertion"},
		{"handler after commit, no validation", afterCommit, true, ""},
		{"shared command buffer, no validation", sharedCB, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err, events, f := runFake(t, tt.scenario, FakeFaults{Permissive: tt.permissive})
			// In process the fake's assertions return instead of aborting, so every
			// control gets as far as its result, which must say it was not aborted.
			if !errors.Is(err, ErrChecksFailed) {
				t.Fatalf("have %v, want ErrChecksFailed", err)
			}
			res := events[len(events)-1].Result
			if len(res.Failures) != 1 || !strings.Contains(res.Failures[0], "was not aborted by Metal") {
				t.Errorf("have failures %q", res.Failures)
			}
			a := f.Assertions()
			switch {
			case tt.wantAssertions == "" && len(a) != 0:
				t.Errorf("have assertions %q, want none", a)
			case tt.wantAssertions != "" && !strings.Contains(strings.Join(a, "\n"), tt.wantAssertions):
				t.Errorf("have assertions %q, want one containing %q", a, tt.wantAssertions)
			}
		})
	}
}

// TestFakeEnforcesOrdering checks the rules the fake shares with Metal's validation layer,
// one call sequence at a time.
func TestFakeEnforcesOrdering(t *testing.T) {
	tests := []struct {
		name string
		do   func(cb CommandBuffer, p Pipeline, b Buffer) error
		want string // empty: no assertion
	}{
		{"handler before commit", func(cb CommandBuffer, p Pipeline, b Buffer) error {
			return errors.Join(cb.Dispatch(p, b, Params{Count: 4}), cb.AddCompletedHandler(func() {}), cb.Commit(), cb.Wait())
		}, ""},
		{"handler after commit", func(cb CommandBuffer, p Pipeline, b Buffer) error {
			return errors.Join(cb.Commit(), cb.AddCompletedHandler(func() {}))
		}, "Completed handler provided after commit call"},
		{"encode after commit", func(cb CommandBuffer, p Pipeline, b Buffer) error {
			return errors.Join(cb.Commit(), cb.Dispatch(p, b, Params{Count: 4}))
		}, "already committed"},
		{"commit twice", func(cb CommandBuffer, p Pipeline, b Buffer) error {
			return errors.Join(cb.Commit(), cb.Commit())
		}, "commit an already committed command buffer"},
		{"wait before commit", func(cb CommandBuffer, p Pipeline, b Buffer) error {
			return cb.Wait()
		}, "waitUntilCompleted on uncommitted command buffer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var msgs []string
			f := NewFake(FakeFaults{})
			f.OnAssertion = func(m string) { msgs = append(msgs, m) }
			q, _ := f.NewQueue()
			cb, _ := q.CommandBuffer()
			p, _ := f.Compile(kernelSource, kernelName)
			b, _ := f.NewBuffer(4)
			err := tt.do(cb, p, b)
			var ae *assertionError
			if tt.want == "" {
				if err != nil || len(msgs) != 0 {
					t.Errorf("have %v and assertions %q, want neither", err, msgs)
				}
				return
			}
			if !errors.As(err, &ae) || !strings.Contains(ae.Msg, tt.want) || !strings.Contains(ae.Msg, "failed assertion") {
				t.Errorf("have %v, want an assertion containing %q", err, tt.want)
			}
			if len(msgs) != 1 {
				t.Errorf("have %d assertion callbacks, want 1", len(msgs))
			}
		})
	}
}

func TestFakeAssertionPanicsByDefault(t *testing.T) {
	var stderr bytes.Buffer
	f := NewFake(FakeFaults{})
	f.Stderr = &stderr
	q, _ := f.NewQueue()
	cb, _ := q.CommandBuffer()
	_ = cb.Commit()
	defer func() {
		if r := recover(); r != errFakeAbort {
			t.Errorf("have panic %v, want %v", r, errFakeAbort)
		}
		if want := "-[FakeCommandBuffer addCompletedHandler:]: failed assertion `Completed handler provided after commit call'\n"; stderr.String() != want {
			t.Errorf("have stderr %q, want %q", stderr.String(), want)
		}
	}()
	_ = cb.AddCompletedHandler(func() {})
	t.Errorf("AddCompletedHandler after commit returned; want a panic")
}

func TestFakeCompileFindsTheFunction(t *testing.T) {
	f := NewFake(FakeFaults{})
	if _, err := f.Compile(kernelSource, "no_such_kernel"); err == nil || !strings.Contains(err.Error(), `"no_such_kernel"`) {
		t.Errorf("have %v, want an error naming the missing function", err)
	}
}

func TestEmitterLinesDoNotInterleave(t *testing.T) {
	var out bytes.Buffer
	em := NewEmitter(&out)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				em.Emit(Event{Type: EventIter, W: w, I: i})
			}
		}()
	}
	wg.Wait()
	log := &EventLog{}
	log.Write(out.Bytes())
	log.Close()
	noise, bad := log.Noise()
	if n := len(log.Events()); n != 1600 || len(noise)+len(bad) != 0 || log.Torn() != "" {
		t.Errorf("have %d events, noise %q, malformed %q; want 1600 clean lines", n, noise, bad)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestEmitterKeepsFirstError(t *testing.T) {
	em := NewEmitter(failingWriter{})
	em.Emit(Event{Type: EventGo})
	em.Emit(Event{Type: EventGo})
	if err := em.Err(); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("have %v, want the write error", err)
	}
	err := RunChild(context.Background(), NewFake(FakeFaults{}), Scenario{Kind: KindInfo}, em)
	if err == nil || errors.Is(err, ErrChecksFailed) {
		t.Errorf("have %v, want the write error from RunChild", err)
	}
}
