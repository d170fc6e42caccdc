package metalcheck

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// isCompoundAssign: the operators that read a variable and write it back.
func isCompoundAssign(b []byte) bool {
	switch string(b) {
	case "+=", "-=", "*=", "/=", "%=", "|=", "&=", "^=", "<<=", ">>=":
		return true
	}
	return false
}

// refStart returns the first token of the reference whose last name is at i: this->x,
// self->x and C::x start before x.
func (m *fileModel) refStart(i int32) int32 {
	switch {
	case m.is(i-1, "->") && (m.is(i-2, "this") || m.is(i-2, "self")):
		return i - 2
	case m.is(i-1, "::"):
		r := i
		for m.is(r-1, "::") && m.isIdent(r-2) {
			r -= 2
		}
		if m.is(r-1, "::") { // ::x
			r--
		}
		return r
	}
	return i
}

// maybeCounter reports whether the name at i is read-modify-written: followed by ++, --
// or a compound assignment, or preceded by ++ or -- (++x, ++this->x, ++C::x). It is asked
// of every name in a function, so the usual answer costs a look at the tokens around.
func (m *fileModel) maybeCounter(i int32) bool {
	if int(i)+1 < len(m.code) {
		if n := &m.code[i+1]; n.Kind == Punct && n.End-n.Off >= 2 {
			last := m.src[n.End-1]
			if last == '=' && n.first != '=' && n.first != '!' || last == n.first && (last == '+' || last == '-') {
				if m.is(i+1, "++") || m.is(i+1, "--") || isCompoundAssign(m.tb(i+1)) {
					return true
				}
			}
		}
	}
	if i == 0 {
		return false
	}
	p := &m.code[i-1]
	if p.Kind != Punct || p.End-p.Off != 2 {
		return false
	}
	switch p.first {
	case '+', '-':
		if m.src[p.Off+1] == p.first {
			return true // ++x, --x
		}
		if !m.is(i-2, "this") && !m.is(i-2, "self") {
			return false // a->x
		}
	case ':':
	default:
		return false
	}
	r := m.refStart(i)
	return m.is(r-1, "++") || m.is(r-1, "--")
}

// counterMutation (MPS011): x++, ++x, x--, x += n and the other compound assignments of
// a variable that is not a local or parameter (x, this->x, C::x; not obj.x), with the
// locks held there (maybeCounter said it is one). Whether x is process-wide, atomic, and
// guarded by one lock at every such place is judged over every file (judgeCounters).
func (m *fileModel) counterMutation(i int32, f *function, fx *facts) {
	if !m.isIdent(i) || m.is(i, "operator") || m.is(i, "this") || m.is(i, "self") {
		return
	}
	qual, ok := m.rootRef(i)
	if !ok {
		return
	}
	name := m.text(i)
	fi := m.scopes[f.scope].fn
	c := candidate{kind: candCounter, name: name, qual: qual, class: f.class, inCtor: f.ctor, locks: -1}
	if qual == "" {
		if d := f.statics[name]; d != nil {
			c.localStatic = d
		} else if m.isLocal(fi, name) {
			return
		}
	}
	if m.locked(i) {
		c.locks = m.lockSetAt(i, f, fx)
	}
	c.finding = m.pending(i, "MPS011")
	c.finding.function, c.finding.fnClass, c.finding.fnBare = f.name, f.class, f.bare
	fx.cands = append(fx.cands, c)
}

// ctorCounters looks for counter mutations in the member initialisers of constructor f
// (buf_id(++buffer_counter)), which lie before its body.
func (m *fileModel) ctorCounters(f *function, fx *facts) {
	if !f.ctor || f.scope <= 0 || f.open <= f.headStart {
		return
	}
	colon := m.ctorColon(f.headStart, f.open)
	if colon < 0 {
		return
	}
	for k := colon + 1; k < f.open; k++ {
		if m.isIdent(k) && m.maybeCounter(k) {
			m.counterMutation(k, f, fx)
		}
	}
}

