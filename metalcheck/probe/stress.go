package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// WorkerResult is what one worker thread of a stress scenario did.
type WorkerResult struct {
	Worker int `json:"worker"`
	// Iterations counts iterations whose buffer was waited for and checked.
	Iterations int `json:"iterations"`
	// Handlers counts completed handlers that ran (each at most once).
	Handlers int `json:"handlers"`
	// Mismatch is the first wrong buffer, if any; the worker stops there.
	Mismatch *Mismatch `json:"mismatch,omitempty"`
	// Error is the first backend error (compile, command buffer status), if any.
	Error string `json:"error,omitempty"`
	// HandlerFaults lists handlers that ran more than once or never.
	HandlerFaults []string `json:"handler_faults,omitempty"`
}

// ok says whether the worker finished every iteration cleanly.
func (r WorkerResult) ok(iterations int) bool {
	return r.Error == "" && r.Mismatch == nil && len(r.HandlerFaults) == 0 &&
		r.Iterations == iterations && r.Handlers == iterations
}

// Mismatch describes a buffer that did not hold what its worker's kernel wrote.
type Mismatch struct {
	Iteration int    `json:"iteration"`
	Index     int    `json:"index"`
	Have      uint32 `json:"have"`
	Want      uint32 `json:"want"`
	// Wrong is how many words of the buffer were wrong.
	Wrong int `json:"wrong"`
	// WrittenBy names the dispatch that wrote Have, when one of this run explains it:
	// another worker's means cross-talk, an earlier iteration of the same worker means
	// a stale read.
	WrittenBy *Origin `json:"written_by,omitempty"`
}

func (m Mismatch) String() string {
	s := fmt.Sprintf("iteration %d: %d words wrong, first at index %d: have %#08x, want %#08x",
		m.Iteration, m.Wrong, m.Index, m.Have, m.Want)
	if m.WrittenBy != nil {
		s += fmt.Sprintf(" (written by worker %d iteration %d)", m.WrittenBy.Worker, m.WrittenBy.Iteration)
	}
	return s
}

// handlerGrace is how long a worker waits, after its last iteration, for completed
// handlers still in flight. Metal runs them on its own threads and does not promise they
// have run when waitUntilCompleted returns.
var handlerGrace = 10 * time.Second

// whoWroteBudget bounds the search for the origin of a wrong value.
const whoWroteBudget = 1 << 20

// RunChild is the body of a probe child: it reports the device, runs s against b, and
// writes every step as an event to em, ending with a result event. It returns nil when
// the scenario passed, ErrChecksFailed when it ran and found problems, and another error
// when it could not run. A negative control that returns at all has failed: Metal should
// have aborted the process.
func RunChild(ctx context.Context, b Backend, s Scenario, em *Emitter) error {
	// Autorelease pools and Metal objects made here must be drained on the thread that
	// made them.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	em.Emit(Event{Type: EventHello, Scenario: s.spec(), PID: os.Getpid()})
	info, err := b.Device()
	if err != nil {
		err = fmt.Errorf("probe device: %w", err)
		em.Emit(Event{Type: EventError, Message: err.Error()})
		em.Emit(Event{Type: EventResult, Result: &Summary{OK: false, Failures: []string{err.Error()}}})
		return err
	}
	em.Emit(Event{Type: EventDevice, Device: &info})
	var failures []string
	switch s.Kind {
	case KindInfo:
	case KindStress:
		results, err := runStress(ctx, b, s, em)
		if err != nil {
			failures = append(failures, err.Error())
		}
		for _, r := range results {
			failures = append(failures, r.failures(s.Iterations)...)
		}
	case KindHandlerAfterCommit:
		failures = append(failures, controlHandlerAfterCommit(b, s)...)
	case KindSharedCommandBuffer:
		failures = append(failures, controlSharedCommandBuffer(ctx, b, s)...)
	default:
		failures = append(failures, fmt.Sprintf("unknown scenario kind %q", s.Kind))
	}
	sum := &Summary{OK: len(failures) == 0, ElapsedMS: time.Since(start).Milliseconds(), Failures: failures}
	em.Emit(Event{Type: EventResult, Result: sum})
	if err := em.Err(); err != nil {
		return err
	}
	if !sum.OK {
		return ErrChecksFailed
	}
	return nil
}

// ErrChecksFailed says a scenario ran to the end and found problems (listed in its result).
var ErrChecksFailed = errors.New("probe checks failed")

func (r WorkerResult) failures(iterations int) []string {
	var out []string
	pre := fmt.Sprintf("worker %d", r.Worker)
	if r.Error != "" {
		out = append(out, fmt.Sprintf("%s: %s", pre, r.Error))
	}
	if r.Mismatch != nil {
		out = append(out, fmt.Sprintf("%s: %s", pre, r.Mismatch))
	}
	for _, f := range r.HandlerFaults {
		out = append(out, fmt.Sprintf("%s: %s", pre, f))
	}
	if len(out) == 0 && !r.ok(iterations) {
		out = append(out, fmt.Sprintf("%s: finished %d of %d iterations, %d handlers ran",
			pre, r.Iterations, iterations, r.Handlers))
	}
	return out
}

