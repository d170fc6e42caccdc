package streammodel

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Mode says who decides the interleaving of a World's threads.
type Mode int

const (
	// Controlled runs one model thread at a time. Before every scheduling point a thread
	// parks, and a chooser (exhaustive search, a seed, or a replayed schedule) picks which
	// enabled thread goes next, so a run is a pure function of its choices and a state in
	// which no thread can go on is seen exactly, as a deadlock, with no timeout.
	Controlled Mode = iota
	// Concurrent runs every model thread, and the GPU, as free goroutines: the GPU completes
	// command buffers on its own goroutine whenever the Go scheduler lets it. Every step takes
	// one world lock, so the model's bookkeeping is race-free under `go test -race` and a
	// state in which every goroutine waits is still detected exactly. Outcomes of a correct
	// protocol are the same in every run; which broken interleavings show up is up to chance,
	// so broken variants are only ever asserted under Controlled.
	Concurrent
)

func (m Mode) String() string {
	if m == Concurrent {
		return "concurrent"
	}
	return "controlled"
}

// abortRun unwinds a model thread whose run has ended (deadlock, violation, step limit).
type abortRun struct{}

type threadState int

const (
	stateNew threadState = iota
	stateWaiting
	stateRunning
	stateDone
)

// A World is one run of a model: its threads, its GPU, and what the run observed.
// Scenario code builds it (NewRuntime, Go); Explore, Replay and RunConcurrent run it.
type World struct {
	mode    Mode
	threads []*Thread
	liveCPU int // threads that are not daemons and have not returned

	// Controlled.
	parked     chan *Thread  // a thread parks here before the run and while it unwinds
	finished   chan struct{} // the last thread to stop says the run is over
	started    bool
	ending     bool
	chooser    chooser
	cpuBlocked bool // no non-daemon thread is enabled (computed before daemons' guards)
	stepLimit  int
	steps      int
	trace      []traceEntry
	cur        *Thread

	// Concurrent: every step runs under mu; waiters sleep on cond.
	mu      sync.Mutex
	cond    *sync.Cond
	rng     *rand.Rand
	aborted bool

	violations []string
	deadlock   []string
	counts     map[string]int
}

type traceEntry struct {
	thread *Thread
	label  string
}

func newWorld(mode Mode, ch chooser, seed uint64) *World {
	w := &World{mode: mode, chooser: ch, stepLimit: defaultStepLimit, counts: map[string]int{}}
	w.cond = sync.NewCond(&w.mu)
	w.parked = make(chan *Thread)
	w.finished = make(chan struct{})
	w.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return w
}

// defaultStepLimit bounds a run: a model that loops for ever is reported, not hung on.
const defaultStepLimit = 20000

// Mode reports how the world is run.
func (w *World) Mode() Mode { return w.mode }

// A Thread is one CPU thread of the model (a Python thread calling into PyTorch), or a
// daemon such as the GPU. Its function runs on a goroutine of its own in both modes.
type Thread struct {
	w      *World
	ID     int
	Name   string
	daemon bool
	fn     func(*Thread)

	resume chan bool
	state  threadState
	label  string
	guard  func() bool

	waitingOn *Mutex   // the mutex a blocked Lock waits for, for deadlock reports
	held      []*Mutex // mutexes held, in the order taken
	// LocksTaken counts every mutex acquisition (TryLock included) by this thread.
	LocksTaken int
}

// Go adds a model thread. It must be called while the scenario builds the world, before
// the run starts.
func (w *World) Go(name string, fn func(*Thread)) *Thread {
	return w.spawn(name, false, fn)
}

func (w *World) spawn(name string, daemon bool, fn func(*Thread)) *Thread {
	t := &Thread{w: w, ID: len(w.threads), Name: name, daemon: daemon, fn: fn, resume: make(chan bool)}
	w.threads = append(w.threads, t)
	if !daemon {
		w.liveCPU++
	}
	return t
}

func always() bool { return true }
func nothing()     {}

// Yield is a scheduling point that changes nothing: under Controlled another thread may
// run here.
func (t *Thread) Yield(label string) { t.await(label, always, nothing) }

// await blocks until guard holds, then runs action atomically: no other model thread runs
// between the guard holding and the action ending. It is the one blocking primitive; every
// lock, wait and channel of the model is built from it. Under Controlled it is also a
// scheduling point.
func (t *Thread) await(label string, guard func() bool, action func()) {
	w := t.w
	if w.mode == Concurrent {
		w.mu.Lock()
		t.label, t.guard = label, guard
		for !w.aborted && !guard() {
			t.state = stateWaiting
			if w.allStuckLocked() {
				w.deadlockLocked()
			} else {
				w.cond.Wait()
			}
		}
		t.state = stateRunning
		t.guard = nil
		w.actLocked(action)
		return
	}
	t.label, t.guard = label, guard
	t.state = stateWaiting
	if !t.park() {
		panic(abortRun{})
	}
	// This thread was picked because guard held, and nothing has run since.
	t.state = stateRunning
	t.guard = nil
	action()
}

