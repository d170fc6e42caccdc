package metalcheck

import (
	"github.com/mpspatch/mpspatch/metalcheck/internal/cxx"
	"slices"
	"strings"
)

// lockRef names a lock held at a call or at a mutation, as written there: the mutex (or
// the serial queue of a dispatch_sync block, the object of @synchronized, the flag of
// std::call_once) by its last name, its qualifier (C::m), the class of the function that
// takes it (to find a member mutex's declaration), and whether it is reached through
// another object or an element (pools[i].mutex, shard->mutex, stream->queue()): such a
// lock is one per object, whatever its declaration.
type lockRef struct {
	name, qual, class string
	via               bool
}

func (r lockRef) String() string {
	s := r.name
	if r.qual != "" {
		s = r.qual + "::" + s
	}
	if r.via {
		s += " of another object (a per-object or sharded lock)"
	}
	return s
}

// heldRefs returns the locks held at code token i of a function of class: lock
// statements still in force and region scopes (dispatch_sync blocks, @synchronized,
// call_once). A *Locked function's "the caller holds it" is not a lock it can name: the
// callers' own locks stand for it (callers.heldByCallers).
func (m *extractor) heldRefs(i int32, class string) []lockRef {
	var refs []lockRef
	var evBuf [4]cxx.LockEvent // (a few locks at most, mostly none: little to clear)
	evs := evBuf[:0]
	for s := m.ScopeOf(i); s >= 0; s = m.Scope(s).Parent() {
		sc := m.Scope(s)
		if sc.Region() != "" && sc.RegionKind() != "caller" {
			refs = append(refs, lockRef{name: sc.Region(), class: class, via: sc.RegionVia()})
		}
		for ev := range sc.Locks() {
			if ev.Pos < i {
				evs = append(evs, ev)
			}
		}
		if sc.Kind() == cxx.ScopeFunction {
			break
		}
	}
	slices.SortStableFunc(evs, func(a, b cxx.LockEvent) int { return int(a.Pos - b.Pos) })
	var heldBuf [4]cxx.LockEvent
	held := heldBuf[:0]
	for k, ev := range evs {
		if ev.Guard == "" {
			// guard.lock() / guard.unlock(): the mutex of the latest guard of that name.
			for j := k - 1; j >= 0; j-- {
				if evs[j].Guard == ev.Name {
					ev.Name, ev.Qual, ev.Via = evs[j].Name, evs[j].Qual, evs[j].Via
					break
				}
			}
		}
		if !ev.Release {
			held = append(held, ev)
			continue
		}
		for h := len(held) - 1; h >= 0; h-- {
			if held[h].Name == ev.Name {
				held = append(held[:h], held[h+1:]...)
				break
			}
		}
	}
	for _, ev := range held {
		refs = append(refs, lockRef{name: ev.Name, qual: ev.Qual, class: class, via: ev.Via})
	}
	return refs
}

// maxLockSets bounds the lock sets of one file (callSite.locks is an int16); the last one
// is an unknown lock, which the rules judge leniently, and stands for every set past it.
const maxLockSets = 1<<15 - 1

// lockSetAt returns the index in fx.lockSets of the locks held at code token i of
// function f, adding the set once per file; -1 when no lock is held.
func (m *extractor) lockSetAt(i int32, f *function, fx *facts) int16 {
	// Same scope, same lock statements before: the same set as the last call.
	events := int32(0)
	for s := m.ScopeOf(i); s >= 0; s = m.Scope(s).Parent() {
		for ev := range m.Scope(s).Locks() {
			if ev.Pos < i {
				events++
			}
		}
		if m.Scope(s).Kind() == cxx.ScopeFunction {
			break
		}
	}
	c := &m.lastLockSet
	if c.ok && c.scope == m.ScopeOf(i) && c.events == events {
		return c.set
	}
	set := m.lockSetOf(i, f, fx)
	c.scope, c.events, c.set, c.ok = m.ScopeOf(i), events, set, true
	return set
}