// runStress runs s.Threads workers, each on its own locked OS thread, released together
// by a barrier once all have their queue and buffer. Each iteration compiles the kernel,
// encodes one dispatch into a fresh command buffer, adds a completed handler, commits,
// waits, and checks the whole buffer. The first problem of a worker ends that worker.
func runStress(ctx context.Context, b Backend, s Scenario, em *Emitter) ([]WorkerResult, error) {
	var shared Queue
	if s.Queues == QueuesShared {
		q, err := b.NewQueue()
		if err != nil {
			return nil, fmt.Errorf("create shared command queue: %w", err)
		}
		defer q.Release()
		shared = q
	}
	results := make([]WorkerResult, s.Threads)
	together(s.Threads, func(w int, line *startLine) {
		results[w] = stressWorker(ctx, b, s, w, shared, line, em)
		em.Emit(Event{Type: EventWorker, Worker: &results[w]})
	}, func() { em.Emit(Event{Type: EventGo}) })
	return results, nil
}

// startLine holds workers until every one of them is set up, then releases them at once,
// so that their first submissions really race.
type startLine struct {
	ready sync.WaitGroup
	start chan struct{}
}

// Ready says this worker is set up (or gave up).
func (l *startLine) Ready() { l.ready.Done() }

// Wait blocks until the release; false when ctx ended first.
func (l *startLine) Wait(ctx context.Context) bool {
	select {
	case <-l.start:
		return true
	case <-ctx.Done():
		return false
	}
}

// together runs fn for workers 0..n-1 on goroutines behind one start line: once all have
// called Ready, released() runs and they go. It returns when every worker has returned.
func together(n int, fn func(w int, line *startLine), released func()) {
	line := &startLine{start: make(chan struct{})}
	line.ready.Add(n)
	var done sync.WaitGroup
	done.Add(n)
	for w := range n {
		go func() {
			defer done.Done()
			fn(w, line)
		}()
	}
	line.ready.Wait()
	if released != nil {
		released()
	}
	close(line.start)
	done.Wait()
}

func stressWorker(ctx context.Context, b Backend, s Scenario, w int, shared Queue,
	line *startLine, em *Emitter) WorkerResult {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	res := WorkerResult{Worker: w}
	q, buf, err := workerSetup(b, s, shared)
	line.Ready()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	if shared == nil {
		defer q.Release()
	}
	defer buf.Release()
	em.Emit(Event{Type: EventReady, W: w})
	if !line.Wait(ctx) {
		res.Error = "interrupted before start"
		return res
	}

	calls := make([]atomic.Int32, s.Iterations)
	notify := make(chan struct{}, s.Iterations)
	added := 0
	scratch := make([]uint32, s.Words)
	for it := range s.Iterations {
		if ctx.Err() != nil {
			res.Error = fmt.Sprintf("interrupted at iteration %d", it)
			break
		}
		handler := func() {
			if calls[it].Add(1) == 1 {
				notify <- struct{}{}
			}
		}
		drain := b.Pool()
		ok, err := stressIteration(b, q, buf, Params{Worker: uint32(w), Iteration: uint32(it), Count: uint32(s.Words)}, handler)
		drain()
		if ok {
			added++
		}
		if err != nil {
			res.Error = fmt.Sprintf("iteration %d: %v", it, err)
			break
		}
		buf.Read(scratch)
		if m := check(scratch, w, it, s); m != nil {
			res.Mismatch = m
			res.Iterations++
			break
		}
		res.Iterations++
		em.Emit(Event{Type: EventIter, W: w, I: it})
	}

	// Wait for the handlers that are still in flight, then account for every one.
	timer := time.NewTimer(handlerGrace)
	defer timer.Stop()
wait:
	for got := 0; got < added; got++ {
		select {
		case <-notify:
		case <-timer.C:
			break wait
		}
	}
	for it := range added {
		switch n := calls[it].Load(); {
		case n == 1:
			res.Handlers++
		case n == 0:
			res.HandlerFaults = append(res.HandlerFaults,
				fmt.Sprintf("completed handler of iteration %d never ran (waited %s)", it, handlerGrace))
		default:
			res.Handlers++
			res.HandlerFaults = append(res.HandlerFaults,
				fmt.Sprintf("completed handler of iteration %d ran %d times", it, n))
		}
	}
	return res
}

func workerSetup(b Backend, s Scenario, shared Queue) (Queue, Buffer, error) {
	q := shared
	if q == nil {
		var err error
		if q, err = b.NewQueue(); err != nil {
			return nil, nil, fmt.Errorf("create command queue: %w", err)
		}
	}
	buf, err := b.NewBuffer(s.Words)
	if err != nil {
		if shared == nil {
			q.Release()
		}
		return nil, nil, fmt.Errorf("create buffer of %d words: %w", s.Words, err)
	}
	return q, buf, nil
}

