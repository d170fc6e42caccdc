package cxx

import (
	"strings"
)

// isGuardType: RAII lock types whose construction takes a lock.
func isGuardType(b []byte) bool {
	switch string(b) {
	case "lock_guard", "unique_lock", "scoped_lock", "shared_lock":
		return true
	}
	return false
}

// lockStatement recognises "[const] [std::]lock_guard<..> g(m...);", "auto g = std::..(m);",
// "m.lock();" and "m.unlock();" in [s, e).
func (m *File) lockStatement(s, e int32) ([]LockEvent, bool) {
	if evs, matched := m.lockCall(s, e); matched {
		return evs, evs != nil
	}
	open, guard, ok := m.guardDecl(s, e)
	if !ok {
		return nil, false
	}
	evs := m.guardArgs(open, e, guard)
	return evs, len(evs) > 0
}

// lockCall recognises m.lock(); m->lock(); m.unlock(); (and the _shared ones) ending at e:
// matched says the statement has that form, and the event is nil when no name precedes it.
func (m *File) lockCall(s, e int32) (evs []LockEvent, matched bool) {
	if e-s < 4 || !m.Is(e-1, ")") || !m.Is(e-2, "(") || !m.Is(e-4, ".") && !m.Is(e-4, "->") {
		return nil, false
	}
	op := m.Text(e - 3)
	if op != "lock" && op != "unlock" && op != "lock_shared" && op != "unlock_shared" {
		return nil, false
	}
	if !m.IsIdent(e - 5) {
		return nil, true
	}
	name := m.Text(e - 5)
	via := (m.Is(e-6, ".") || m.Is(e-6, "->")) && !m.Is(e-7, "this") && !m.Is(e-7, "self") || m.Is(e-6, "]")
	return []LockEvent{{Pos: e, At: e - 5, Name: name, Release: strings.HasPrefix(op, "un"), Via: via}}, true
}

// guardDecl recognises the declaration of a lock guard at s ([const] [std::]lock_guard<..>
// g(...), auto g = std::unique_lock(...)): the index of its argument list's opening bracket
// and the guard's name.
func (m *File) guardDecl(s, e int32) (open int32, guard string, ok bool) {
	j := s
	if m.Is(j, "auto") && m.IsIdent(j+1) && m.Is(j+2, "=") {
		j += 3
	}
	for m.Is(j, "const") {
		j++
	}
	for m.IsIdent(j) && m.Is(j+1, "::") {
		j += 2
	}
	if !m.IsIdent(j) || !isGuardType(m.Bytes(j)) {
		return 0, "", false
	}
	j++
	if m.Is(j, "<") {
		j = m.angleEnd(j, e)
	}
	if m.IsIdent(j) {
		guard = m.Text(j)
		j++
	} else if m.IsIdent(s+1) && m.Is(s, "auto") {
		guard = m.Text(s + 1)
	}
	if !(m.Is(j, "(") || m.Is(j, "{")) || m.match[j] <= j {
		return 0, "", false
	}
	return j, guard, true
}

// guardArgs returns a lock event for each mutex among the arguments of the guard
// declaration whose argument list opens at open, ending at the ';' at e. With defer_lock or
// try_to_lock the mutexes are held only after guard.lock(): the events are releases, which
// remember which mutex the guard owns.
func (m *File) guardArgs(open, e int32, guard string) []LockEvent {
	close := m.match[open]
	var evs []LockEvent
	deferred := false
	for a := open + 1; a < close; {
		b := m.TopLevelComma(a, close)
		switch arg := m.lastIdent(a, b); arg {
		case "defer_lock", "try_to_lock":
			deferred = true
		case "adopt_lock", "":
		default:
			evs = append(evs, m.guardedMutex(a, b, e, arg, guard))
		}
		a = b + 1
	}
	if deferred {
		for k := range evs {
			evs[k].Release = true
		}
	}
	return evs
}

// guardedMutex is the event of the mutex arg named by the guard argument [a, b).
func (m *File) guardedMutex(a, b, e int32, arg, guard string) LockEvent {
	ev := LockEvent{Pos: e, Name: arg, Guard: guard}
	for k := a; k < b; k++ {
		if m.IsIdent(k) && string(m.Bytes(k)) == arg {
			ev.At = k
			if m.Is(k-1, "::") && m.IsIdent(k-2) {
				ev.Qual = m.Text(k - 2)
			}
		}
	}
	ev.Via = m.throughObject(a, ev.At)
	return ev
}

