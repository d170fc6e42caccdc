package streammodel

// A Mutex of the model: a std::mutex, a std::recursive_mutex, or a serial dispatch queue
// entered with dispatch_sync (non-recursive: entering a queue the thread is already on
// blocks for ever, as GCD's dispatch_sync onto the current queue does).
type Mutex struct {
	Name      string
	recursive bool
	owner     *Thread
	depth     int
	lockLabel string
	tryLabel  string
}

// NewMutex makes a mutex. recursive lets its holder take it again.
func NewMutex(name string, recursive bool) *Mutex {
	return &Mutex{Name: name, recursive: recursive, lockLabel: "lock " + name, tryLabel: "trylock " + name}
}

func (m *Mutex) free(t *Thread) bool {
	return m.owner == nil || (m.recursive && m.owner == t)
}

func (m *Mutex) acquire(t *Thread) {
	if m.owner == nil {
		t.held = append(t.held, m)
	}
	m.owner = t
	m.depth++
	t.LocksTaken++
}

// Lock blocks until the mutex is free (or, recursive, held by t) and takes it.
func (m *Mutex) Lock(t *Thread) {
	t.Do(func() { t.waitingOn = m })
	t.await(m.lockLabel, func() bool { return m.free(t) }, func() {
		t.waitingOn = nil
		m.acquire(t)
	})
}

// TryLock takes the mutex if it is free now and reports whether it did; it never blocks.
func (m *Mutex) TryLock(t *Thread) bool {
	ok := false
	t.await(m.tryLabel, always, func() {
		if m.free(t) {
			m.acquire(t)
			ok = true
		}
	})
	return ok
}

// Unlock releases one level of the mutex. Releasing a mutex t does not hold is a
// violation.
func (m *Mutex) Unlock(t *Thread) {
	t.Do(func() {
		if m.owner != t {
			t.w.Violatef("%s unlocks %s, which it does not hold", t.Name, m.Name)
			return
		}
		m.depth--
		if m.depth == 0 {
			m.owner = nil
			for i, h := range t.held {
				if h == m {
					t.held = append(t.held[:i], t.held[i+1:]...)
					break
				}
			}
		}
	})
}

// HeldBy reports whether t holds the mutex. Call it inside an action or from t itself.
func (m *Mutex) HeldBy(t *Thread) bool { return m.owner == t }

// A Chan is an unbounded FIFO between model threads: Python's queue.Queue handing a
// tensor from a producer thread to a consumer thread.
type Chan[T any] struct {
	label string
	items []T
}

// NewChan makes an empty channel.
func NewChan[T any](name string) *Chan[T] { return &Chan[T]{label: "get " + name} }

// Put appends v; it never blocks.
func (c *Chan[T]) Put(t *Thread, v T) {
	t.Do(func() { c.items = append(c.items, v) })
}

// Get blocks until an item is there and takes the oldest.
func (c *Chan[T]) Get(t *Thread) T {
	var v T
	t.await(c.label, func() bool { return len(c.items) > 0 }, func() {
		v = c.items[0]
		c.items = c.items[1:]
	})
	return v
}

// A Latch opens once and stays open: a test's way to order two threads without time.
type Latch struct {
	name string
	open bool
}

// NewLatch makes a closed latch.
func NewLatch(name string) *Latch { return &Latch{name: name} }

// Open opens the latch.
func (l *Latch) Open(t *Thread) { t.Do(func() { l.open = true }) }

// Wait blocks until the latch is open.
func (l *Latch) Wait(t *Thread) {
	t.await("wait "+l.name, func() bool { return l.open }, nothing)
}

// A Barrier lets n threads go on once all n have arrived.
type Barrier struct {
	name    string
	n       int
	arrived int
}

// NewBarrier makes a barrier for n threads.
func NewBarrier(name string, n int) *Barrier { return &Barrier{name: name, n: n} }

// Arrive counts t in and blocks until all n have arrived.
func (b *Barrier) Arrive(t *Thread) {
	t.Do(func() { b.arrived++ })
	t.await("barrier "+b.name, func() bool { return b.arrived >= b.n }, nothing)
}

// A SharedVar is a plain (non-atomic) field that several threads mutate. Every access goes
// through Add, which runs the lockset check of Eraser (Savage et al., 1997): the set of
// mutexes held at every access so far must not become empty. A counter bumped under two
// different per-stream locks fails it on the second stream's access, in every schedule.
type SharedVar struct {
	Name       string
	Value      uint64
	touched    bool
	candidates []*Mutex
	reported   bool
}

// Add adds d under the locks t holds now and returns the new value.
func (v *SharedVar) Add(t *Thread, d uint64) uint64 {
	var out uint64
	t.Do(func() {
		if !v.touched {
			v.touched = true
			v.candidates = append([]*Mutex(nil), t.held...)
		} else {
			kept := v.candidates[:0]
			for _, c := range v.candidates {
				for _, h := range t.held {
					if h == c {
						kept = append(kept, c)
						break
					}
				}
			}
			v.candidates = kept
		}
		if len(v.candidates) == 0 && !v.reported {
			v.reported = true
			t.w.Violatef("data race on %s: %s changes it under %s, and no one lock guards every access",
				v.Name, t.Name, heldNames(t))
		}
		v.Value += d
		out = v.Value
	})
	return out
}

func heldNames(t *Thread) string {
	if len(t.held) == 0 {
		return "no lock"
	}
	s := ""
	for i, m := range t.held {
		if i > 0 {
			s += ", "
		}
		s += m.Name
	}
	return s
}
