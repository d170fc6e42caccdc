package streammodel

import (
	"errors"
	"fmt"
)

// EventReuse is what the event pool does to a pooled event it hands out again.
type EventReuse int

const (
	// MonotonicCounter is SPEC item 5: the signal counter of an event only grows for the
	// life of its MTLSharedEvent, so every wait and query of a new acquisition compares
	// against a value no earlier signal can reach.
	MonotonicCounter EventReuse = iota
	// ResetCounterOnReuse is MPSEvent::reset() as 0010/0013 leave it (broken): the
	// counter and signaledValue are set back to zero, so the new acquisition's first
	// record uses value 1 again and an old signal of 1 satisfies it.
	ResetCounterOnReuse
)

func (r EventReuse) String() string {
	return [...]string{"monotonic-counter", "reset-counter-on-reuse"}[r]
}

// EventLookup is how the pool reports an event id it does not know.
type EventLookup int

const (
	// UnlockBeforeError releases the pool mutex before reporting the error (SPEC item 5:
	// nothing throws while the pool mutex is held without releasing it).
	UnlockBeforeError EventLookup = iota
	// ErrorUnderPoolMutex is getInUseEvent as the issue found it (broken): it throws with
	// the pool mutex taken by hand, so the mutex is never released and every later event
	// call blocks.
	ErrorUnderPoolMutex
)

func (l EventLookup) String() string {
	return [...]string{"unlock-before-error", "error-under-pool-mutex"}[l]
}

// An Event is an MPSEvent: a pooled MTLSharedEvent and its signal counter.
type Event struct {
	ID      int
	shared  *SharedEvent
	counter uint64   // m_signalCounter
	signal  *Command // the signal this acquisition recorded last, for the checks
	stream  *Stream  // where it was recorded last
}

// An EventPool is MPSEventPool: events are acquired, recorded, waited for and released;
// released events are handed out again.
type EventPool struct {
	rt     *Runtime
	mu     *Mutex // m_mutex (a recursive mutex in v2.9.1)
	free   []*Event
	inUse  map[int]*Event
	nextID int
	reuse  EventReuse
	lookup EventLookup
}

// ErrUnknownEvent is the pool's answer to an id it did not hand out.
var ErrUnknownEvent = errors.New("event id not in use")

// NewEventPool makes an empty pool.
func NewEventPool(rt *Runtime, reuse EventReuse, lookup EventLookup) *EventPool {
	return &EventPool{rt: rt, mu: NewMutex("event pool mutex", true), inUse: map[int]*Event{}, reuse: reuse, lookup: lookup}
}

// Acquire is acquireEvent(): a pooled event if one is free, else a new one.
func (p *EventPool) Acquire(t *Thread) *Event {
	var e *Event
	p.mu.Lock(t)
	t.Do(func() {
		if n := len(p.free); n > 0 {
			e = p.free[n-1]
			p.free = p.free[:n-1]
			t.w.Count("event-reused")
			if p.reuse == ResetCounterOnReuse {
				e.counter = 0
				// signaledValue = 0: Metal ignores a smaller value, the event keeps its old one
				e.shared.raise(0)
			}
		} else {
			p.nextID++
			e = &Event{ID: p.nextID, shared: &SharedEvent{Name: fmt.Sprintf("event%d", p.nextID)}}
		}
		e.signal = nil
		p.inUse[e.ID] = e
	})
	p.mu.Unlock(t)
	return e
}

// Release is releaseEvent(): the event goes back to the pool, possibly with a signal
// still to land.
func (p *EventPool) Release(t *Thread, e *Event) {
	p.mu.Lock(t)
	t.Do(func() {
		delete(p.inUse, e.ID)
		p.free = append(p.free, e)
	})
	p.mu.Unlock(t)
}

// Lookup is getInUseEvent(id).
func (p *EventPool) Lookup(t *Thread, id int) (*Event, error) {
	var e *Event
	p.mu.Lock(t)
	t.Do(func() { e = p.inUse[id] })
	if e == nil {
		if p.lookup == ErrorUnderPoolMutex {
			return nil, fmt.Errorf("event %d: %w", id, ErrUnknownEvent)
		}
		p.mu.Unlock(t)
		return nil, fmt.Errorf("event %d: %w", id, ErrUnknownEvent)
	}
	p.mu.Unlock(t)
	return e, nil
}

// Record is MPSEvent::recordOn(stream, syncEvent=true) (torch.mps.Event.record()): on the
// stream's queue and under its lock, bump the counter, encode a signal of the new value,
// and commit.
func (p *EventPool) Record(t *Thread, e *Event, s *Stream) {
	rt := p.rt
	rt.DispatchSync(t, s, func() {
		s.Mu.Lock(t)
		t.Do(func() {
			e.counter++
			sig := &Command{kind: cmdSignal, event: e.shared, value: e.counter}
			_ = rt.encodeLocked(t, s, []*Command{sig}) // a signal uses no buffer: never refused
			e.signal, e.stream = sig, s
			rt.commitLocked(t, s)
		})
		s.Mu.Unlock(t)
	})
}

// WaitOn is MPSEvent::waitOn(stream) (torch.mps.Event.wait()): the waiting stream encodes
// a wait for the value this acquisition recorded, unless it was never recorded or the
// event already shows it.
func (p *EventPool) WaitOn(t *Thread, e *Event, s *Stream) {
	rt := p.rt
	rt.DispatchSync(t, s, func() {
		s.Mu.Lock(t)
		t.Do(func() {
			v := e.counter
			if v == 0 {
				return
			}
			if e.shared.value < v {
				_ = rt.encodeLocked(t, s, []*Command{{kind: cmdWait, event: e.shared, value: v}})
			}
			if rt.tracker != nil && e.stream != nil && e.signal != nil {
				rt.tracker.waitedFor(s, e.stream, e.signal.serial)
			}
		})
		s.Mu.Unlock(t)
	})
}

// Query is MPSEvent::query(): whether the event shows the value this acquisition recorded.
// Reporting true before this acquisition's own signal ran is a violation.
func (p *EventPool) Query(t *Thread, e *Event) bool {
	done := false
	t.Do(func() {
		done = e.shared.value >= e.counter
		if done && e.signal != nil && !e.signal.done {
			t.w.Violatef("%s: event %d's query() is true before this acquisition's signal (%s on stream %d) ran: an earlier signal satisfied it",
				t.Name, e.ID, e.signal.describe(), e.signal.stream)
		}
	})
	return done
}

// Synchronize is MPSEvent::synchronize(): the CPU waits until the event shows the value
// this acquisition recorded. Returning before this acquisition's signal ran is a violation.
func (p *EventPool) Synchronize(t *Thread, e *Event) {
	var v uint64
	var sig *Command
	t.Do(func() { v, sig = e.counter, e.signal })
	t.await(fmt.Sprintf("synchronize event %d", e.ID), func() bool { return e.shared.value >= v }, func() {
		if sig != nil && !sig.done {
			t.w.Violatef("%s: event %d's synchronize() returned before this acquisition's signal (%s on stream %d) ran: an earlier signal satisfied it",
				t.Name, e.ID, sig.describe(), sig.stream)
		}
	})
}
