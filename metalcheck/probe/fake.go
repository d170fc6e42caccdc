package probe

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Point names one iteration of one worker.
type Point struct {
	Worker    int
	Iteration int
}

// CrossTalk makes the fake GPU write, when it runs Victim's dispatch, the value Writer's
// dispatch would have written into word Index of Victim's buffer: what a dispatch landing
// in the wrong buffer looks like to the check.
type CrossTalk struct {
	Victim, Writer Point
	Index          int
}

// FakeFaults are the faults a Fake injects. The zero value injects none.
type FakeFaults struct {
	// CrossTalk corrupts one word of one buffer.
	CrossTalk *CrossTalk
	// PanicAt panics (a Go panic, as a bug in a backend would) when that dispatch is encoded.
	PanicAt *Point
	// HangAt never completes that command buffer, so Wait blocks forever.
	HangAt *Point
	// DropHandlers never runs completed handlers.
	DropHandlers bool
	// DoubleHandlers runs every completed handler twice.
	DoubleHandlers bool
	// CompileErr, when set, is returned by every Compile.
	CompileErr error
	// Permissive turns off the misuse checks, like Metal without its validation layer:
	// negative controls then run to the end.
	Permissive bool
}

// assertionError is a misuse the Fake detected where Metal's validation layer would abort.
// It is only returned when Fake.OnAssertion is set; otherwise the Fake panics with Msg.
type assertionError struct{ Msg string }

func (e *assertionError) Error() string { return e.Msg }

// errFakeAbort is what the Fake panics with after writing an assertion message.
var errFakeAbort = errors.New("fake backend: aborting after a failed assertion")

// Fake is an in-memory Backend for tests and for running the probe's machinery where there
// is no Metal. Its "GPU" runs each committed command buffer on a goroutine, one at a time
// per queue, writes the kernel's values (kernelSource) into the buffers, then calls the
// completed handlers off the submitting thread, as Metal does. Like Metal's validation
// layer it checks the rules the probe's negative controls break and reports each breach
// with a message containing "failed assertion".
type Fake struct {
	Faults FakeFaults
	// OnAssertion, when set, sees each assertion message, and the call that breached the
	// rule returns an *assertionError. When nil the Fake writes the message on Stderr and
	// panics, ending the process the way a Metal assertion does.
	OnAssertion func(msg string)
	// Stderr receives assertion messages when OnAssertion is nil; nil means os.Stderr.
	Stderr io.Writer

	mu         sync.Mutex
	assertions []string
	live       atomic.Int64
	pools      atomic.Int64
}

// NewFake returns a Fake injecting faults.
func NewFake(faults FakeFaults) *Fake {
	return &Fake{Faults: faults}
}

// Assertions returns the assertion messages so far.
func (f *Fake) Assertions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.assertions...)
}

// Live counts objects created and not yet released; zero after a clean run.
func (f *Fake) Live() int64 { return f.live.Load() }

// openPools counts pools opened and not yet drained; zero after a clean run.
func (f *Fake) openPools() int64 { return f.pools.Load() }

func (f *Fake) assert(msg string) error {
	f.mu.Lock()
	f.assertions = append(f.assertions, msg)
	on := f.OnAssertion
	f.mu.Unlock()
	if on == nil {
		w := f.Stderr
		if w == nil {
			w = os.Stderr
		}
		fmt.Fprintln(w, msg)
		panic(errFakeAbort)
	}
	on(msg)
	return &assertionError{Msg: msg}
}

// Device implements Backend.
func (f *Fake) Device() (DeviceInfo, error) {
	return DeviceInfo{
		Backend:       "fake",
		Name:          "fake GPU (in memory; no Metal)",
		OS:            runtime.GOOS + "/" + runtime.GOARCH,
		UnifiedMemory: true,
	}, nil
}

// NewQueue implements Backend.
func (f *Fake) NewQueue() (Queue, error) {
	f.live.Add(1)
	return &fakeQueue{f: f}, nil
}

// NewBuffer implements Backend.
func (f *Fake) NewBuffer(words int) (Buffer, error) {
	if words < 1 {
		return nil, fmt.Errorf("fake: buffer of %d words", words)
	}
	f.live.Add(1)
	return &fakeBuffer{f: f, data: make([]uint32, words)}, nil
}

// Compile implements Backend. It finds the kernel function by name in the source, as
// newFunctionWithName: would.
func (f *Fake) Compile(source, function string) (Pipeline, error) {
	if f.Faults.CompileErr != nil {
		return nil, f.Faults.CompileErr
	}
	if !strings.Contains(source, "kernel void "+function+"(") {
		return nil, fmt.Errorf("fake: no kernel function %q in the source", function)
	}
	f.live.Add(1)
	return &fakePipeline{f: f}, nil
}

// Pool implements Backend.
func (f *Fake) Pool() func() {
	f.pools.Add(1)
	var once sync.Once
	return func() { once.Do(func() { f.pools.Add(-1) }) }
}

// Close implements Backend.
func (f *Fake) Close() error { return nil }

type fakePipeline struct {
	f   *Fake
	rel atomic.Bool
}

func (p *fakePipeline) Release() {
	if p.rel.CompareAndSwap(false, true) {
		p.f.live.Add(-1)
	}
}