// stressIteration does one submission. handlerAdded reports whether the completed handler
// was registered, so the caller knows to expect it.
func stressIteration(b Backend, q Queue, buf Buffer, p Params, handler func()) (handlerAdded bool, err error) {
	pl, err := b.Compile(kernelSource, kernelName)
	if err != nil {
		return false, fmt.Errorf("compile kernel: %w", err)
	}
	defer pl.Release()
	cb, err := q.CommandBuffer()
	if err != nil {
		return false, fmt.Errorf("create command buffer: %w", err)
	}
	defer cb.Release()
	if err := cb.Dispatch(pl, buf, p); err != nil {
		return false, fmt.Errorf("encode dispatch: %w", err)
	}
	if err := cb.AddCompletedHandler(handler); err != nil {
		return false, fmt.Errorf("add completed handler: %w", err)
	}
	if err := cb.Commit(); err != nil {
		return true, fmt.Errorf("commit: %w", err)
	}
	if err := cb.Wait(); err != nil {
		return true, fmt.Errorf("command buffer completed with error: %w", err)
	}
	return true, nil
}

// check compares a worker's buffer with what its kernel wrote in iteration it.
func check(data []uint32, w, it int, s Scenario) *Mismatch {
	var m *Mismatch
	for i, have := range data {
		want := expected(uint32(w), uint32(it), uint32(i))
		if have == want {
			continue
		}
		if m == nil {
			m = &Mismatch{Iteration: it, Index: i, Have: have, Want: want}
			span := max(whoWroteBudget/max(s.Threads, 1), 1)
			from, to := max(it-span/2, 0), min(it+span/2+1, s.Iterations)
			if o, ok := whoWrote(have, uint32(i), s.Threads, from, to); ok {
				m.WrittenBy = &o
			}
		}
		m.Wrong++
	}
	return m
}

// controlHandlerAfterCommit commits a command buffer and only then adds a completed
// handler. Metal aborts the process on the second call; if it returns, the control failed.
func controlHandlerAfterCommit(b Backend, s Scenario) []string {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	drain := b.Pool()
	defer drain()
	q, buf, err := workerSetup(b, s, nil)
	if err != nil {
		return []string{err.Error()}
	}
	defer q.Release()
	defer buf.Release()
	pl, err := b.Compile(kernelSource, kernelName)
	if err != nil {
		return []string{fmt.Sprintf("compile kernel: %v", err)}
	}
	defer pl.Release()
	cb, err := q.CommandBuffer()
	if err != nil {
		return []string{fmt.Sprintf("create command buffer: %v", err)}
	}
	defer cb.Release()
	if err := cb.Dispatch(pl, buf, Params{Count: uint32(s.Words)}); err != nil {
		return []string{fmt.Sprintf("encode dispatch: %v", err)}
	}
	if err := cb.Commit(); err != nil {
		return []string{fmt.Sprintf("commit: %v", err)}
	}
	// The misuse under test: Metal must abort here.
	herr := cb.AddCompletedHandler(func() {})
	werr := cb.Wait()
	return []string{controlSurvived(s, errors.Join(herr, werr))}
}

// controlSharedCommandBuffer releases s.Threads threads at once onto ONE command buffer;
// each encodes, adds a handler and commits as if the buffer were its own. Metal aborts the
// process (a second commit, or a handler or encoder after the first commit).
func controlSharedCommandBuffer(ctx context.Context, b Backend, s Scenario) []string {
	q, err := b.NewQueue()
	if err != nil {
		return []string{fmt.Sprintf("create command queue: %v", err)}
	}
	defer q.Release()
	drain := b.Pool()
	defer drain()
	cb, err := q.CommandBuffer()
	if err != nil {
		return []string{fmt.Sprintf("create command buffer: %v", err)}
	}
	defer cb.Release()
	pl, err := b.Compile(kernelSource, kernelName)
	if err != nil {
		return []string{fmt.Sprintf("compile kernel: %v", err)}
	}
	defer pl.Release()
	errs := make([]error, s.Threads)
	together(s.Threads, func(w int, line *startLine) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		buf, err := b.NewBuffer(s.Words)
		line.Ready()
		if err != nil {
			errs[w] = err
			return
		}
		defer buf.Release()
		if !line.Wait(ctx) {
			return
		}
		d := b.Pool()
		defer d()
		errs[w] = errors.Join(
			cb.Dispatch(pl, buf, Params{Worker: uint32(w), Count: uint32(s.Words)}),
			cb.AddCompletedHandler(func() {}),
			cb.Commit(),
			cb.Wait())
	}, nil)
	return []string{controlSurvived(s, errors.Join(errs...))}
}

func controlSurvived(s Scenario, err error) string {
	msg := fmt.Sprintf("negative control %q was not aborted by Metal, so this probe cannot show it would catch that misuse", s.Kind)
	if err != nil {
		msg += fmt.Sprintf(" (the backend returned: %v)", err)
	}
	return msg
}
