package metalcheck

import (
	"fmt"
	"github.com/mpspatch/mpspatch/metalcheck/internal/cxx"
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
func (m *extractor) refStart(i int32) int32 {
	switch {
	case m.Is(i-1, "->") && (m.Is(i-2, "this") || m.Is(i-2, "self")):
		return i - 2
	case m.Is(i-1, "::"):
		r := i
		for m.Is(r-1, "::") && m.IsIdent(r-2) {
			r -= 2
		}
		if m.Is(r-1, "::") { // ::x
			r--
		}
		return r
	}
	return i
}

// maybeCounter reports whether the name at i is read-modify-written: followed by ++, --
// or a compound assignment, or preceded by ++ or -- (++x, ++this->x, ++C::x). It is asked
// of every name in a function, so the usual answer costs a look at the tokens around.
func (m *extractor) maybeCounter(i int32) bool {
	if i+1 < m.Len() {
		if n := m.Tok(i + 1); n.Kind == cxx.Punct && n.End-n.Off >= 2 {
			last := m.Bytes(i + 1)[n.End-n.Off-1]
			if last == '=' && n.First() != '=' && n.First() != '!' || last == n.First() && (last == '+' || last == '-') {
				if m.Is(i+1, "++") || m.Is(i+1, "--") || isCompoundAssign(m.Bytes(i+1)) {
					return true
				}
			}
		}
	}
	if i == 0 {
		return false
	}
	p := m.Tok(i - 1)
	if p.Kind != cxx.Punct || p.End-p.Off != 2 {
		return false
	}
	switch p.First() {
	case '+', '-':
		if m.Bytes(i - 1)[1] == p.First() {
			return true // ++x, --x
		}
		if !m.Is(i-2, "this") && !m.Is(i-2, "self") {
			return false // a->x
		}
	case ':':
	default:
		return false
	}
	r := m.refStart(i)
	return m.Is(r-1, "++") || m.Is(r-1, "--")
}

// counterMutation (MPS011): x++, ++x, x--, x += n and the other compound assignments of
// a variable that is not a local or parameter (x, this->x, C::x; not obj.x), with the
// locks held there (maybeCounter said it is one). Whether x is process-wide, atomic, and
// guarded by one lock at every such place is judged over every file (judgeCounters).
func (m *extractor) counterMutation(i int32, f *function, fx *facts) {
	if !m.IsIdent(i) || m.Is(i, "operator") || m.Is(i, "this") || m.Is(i, "self") {
		return
	}
	qual, ok := m.rootRef(i)
	if !ok {
		return
	}
	name := m.Text(i)
	fi := m.Scope(f.Scope()).Fn()
	c := candidate{kind: candCounter, name: name, qual: qual, class: f.Class(), inCtor: f.Ctor(), locks: -1}
	if qual == "" {
		if d, ok := f.Static(name); ok {
			c.localStatic = ownDecl(d)
		} else if m.isLocal(fi, name) {
			return
		}
	}
	if m.Locked(i) {
		c.locks = m.lockSetAt(i, f, fx)
	}
	c.finding = m.pending(i, "MPS011")
	c.finding.function, c.finding.fnClass, c.finding.fnBare = f.Name(), f.Class(), f.Bare()
	fx.cands = append(fx.cands, c)
}

// ctorCounters looks for counter mutations in the member initialisers of constructor f
// (buf_id(++buffer_counter)), which lie before its body.
func (m *extractor) ctorCounters(f *function, fx *facts) {
	if !f.Ctor() || f.Scope() <= 0 || f.Open() <= f.HeadStart() {
		return
	}
	colon := m.CtorColon(f.HeadStart(), f.Open())
	if colon < 0 {
		return
	}
	for k := colon + 1; k < f.Open(); k++ {
		if m.IsIdent(k) && m.maybeCounter(k) {
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
func (m *extractor) poolReset(i int32, f *function, fx *facts) {
	if f.Ctor() || !m.IsIdent(i) || !resetPath(f.Bare()) {
		return
	}
	switch {
	case m.Is(i+1, "=") && (isZero(m.Bytes(i+2)) && (m.Is(i+3, ";") || m.Is(i+3, ",") || m.Is(i+3, ")")) ||
		m.Is(i+2, "{") && m.Is(i+3, "}")):
	case (m.Is(i+1, ".") || m.Is(i+1, "->")) && m.Is(i+2, "store") && m.Is(i+3, "(") && isZero(m.Bytes(i+4)):
	default:
		return
	}
	name := m.Text(i)
	if !counterLike(name) {
		return
	}
	r := i
	for (m.Is(r-1, ".") || m.Is(r-1, "->")) && m.IsIdent(r-2) {
		r -= 2
	}
	if m.Is(r, "this") || m.Is(r, "self") {
		r += 2
	}
	c := candidate{kind: candPoolReset, name: name, class: f.Class(), where: m.ExprText(m.refStart(r), i+1)}
	if r < i {
		c.root = m.Text(r)
		fi := m.Scope(f.Scope()).Fn()
		c.viaLocal = !f.HasStatic(c.root) && m.isLocal(fi, c.root)
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
	groups := map[*cxx.Decl][]counterSite{}
	var order []*cxx.Decl
	for fi := range all {
		fx := &all[fi]
		for ci := range fx.cands {
			c := &fx.cands[ci]
			if c.kind != candCounter {
				continue
			}
			d, s, ok := counterSiteOf(c, fx, st, cg)
			if !ok {
				continue
			}
			if _, seen := groups[d]; !seen {
				order = append(order, d)
			}
			groups[d] = append(groups[d], s)
		}
	}
	var out []Finding
	for _, d := range order {
		out = append(out, judgeCounter(d, groups[d])...)
	}
	return out
}

// counterSiteOf resolves the variable that candidate c of file fx changes, and the locks
// held there (its own and those every caller holds); false when the variable is not
// process-wide, or needs no lock (atomic, const, thread_local, a container or mutex).
func counterSiteOf(c *candidate, fx *facts, st *symtab, cg *callers) (*cxx.Decl, counterSite, bool) {
	d := st.resolve(c, fx.path)
	if d == nil || d.Atomic || d.Const || d.ThreadLocal || d.Container || d.Mutex {
		return nil, counterSite{}, false
	}
	if d.Member {
		if c.inCtor || !st.processWide(d.Class) {
			return nil, counterSite{}, false // the object is not shared yet, or it is one of many
		}
	} else if !d.Static {
		return nil, counterSite{}, false
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
	return d, s, true
}

// judgeCounter reports the sites of variable d that do not hold the process-wide lock
// held at most of its sites (all of them when there is none), unless no site holds a lock
// at all or every site holds that one.
func judgeCounter(d *cxx.Decl, sites []counterSite) []Finding {
	best, display, anyLocked := commonLock(sites)
	if !anyLocked {
		return nil // never guarded: not a lock mix-up (an unguarded counter is another matter)
	}
	var out []Finding
	for _, s := range sites {
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
			why = fmt.Sprintf("elsewhere it changes under %s, which is not held here", display)
		}
		f.Message = fmt.Sprintf("%s (declared %s:%d) is not atomic and is read-modify-written here %s; %s", d.Qualified(), d.File, d.Line, here, why)
		out = append(out, f)
	}
	return out
}

// commonLock returns the identity of the process-wide lock held at most sites (the least
// identity among equals; "" for none) and its name, and whether any site holds a lock of
// any kind; when one lock is held at every site, there is nothing to report: no lock and
// false.
func commonLock(sites []counterSite) (best, display string, anyLocked bool) {
	count := map[string]int{}
	names := map[string]string{}
	for _, s := range sites {
		anyLocked = anyLocked || s.any
		for k, name := range s.keys {
			count[k]++
			names[k] = name
		}
	}
	for k, n := range count {
		if n > count[best] || n == count[best] && k < best {
			best = k
		}
	}
	if best != "" && count[best] == len(sites) {
		return "", "", false // one process-wide lock everywhere
	}
	return best, names[best], anyLocked
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