type fakeQueue struct {
	f    *Fake
	exec sync.Mutex // the queue runs its command buffers one at a time
	rel  atomic.Bool
}

func (q *fakeQueue) Release() {
	if q.rel.CompareAndSwap(false, true) {
		q.f.live.Add(-1)
	}
}

func (q *fakeQueue) CommandBuffer() (CommandBuffer, error) {
	q.f.live.Add(1)
	return &fakeCB{q: q, done: make(chan struct{})}, nil
}

type fakeBuffer struct {
	f    *Fake
	mu   sync.Mutex
	data []uint32
	rel  atomic.Bool
}

func (b *fakeBuffer) Words() int { return len(b.data) }

func (b *fakeBuffer) Read(dst []uint32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	copy(dst, b.data)
}

func (b *fakeBuffer) Release() {
	if b.rel.CompareAndSwap(false, true) {
		b.f.live.Add(-1)
	}
}

type fakeDispatch struct {
	out    *fakeBuffer
	params Params
}

type fakeCB struct {
	q         *fakeQueue
	mu        sync.Mutex
	committed bool
	work      []fakeDispatch
	handlers  []func()
	done      chan struct{}
	rel       atomic.Bool
}

func (c *fakeCB) Release() {
	if c.rel.CompareAndSwap(false, true) {
		c.q.f.live.Add(-1)
	}
}

func (c *fakeCB) Dispatch(p Pipeline, out Buffer, params Params) error {
	f := c.q.f
	if pt := f.Faults.PanicAt; pt != nil && pt.Worker == int(params.Worker) && pt.Iteration == int(params.Iteration) {
		panic(fmt.Sprintf("fake backend: injected panic at worker %d iteration %d", pt.Worker, pt.Iteration))
	}
	fb, ok := out.(*fakeBuffer)
	if !ok {
		return fmt.Errorf("fake: dispatch into a %T, not a fake buffer", out)
	}
	if _, ok := p.(*fakePipeline); !ok {
		return fmt.Errorf("fake: dispatch of a %T, not a fake pipeline", p)
	}
	if int(params.Count) > fb.Words() {
		return fmt.Errorf("fake: dispatch of %d threads into a buffer of %d words", params.Count, fb.Words())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.committed && !f.Faults.Permissive {
		return f.assert("-[FakeCommandBuffer computeCommandEncoder]: failed assertion `encoding into a command buffer that was already committed'")
	}
	c.work = append(c.work, fakeDispatch{out: fb, params: params})
	return nil
}

func (c *fakeCB) AddCompletedHandler(fn func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.committed && !c.q.f.Faults.Permissive {
		return c.q.f.assert("-[FakeCommandBuffer addCompletedHandler:]: failed assertion `Completed handler provided after commit call'")
	}
	c.handlers = append(c.handlers, fn)
	return nil
}

func (c *fakeCB) Commit() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.committed {
		if c.q.f.Faults.Permissive {
			return nil
		}
		return c.q.f.assert("-[FakeCommandBuffer commit]: failed assertion `commit an already committed command buffer'")
	}
	c.committed = true
	work := append([]fakeDispatch(nil), c.work...)
	go c.execute(work)
	return nil
}

// execute is the fake GPU. Handlers are read when it finishes, so in Permissive mode a
// handler added after commit may or may not run, as on Metal without validation.
func (c *fakeCB) execute(work []fakeDispatch) {
	f := c.q.f
	c.q.exec.Lock()
	for _, d := range work {
		if pt := f.Faults.HangAt; pt != nil && pt.Worker == int(d.params.Worker) && pt.Iteration == int(d.params.Iteration) {
			c.q.exec.Unlock()
			// Never complete. A sleeping goroutine, unlike one blocked on a channel,
			// does not trip the runtime's deadlock detector: a GPU hang does not either.
			for {
				time.Sleep(time.Hour)
			}
		}
		d.out.mu.Lock()
		for i := uint32(0); i < d.params.Count; i++ {
			d.out.data[i] = expected(d.params.Worker, d.params.Iteration, i)
		}
		if ct := f.Faults.CrossTalk; ct != nil && ct.Victim.Worker == int(d.params.Worker) &&
			ct.Victim.Iteration == int(d.params.Iteration) && ct.Index >= 0 && ct.Index < int(d.params.Count) {
			d.out.data[ct.Index] = expected(uint32(ct.Writer.Worker), uint32(ct.Writer.Iteration), uint32(ct.Index))
		}
		d.out.mu.Unlock()
	}
	c.q.exec.Unlock()
	close(c.done)
	c.mu.Lock()
	handlers := append([]func(){}, c.handlers...)
	c.mu.Unlock()
	if f.Faults.DropHandlers {
		return
	}
	for _, h := range handlers {
		h()
		if f.Faults.DoubleHandlers {
			h()
		}
	}
}

func (c *fakeCB) Wait() error {
	c.mu.Lock()
	committed := c.committed
	c.mu.Unlock()
	if !committed {
		if c.q.f.Faults.Permissive {
			return errors.New("fake: wait on a command buffer that was never committed")
		}
		return c.q.f.assert("-[FakeCommandBuffer waitUntilCompleted]: failed assertion `waitUntilCompleted on uncommitted command buffer'")
	}
	<-c.done
	return nil
}
