package metalcheck

// callers answers, from the call sites of every audited file, whether a function is only
// ever called with a lock held, or only while its object is being constructed. A finding
// that says "no lock held" in such a function is excused: the audit cannot see a caller's
// lock inside the callee, but it can see every caller (of the audited files).
type callers struct {
	sites map[string][]callSite // by bare name
	memo  map[callerQuery]bool
}

type callerQuery struct {
	class, bare string
	ctor        bool // the question: constructors (or locks) rather than locks only
}

func newCallers(all []facts) *callers {
	c := &callers{sites: map[string][]callSite{}, memo: map[callerQuery]bool{}}
	for fi := range all {
		for _, s := range all[fi].calls {
			c.sites[s.bare] = append(c.sites[s.bare], s)
		}
	}
	return c
}

// excused reports whether finding f depends on "no lock held" in a function whose every
// caller holds a lock (MPS001 to MPS004), or, for an object's own state (MPS002 on a
// member, MPS003), whose every caller holds a lock or is its class's constructor.
func (c *callers) excused(f *Finding) bool {
	if f.fnBare == "" {
		return false
	}
	switch f.Rule {
	case "MPS001", "MPS002", "MPS003", "MPS004":
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
	for _, s := range c.sites[bare] {
		if !(s.external || s.class == "" || class == "" || s.class == class) {
			continue // a method of another class
		}
		n++
		if s.locked || ctor && s.inCtor {
			continue
		}
		if s.callerBare == bare && s.callerClass == class || !c.covered(s.callerClass, s.callerBare, ctor) {
			ok = false
			break
		}
	}
	v := ok && n > 0
	c.memo[q] = v
	return v
}
