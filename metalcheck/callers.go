package metalcheck

// callers answers, from the call sites of every audited file, whether a function is only
// ever called with a lock held, or only while its object is being constructed. A finding
// that says "no lock held" in such a function is excused: the audit cannot see a caller's
// lock inside the callee, but it can see every caller (of the audited files).
//
// Sites are indexed by name only for the names a question needs (the functions holding
// findings, then their callers), so an audit with no such finding pays nothing here.
type callers struct {
	all   []facts
	sites map[string][]callerSite // by bare name, filled on demand
	memo  map[callerQuery]bool
	// lockMemo: the locks every caller of a function holds (heldByCallers).
	lockMemo map[callerQuery]lockMemo
	// selfLocked: for each command-buffer primitive defined in the audited files, whether
	// every definition takes the lock itself.
	selfLocked map[string]bool
}

// callerSite is a call site with its names and caller resolved.
type callerSite struct {
	class            string
	external, locked bool
	inCtor           bool
	from             caller
	locks            []lockRef // the locks held at the call (shared, not to be changed)
}

type callerQuery struct {
	class, bare string
	ctor        bool // the question: constructors (or locks) rather than locks only
}

func newCallers(all []facts) *callers {
	c := &callers{all: all, sites: map[string][]callerSite{}, memo: map[callerQuery]bool{}, selfLocked: map[string]bool{},
		lockMemo: map[callerQuery]lockMemo{}}
	for fi := range all {
		for _, p := range all[fi].primitives {
			if v, seen := c.selfLocked[p.bare]; !seen || v {
				c.selfLocked[p.bare] = p.selfLocked
			}
		}
	}
	return c
}

// sitesOf returns the call sites of bare, indexing them on first use.
func (c *callers) sitesOf(bare string) []callerSite {
	if s, ok := c.sites[bare]; ok {
		return s
	}
	var out []callerSite
	for fi := range c.all {
		fx := &c.all[fi]
		k := int32(-1)
		for i, n := range fx.names {
			if n == bare {
				k = int32(i)
				break
			}
		}
		if k < 0 {
			continue
		}
		for _, cs := range fx.calls {
			if cs.bare != k {
				continue
			}
			s := callerSite{external: cs.has(callExternal), locked: cs.has(callLocked), inCtor: cs.has(callInCtor),
				from: fx.callers[cs.caller]}
			if cs.locks >= 0 {
				s.locks = fx.lockSets[cs.locks]
			}
			if cs.class >= 0 {
				s.class = fx.names[cs.class]
			}
			out = append(out, s)
		}
	}
	c.sites[bare] = out
	return out
}

// excused reports whether finding f depends on "no lock held" in a function whose every
// caller holds a lock (MPS001 to MPS004), or, for an object's own state (MPS002 on a
// member, MPS003), whose every caller holds a lock or is its class's constructor; or
// whether it calls a command-buffer primitive (MPS004) whose every definition in the
// audited files takes the lock itself.
func (c *callers) excused(f *Finding) bool {
	if f.fnBare == "" {
		return false
	}
	switch f.Rule {
	case "MPS004":
		if c.selfLocked[f.callee] {
			return true // the primitive takes the stream's lock itself
		}
	case "MPS013":
		if f.callee != "return" {
			return false // used in a dispatch block of the same function: no caller helps
		}
	case "MPS001", "MPS002", "MPS003":
	default:
		return false
	}
	return c.covered(f.fnClass, f.fnBare, f.memberState)
}

// covered: the function has at least one call site in the audited files and every one of
// them holds a lock (or, with ctor, is in a constructor of the class), directly or
// because the calling function is itself covered. A cycle counts as not covered.
func (c *callers) covered(class, bare string, ctor bool) bool {
	q := callerQuery{class, bare, ctor}
	if v, ok := c.memo[q]; ok {
		return v
	}
	c.memo[q] = false // in progress: a recursive call does not cover itself
	n := 0
	ok := true
	for _, s := range c.sitesOf(bare) {
		if !(s.external || s.class == "" || class == "" || s.class == class) {
			continue // a method of another class
		}
		n++
		if s.locked || ctor && s.inCtor {
			continue
		}
		if s.from.bare == bare && s.from.class == class || !c.covered(s.from.class, s.from.bare, ctor) {
			ok = false
			break
		}
	}
	v := ok && n > 0
	c.memo[q] = v
	return v
}