// HeldLock is one lock held at a point: its name and how it is held ("" for a lock
// statement or m.lock(), else the region's kind: @synchronized, dispatch_sync, call_once,
// caller, ...), and for a region the queue or object it names.
type HeldLock struct {
	Name string
	Kind string
}

// HeldLocks returns the names of the locks held at code token i (region names included) and
// whether any lock is held. A lock counts when it was taken earlier in i's scope or an
// enclosing one, up to the enclosing function.
func (m *File) HeldLocks(i int32) ([]string, bool) {
	hs := m.HeldDetail(i)
	if len(hs) == 0 {
		return nil, false
	}
	held := make([]string, len(hs))
	for k, h := range hs {
		held[k] = h.Name
	}
	return held, true
}

// HeldDetail is heldLocks with how each lock is held: regions first (innermost first), then
// lock statements in the order they were taken.
func (m *File) HeldDetail(i int32) []HeldLock {
	var held []HeldLock
	var evs []LockEvent
	for s := m.scopeOf[i]; s >= 0; s = m.scopes[s].parent {
		sc := &m.scopes[s]
		if sc.region != "" {
			held = append(held, HeldLock{Name: sc.region, Kind: sc.regionKind})
		}
		for _, ev := range sc.locks {
			if ev.Pos < i {
				evs = append(evs, ev)
			}
		}
		if sc.kind == ScopeFunction {
			break
		}
	}
	if len(evs) > 1 {
		// Events of different scopes interleave in source order.
		for a := 1; a < len(evs); a++ {
			for b := a; b > 0 && evs[b].Pos < evs[b-1].Pos; b-- {
				evs[b], evs[b-1] = evs[b-1], evs[b]
			}
		}
	}
	var guardOf map[string]string
	var locked []string
	for _, ev := range evs {
		if ev.Guard != "" {
			if guardOf == nil {
				guardOf = map[string]string{}
			}
			guardOf[ev.Guard] = ev.Name
		}
		name := ev.Name
		if g, ok := guardOf[name]; ok && ev.Guard == "" {
			name = g // guard.lock() / guard.unlock()
		}
		if ev.Release {
			for k := len(locked) - 1; k >= 0; k-- {
				if locked[k] == name {
					locked = append(locked[:k], locked[k+1:]...)
					break
				}
			}
			continue
		}
		locked = append(locked, name)
	}
	for _, name := range locked {
		held = append(held, HeldLock{Name: name})
	}
	return held
}

// Locked reports whether any lock is held at i. Most code holds none: scopes with no
// region and no lock statement answer without building the list.
func (m *File) Locked(i int32) bool {
	events := false
	for s := m.scopeOf[i]; s >= 0; s = m.scopes[s].parent {
		sc := &m.scopes[s]
		if sc.region != "" {
			return true
		}
		if len(sc.locks) > 0 {
			events = true
		}
		if sc.kind == ScopeFunction {
			break
		}
	}
	return events && m.lockedByStatements(i)
}

// lockedByStatements is the lock-statement part of heldDetail without allocating: whether a
// lock taken earlier in i's scopes (up to its function) is still held at i.
func (m *File) lockedByStatements(i int32) bool {
	var evBuf [16]LockEvent
	evs := evBuf[:0]
	for s := m.scopeOf[i]; s >= 0; s = m.scopes[s].parent {
		sc := &m.scopes[s]
		for _, ev := range sc.locks {
			if ev.Pos < i {
				evs = append(evs, ev)
			}
		}
		if sc.kind == ScopeFunction {
			break
		}
	}
	for a := 1; a < len(evs); a++ {
		for b := a; b > 0 && evs[b].Pos < evs[b-1].Pos; b-- {
			evs[b], evs[b-1] = evs[b-1], evs[b]
		}
	}
	var heldBuf [16]string
	held := heldBuf[:0]
	for k, ev := range evs {
		name := ev.Name
		if ev.Guard == "" {
			// guard.lock() / guard.unlock(): the mutex of the latest guard of that name.
			for j := k - 1; j >= 0; j-- {
				if evs[j].Guard == name {
					name = evs[j].Name
					break
				}
			}
		}
		if !ev.Release {
			held = append(held, name)
			continue
		}
		for h := len(held) - 1; h >= 0; h-- {
			if held[h] == name {
				held = append(held[:h], held[h+1:]...)
				break
			}
		}
	}
	return len(held) > 0
}