// resetPath reports whether a function of this (bare) name prepares an object for
// another use: reset, reuse, recycle, reinit, acquire or release.
func resetPath(bare string) bool {
	l := strings.ToLower(bare)
	for _, w := range [...]string{"reset", "reuse", "recycle", "reinit", "acquire", "release"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// counterLike reports whether a field of this name counts signals or generations: the
// value a waiter compares with (signal, counter, generation, epoch, serial, sequence,
// timeline, fence, ticket, version).
func counterLike(name string) bool {
	l := strings.ToLower(name)
	for _, w := range [...]string{"signal", "counter", "generation", "epoch", "serial", "seqno", "sequence",
		"timeline", "fence", "ticket", "version"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// isZero: 0, 0u, 0ULL, 0x0, 0.0 (a number whose digits are all zero).
func isZero(b []byte) bool {
	if len(b) == 0 || b[0] != '0' {
		return false
	}
	s := strings.TrimLeft(strings.ToLower(string(b)), "0x.")
	s = strings.TrimLeft(s, "0.")
	return strings.Trim(s, "ulf") == ""
}

// poolReset (MPS012): in a reset, reuse or acquire path, x = 0, x = {} or x.store(0) of a
// field whose name says it counts signals or generations (m_signalCounter,
// m_event.signaledValue, block->generation). Whether its object is pooled is judged
// over every file.
func (m *fileModel) poolReset(i int32, f *function, fx *facts) {
	if f.ctor || !m.isIdent(i) || !resetPath(f.bare) {
		return
	}
	switch {
	case m.is(i+1, "=") && (isZero(m.tb(i+2)) && (m.is(i+3, ";") || m.is(i+3, ",") || m.is(i+3, ")")) ||
		m.is(i+2, "{") && m.is(i+3, "}")):
	case (m.is(i+1, ".") || m.is(i+1, "->")) && m.is(i+2, "store") && m.is(i+3, "(") && isZero(m.tb(i+4)):
	default:
		return
	}
	name := m.text(i)
	if !counterLike(name) {
		return
	}
	r := i
	for (m.is(r-1, ".") || m.is(r-1, "->")) && m.isIdent(r-2) {
		r -= 2
	}
	if m.is(r, "this") || m.is(r, "self") {
		r += 2
	}
	c := candidate{kind: candPoolReset, name: name, class: f.class, where: m.exprText(m.refStart(r), i+1)}
	if r < i {
		c.root = m.text(r)
		fi := m.scopes[f.scope].fn
		c.viaLocal = f.statics[c.root] == nil && m.isLocal(fi, c.root)
	}
	c.finding = m.pending(i, "MPS012")
	fx.cands = append(fx.cands, c)
}

// counterSite is one mutation of a process-wide counter, with the locks held there
// resolved.
type counterSite struct {
	cand  *candidate
	file  string
	locks []lockRef
	keys  map[string]string // identity -> name of each process-wide lock held
	any   bool              // a lock of any kind is held
}

// judgeCounters (MPS011) groups the read-modify-writes of every file by the variable
// they change. A variable that is process-wide (a namespace-scope or static variable, a
// static member, a member of a process-wide object), not atomic, and changed somewhere
// with a lock held is reported where no one process-wide lock is held that the other
// places hold too: per-stream, sharded or per-object locks (and different mutexes in
// different functions) do not exclude each other.
func judgeCounters(all []facts, st *symtab, cg *callers) []Finding {
	type group struct {
		decl  *Decl
		sites []counterSite
	}
	groups := map[*Decl]*group{}
	var order []*Decl
	for fi := range all {
		fx := &all[fi]
		for ci := range fx.cands {
			c := &fx.cands[ci]
			if c.kind != candCounter {
				continue
			}
			d := st.resolve(c, fx.path)
			if d == nil || d.Atomic || d.Const || d.ThreadLocal || d.Container || d.Mutex {
				continue
			}
			if d.Member {
				if c.inCtor || !st.processWide(d.Class) {
					continue // the object is not shared yet, or it is one of many
				}
			} else if !d.Static {
				continue
			}
			var locks []lockRef
			if c.locks >= 0 {
				locks = fx.lockSets[c.locks]
			}
			if up, top := cg.heldByCallers(c.finding.fnClass, c.finding.fnBare); !top {
				locks = unionLocks(locks, up)
			}
			s := counterSite{cand: c, file: fx.path, locks: locks, keys: map[string]string{}, any: len(locks) > 0}
			for _, r := range locks {
				if k, pw := st.lockIdentity(r, fx.path); pw {
					s.keys[k] = r.String()
				}
			}
			g := groups[d]
			if g == nil {
				g = &group{decl: d}
				groups[d] = g
				order = append(order, d)
			}
			g.sites = append(g.sites, s)
		}
	}
	var out []Finding
	for _, d := range order {
		g := groups[d]
		anyLocked := false
		count := map[string]int{}
		display := map[string]string{}
		for _, s := range g.sites {
			anyLocked = anyLocked || s.any
			for k, name := range s.keys {
				count[k]++
				display[k] = name
			}
		}
		if !anyLocked {
			continue // never guarded: not a lock mix-up (an unguarded counter is another matter)
		}
		best := ""
		for k, n := range count {
			if n > count[best] || n == count[best] && k < best {
				best = k
			}
		}
		if best != "" && count[best] == len(g.sites) {
			continue // one process-wide lock everywhere
		}
		for _, s := range g.sites {
			if _, ok := s.keys[best]; best != "" && ok {
				continue
			}
			f := s.cand.finding.make(s.file)
			here := "with no lock held"
			if len(s.locks) > 0 {
				names := make([]string, len(s.locks))
				for k, r := range s.locks {
					names[k] = r.String()
				}
				here = "under " + strings.Join(names, ", ")
			}
			why := "no process-wide lock is held at every place it changes (per-stream, sharded or per-object locks do not exclude each other)"
			if best != "" {
				why = fmt.Sprintf("elsewhere it changes under %s, which is not held here", display[best])
			}
			f.Message = fmt.Sprintf("%s (declared %s:%d) is not atomic and is read-modify-written here %s; %s", d.qualified(), d.File, d.Line, here, why)
			out = append(out, f)
		}
	}
	return out
}

// pooledIndex finds the pooled classes (objects held in a container somewhere) that
// declare a member, for a reset field reached through a local (ev->counter = 0). It is
// built once, on first use, while candidates may be judged in parallel.
type pooledIndex struct {
	once     sync.Once
	byMember map[string][]string // member name -> pooled classes declaring it, sorted
}

func (st *symtab) pooledWithMember(name string) string {
	st.pooledIdx.once.Do(func() {
		st.pooledIdx.byMember = map[string][]string{}
		for k := range st.members {
			if st.pooled[k.class] {
				st.pooledIdx.byMember[k.name] = append(st.pooledIdx.byMember[k.name], k.class)
			}
		}
		for _, v := range st.pooledIdx.byMember {
			sort.Strings(v)
		}
	})
	if cs := st.pooledIdx.byMember[name]; len(cs) > 0 {
		return cs[0]
	}
	return ""
}

// judgePoolReset (MPS012): the reset field belongs to an object of a pooled class.
func (st *symtab) judgePoolReset(c *candidate, file string) (Finding, bool) {
	class := ""
	if c.viaLocal {
		class = st.pooledWithMember(c.name)
	} else {
		member := c.name
		if c.root != "" {
			member = c.root
		}
		if v := st.members[memberKey{c.class, member}]; v.d != nil || looksLikeMember(member) {
			class = c.class
		}
	}
	if class == "" || !st.pooled[class] {
		return Finding{}, false
	}
	f := c.finding.make(file)
	field := c.where // the target as written: m_signalCounter, m_event.signaledValue, ev->gen
	f.Message = fmt.Sprintf("%s sets %s, a signal or generation counter of a pooled %s, back to 0 on reuse: a signal or completion from its previous use can still arrive and satisfy a wait of the new one (ABA)",
		c.finding.function, field, class)
	return f, true
}