// park hands control to the next thread the chooser picks and returns when this thread is
// picked again: true to go on, false when the run is over and the thread must unwind.
// The scheduler has no goroutine of its own: the thread that parks picks the next one,
// so a thread that simply goes on costs no goroutine switch.
func (t *Thread) park() bool {
	w := t.w
	if !w.started || w.ending {
		w.parked <- t
		return <-t.resume
	}
	switch next := w.pick(); next {
	case t:
		return true
	case nil:
		w.finished <- struct{}{}
	default:
		next.resume <- true
	}
	return <-t.resume
}

// Do runs action atomically without being a scheduling point: for releases and
// bookkeeping whose place among other threads' steps does not matter.
func (t *Thread) Do(action func()) {
	w := t.w
	if w.mode == Concurrent {
		w.mu.Lock()
		w.actLocked(action)
		return
	}
	action()
}

// actLocked runs an action with mu held (Concurrent) and releases mu even when the action
// panics, so that the panic can be recorded as a violation.
func (w *World) actLocked(action func()) {
	defer func() {
		w.cond.Broadcast()
		w.mu.Unlock()
	}()
	if w.aborted {
		panic(abortRun{})
	}
	action()
}

// Choose picks one of n alternatives (0..n-1). It may only be called inside an action
// (of await or Do): under Controlled the chooser decides, under Concurrent a seeded
// generator does.
func (t *Thread) Choose(n int) int {
	if n <= 1 {
		return 0
	}
	if t.w.mode == Concurrent {
		return t.w.rng.IntN(n)
	}
	return t.w.chooser.choose(n, false)
}

// Violatef records a broken invariant. It may only be called inside an action. The run
// stops at the next scheduling point.
func (w *World) Violatef(format string, args ...any) {
	w.violations = append(w.violations, fmt.Sprintf(format, args...))
	if w.mode == Concurrent {
		w.aborted = true
	}
}

// Fail records a broken invariant found in thread code, outside any action.
func (t *Thread) Fail(format string, args ...any) {
	t.Do(func() { t.w.Violatef(format, args...) })
}

// Count adds to a named counter of the run (an observation, not a failure): tests read it
// from the Outcome to show that a scenario reached the state it is about.
func (w *World) Count(name string) { w.counts[name]++ }

// Note counts an observation from thread code, outside any action.
func (t *Thread) Note(name string) { t.Do(func() { t.w.Count(name) }) }

// CPUBlocked reports, inside a daemon's guard under Controlled, whether no non-daemon
// thread could take a step now. The GPU's adversarial policy uses it to run a starved
// stream only as a last resort.
func (w *World) CPUBlocked() bool { return w.cpuBlocked }

func (t *Thread) main() {
	w := t.w
	defer func() {
		r := recover()
		if r != nil {
			if _, ok := r.(abortRun); !ok {
				buf := make([]byte, 4096)
				buf = buf[:runtime.Stack(buf, false)]
				msg := fmt.Sprintf("model thread %s panicked: %v\n%s", t.Name, r, buf)
				if w.mode == Concurrent {
					w.mu.Lock()
					w.Violatef("%s", msg)
					w.mu.Unlock()
				} else {
					w.Violatef("%s", msg)
				}
			}
		}
		t.exit()
	}()
	t.await("start", always, nothing)
	t.fn(t)
}

func (t *Thread) exit() {
	w := t.w
	if w.mode == Concurrent {
		w.mu.Lock()
		t.state = stateDone
		if !t.daemon {
			w.liveCPU--
		}
		if !w.aborted && w.allStuckLocked() {
			w.deadlockLocked()
		}
		w.cond.Broadcast()
		w.mu.Unlock()
		return
	}
	t.state = stateDone
	if !t.daemon {
		w.liveCPU--
	}
	if w.ending {
		w.parked <- t
		return
	}
	if next := w.pick(); next != nil {
		next.resume <- true
	} else {
		w.finished <- struct{}{}
	}
}