// lockSetOf is lockSetAt without the cache: the set is interned once per file, found by a
// scan when it holds one lock (the usual case: one lock, or one dispatch block), else by
// a string of them all. Past maxLockSets sets, a new one is an unknown lock.
func (m *extractor) lockSetOf(i int32, f *function, fx *facts) int16 {
	refs := m.heldRefs(i, f.Class())
	if len(refs) == 0 {
		return -1
	}
	var key string
	if len(refs) == 1 {
		// A file has a handful of sets: a scan costs less than hashing the key.
		for k, set := range fx.lockSets {
			if len(set) == 1 && set[0] == refs[0] {
				return int16(k)
			}
		}
	} else {
		var sb strings.Builder
		for _, r := range refs {
			sb.WriteString(r.name)
			sb.WriteByte(0)
			sb.WriteString(r.qual)
			sb.WriteByte(0)
			sb.WriteString(r.class)
			if r.via {
				sb.WriteByte(1)
			}
			sb.WriteByte(0)
		}
		key = sb.String()
		if k, ok := m.lockSetIdx[key]; ok {
			return k
		}
	}
	if len(fx.lockSets) >= maxLockSets-1 {
		if len(fx.lockSets) == maxLockSets-1 {
			fx.lockSets = append(fx.lockSets, []lockRef{{name: "?"}})
		}
		return maxLockSets - 1
	}
	k := int16(len(fx.lockSets))
	fx.lockSets = append(fx.lockSets, refs)
	if len(refs) > 1 {
		if m.lockSetIdx == nil {
			m.lockSetIdx = map[string]int16{}
		}
		m.lockSetIdx[key] = k
	}
	return k
}

// lockMemo is a function's callers' common locks: done once computed; top while being
// computed (a recursive call constrains nothing).
type lockMemo struct {
	locks []lockRef
	top   bool
}

// heldByCallers returns the locks that every call of the function (class, bare) in the
// audited files holds, at the call or because its own caller holds them, transitively:
// the locks the function body may count on. A function no audited code calls gets none.
// top reports that nothing constrains the answer (only recursive calls reach it).
func (c *callers) heldByCallers(class, bare string) (locks []lockRef, top bool) {
	q := callerQuery{class: class, bare: bare}
	if v, ok := c.lockMemo[q]; ok {
		return v.locks, v.top
	}
	c.lockMemo[q] = lockMemo{top: true} // in progress
	top = true
	n := 0
	for _, s := range c.sitesOf(bare) {
		if !(s.external || s.class == "" || class == "" || s.class == class) {
			continue
		}
		n++
		up, upTop := c.heldByCallers(s.from.class, s.from.bare)
		if upTop {
			continue // a recursive call (or a cycle): it holds what the outer call holds
		}
		here := unionLocks(s.locks, up)
		if top {
			locks, top = here, false
		} else {
			locks = intersectLocks(locks, here)
		}
	}
	if n == 0 {
		locks, top = nil, false
	}
	c.lockMemo[q] = lockMemo{locks: locks, top: top}
	return locks, top
}

func unionLocks(a, b []lockRef) []lockRef {
	if len(b) == 0 {
		return a
	}
	out := slices.Clone(a)
	for _, r := range b {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func intersectLocks(a, b []lockRef) []lockRef {
	var out []lockRef
	for _, r := range a {
		if slices.Contains(b, r) {
			out = append(out, r)
		}
	}
	return out
}

// lockIdentity resolves a lock reference against the declarations: a key that every
// reference to one lock shares, and whether the lock is one per process (a namespace-scope
// or static mutex, a member of a process-wide object, a lock the audit cannot resolve)
// or one per object (a member of a class with many objects, a lock reached through
// another object, @synchronized(self)).
func (st *symtab) lockIdentity(r lockRef, file string) (key string, processWide bool) {
	if r.via || r.name == "self" || r.name == "this" {
		return "object:" + r.class + "::" + r.String(), false
	}
	d := st.resolve(&candidate{name: r.name, qual: r.qual, class: r.class}, file)
	switch {
	case d == nil:
		return "?" + r.qual + "::" + r.name, true // unknown: judged leniently, as one lock
	case d.Member:
		return d.Qualified(), st.processWide(d.Class)
	case d.ThreadLocal:
		return d.File + ":" + d.Qualified(), false
	}
	return d.File + ":" + d.Qualified(), true
}
