package cxx

// localScanLimit is how many questions about one function's locals are answered by
// scanning its tokens for the name before its set of locals is built (see IsLocal).
const localScanLimit = 4

// Locals answers whether a name is a parameter or non-static local of a function of a
// File. It keeps its answers beside the model, which stays read-only. The zero Locals is
// ready for Reset, which points it at a file, reusing its memory from the previous one.
type Locals struct {
	m   *File
	fns []localMemo
}

// localMemo is what Locals knows about one function: its set of locals once built, and
// how many questions a scan has answered before.
type localMemo struct {
	set   map[string]bool
	scans int32
}

// newLocals returns the locals of m's functions.
func newLocals(m *File) *Locals {
	l := new(Locals)
	l.Reset(m)
	return l
}

// Reset forgets the previous file and answers for m.
func (l *Locals) Reset(m *File) {
	l.m = m
	n := len(m.funcs)
	if cap(l.fns) < n {
		l.fns = make([]localMemo, n, n+n/4)
	}
	l.fns = l.fns[:n]
	clear(l.fns)
}

// IsLocal reports whether name is declared as a parameter or non-static local of function
// fi. Most functions are asked about one or two names: scanning the body for them costs
// less than a set of every local; a function asked more often gets the set, so that many
// questions stay linear in its length.
func (l *Locals) IsLocal(fi int32, name string) bool {
	m := l.m
	f := &m.funcs[fi]
	memo := &l.fns[fi]
	if name == "" || f.statics != nil && f.statics[name] != nil {
		return false
	}
	if memo.set != nil || memo.scans >= localScanLimit {
		return l.names(fi)[name]
	}
	memo.scans++
	start, end := m.localRange(f)
	if start < 0 || start >= end {
		return false
	}
	// m.Is(k, name) for each token, with the name's length and first byte read once.
	size, first := int32(len(name)), name[0]
	for k, t := range m.code[start:end] {
		if t.End-t.Off == size && t.first == first && string(m.src[t.Off:t.End]) == name && m.localDeclAt(start+int32(k)) {
			return true
		}
	}
	return false
}

// localRange is the token range that holds function f's parameters and locals.
func (m *File) localRange(f *Function) (int32, int32) {
	end := f.close
	if int(end) > len(m.code) {
		end = int32(len(m.code))
	}
	return f.headStart + 1, end
}

// localDeclAt reports whether code token k looks like the name of a declared parameter
// or local: Type name followed by ; = ( { , ) [ or :.
func (m *File) localDeclAt(k int32) bool {
	if !m.IsIdent(k) || !m.IsIdent(k-1) && !m.Is(k-1, ">") && !m.Is(k-1, "*") && !m.Is(k-1, "&") && !m.Is(k-1, "&&") {
		return false
	}
	if m.IsIdent(k-1) && IsNotDeclPrev(m.Bytes(k-1)) {
		return false
	}
	if m.Is(k-1, "*") || m.Is(k-1, "&") {
		// a * b; is more often a declaration than a product in this code, but x & y)
		// in an expression is not: require a type-ish token before the operator.
		if !(m.IsIdent(k-2) || m.Is(k-2, ">") || m.Is(k-2, "*")) || m.IsIdent(k-2) && IsNotDeclPrev(m.Bytes(k-2)) {
			return false
		}
	}
	switch {
	case m.Is(k+1, ";"), m.Is(k+1, "="), m.Is(k+1, "("), m.Is(k+1, "{"), m.Is(k+1, ","),
		m.Is(k+1, ")"), m.Is(k+1, "["), m.Is(k+1, ":") && !m.Is(k+1, "::"):
		return true
	}
	return false
}

// names returns the names declared as parameters or non-static locals of function fi.
func (l *Locals) names(fi int32) map[string]bool {
	m := l.m
	memo := &l.fns[fi]
	if memo.set != nil {
		return memo.set
	}
	f := &m.funcs[fi]
	memo.set = map[string]bool{}
	start, end := m.localRange(f)
	for k := start; k < end; k++ {
		if !m.localDeclAt(k) {
			continue
		}
		b := m.Bytes(k)
		if memo.set[string(b)] || f.statics != nil && f.statics[string(b)] != nil {
			continue
		}
		memo.set[string(b)] = true
	}
	return memo.set
}