// allStuckLocked: every thread has returned or waits with a guard that is false. Called
// with mu held, so no guard can change while it looks.
func (w *World) allStuckLocked() bool {
	if w.liveCPU == 0 {
		return false // only daemons are left; they end by themselves
	}
	for _, t := range w.threads {
		switch t.state {
		case stateDone:
		case stateWaiting:
			if t.guard == nil || t.guard() {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (w *World) deadlockLocked() {
	w.deadlock = w.describeBlocked()
	w.aborted = true
	w.cond.Broadcast()
}

func (w *World) describeBlocked() []string {
	var out []string
	for _, t := range w.threads {
		if t.state == stateDone || t.daemon {
			continue
		}
		d := t.Name + ": " + t.label
		if m := t.waitingOn; m != nil && m.owner != nil {
			d += " (held by " + m.owner.Name + ")"
		}
		out = append(out, d)
	}
	return out
}

// runControlled drives the world to its end under a chooser.
func (w *World) runControlled() {
	for _, t := range w.threads {
		go t.main()
		<-w.parked // parked at "start"
	}
	w.started = true
	if next := w.pick(); next != nil {
		next.resume <- true
		<-w.finished
	}
	if len(w.violations) == 0 && w.liveCPU > 0 {
		w.deadlock = w.describeBlocked()
	}
	// Unwind every thread still parked so that no goroutine outlives its run.
	w.ending = true
	for _, t := range w.threads {
		if t.state == stateWaiting {
			t.resume <- false
			<-w.parked
		}
	}
}

// pick chooses the thread to run next, or nil when the run is over (a violation, no
// thread enabled, or the step limit). It runs on the goroutine of the thread that parks.
func (w *World) pick() *Thread {
	if len(w.violations) > 0 {
		return nil
	}
	en := w.enabled()
	if len(en) == 0 {
		return nil
	}
	if w.steps >= w.stepLimit {
		w.Violatef("run exceeded %d steps (a model thread loops without end)", w.stepLimit)
		return nil
	}
	w.steps++
	i := 0
	if len(en) > 1 {
		i = w.chooser.choose(len(en), en[0] == w.cur)
	}
	t := en[i]
	w.cur = t
	w.trace = append(w.trace, traceEntry{t, t.label})
	return t
}

// enabled lists the threads whose guard holds, the last thread to run first (continuing it
// is not a preemption), then the others by ID.
func (w *World) enabled() []*Thread {
	var en []*Thread
	for _, t := range w.threads {
		if !t.daemon && t.state == stateWaiting && t.guard() {
			en = append(en, t)
		}
	}
	w.cpuBlocked = len(en) == 0
	for _, t := range w.threads {
		if t.daemon && t.state == stateWaiting && t.guard() {
			en = append(en, t)
		}
	}
	for i, t := range en {
		if t == w.cur && i > 0 {
			copy(en[1:i+1], en[:i])
			en[0] = t
			break
		}
	}
	return en
}

// runConcurrent runs every thread as a free goroutine and waits for all of them.
func (w *World) runConcurrent() {
	var wg sync.WaitGroup
	for _, t := range w.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.main()
		}()
	}
	wg.Wait()
}

// Outcome is what one run of a scenario observed.
type Outcome struct {
	// Violations are the broken invariants, in the order found (a run stops at the first).
	Violations []string
	// Deadlock lists what each blocked thread waited for, when the run ended with threads
	// that could never go on; empty otherwise.
	Deadlock []string
	// Counts are the scenario's observations (Count, Note).
	Counts map[string]int
	// Schedule is the list of choices that reproduces the run with Replay (Controlled).
	Schedule []int
	// Trace is the sequence of steps taken (Controlled): "thread: label".
	Trace []string
	Steps int
}

// Failed reports whether the run broke an invariant or deadlocked.
func (o Outcome) Failed() bool { return len(o.Violations) > 0 || len(o.Deadlock) > 0 }

func (o Outcome) String() string {
	var b strings.Builder
	switch {
	case len(o.Violations) > 0:
		fmt.Fprintf(&b, "violation: %s", strings.Join(o.Violations, "; "))
	case len(o.Deadlock) > 0:
		fmt.Fprintf(&b, "deadlock: %s", strings.Join(o.Deadlock, "; "))
	default:
		b.WriteString("ok")
	}
	if len(o.Counts) > 0 {
		keys := make([]string, 0, len(o.Counts))
		for k := range o.Counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(" [")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s=%d", k, o.Counts[k])
		}
		b.WriteString("]")
	}
	return b.String()
}

// TraceText is the run's steps, one a line, for a test failure message.
func (o Outcome) TraceText() string {
	return strings.Join(o.Trace, "\n")
}

func (w *World) outcome() Outcome {
	o := Outcome{
		Violations: w.violations,
		Deadlock:   w.deadlock,
		Counts:     w.counts,
		Steps:      w.steps,
	}
	if r, ok := w.chooser.(recorder); ok {
		o.Schedule = r.recorded()
	}
	for _, e := range w.trace {
		o.Trace = append(o.Trace, e.thread.Name+": "+e.label)
	}
	return o
}
