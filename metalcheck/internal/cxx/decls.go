package cxx

import (
	"bytes"
	"strings"
)

// endStatement handles the statement [s, e) ended by the ';' at e in scope cur.
func (m *File) endStatement(s, e, cur int32) {
	sc := &m.scopes[cur]
	switch {
	case sc.kind.declarative():
		class := ""
		if sc.kind == ScopeClass {
			class = sc.name
		}
		m.declaration(s, e, sc.kind == ScopeClass, class, -1)
	case sc.kind == ScopeEnum:
	default:
		// Statements (and an initialiser that holds one was misread: treat it as a block).
		h := m.StripPrefix(s, e)
		if m.Is(h, "static") && sc.fn >= 0 {
			m.declaration(h, e, false, "", sc.fn)
			return
		}
		if ev, ok := m.lockStatement(h, e); ok {
			sc.locks = append(sc.locks, ev...)
		}
	}
}

// isContainerType: standard, c10 and Foundation containers (mutations need a lock).
// These word sets are switches, not maps: comparing a few lengths and bytes costs less
// than hashing every identifier the analysis asks about.
func isContainerType(b []byte) bool {
	switch string(b) {
	case "map", "unordered_map", "multimap", "unordered_multimap", "set", "unordered_set",
		"multiset", "unordered_multiset", "vector", "deque", "list", "forward_list", "queue",
		"stack", "priority_queue", "SmallVector", "flat_hash_map", "flat_hash_set", "node_hash_map",
		"DenseMap", "NSMutableDictionary", "NSMutableArray", "NSMutableSet", "NSMapTable":
		return true
	}
	return false
}

// isMutexType: the standard mutex types.
func isMutexType(b []byte) bool {
	switch string(b) {
	case "mutex", "recursive_mutex", "shared_mutex", "timed_mutex", "recursive_timed_mutex",
		"shared_timed_mutex":
		return true
	}
	return false
}

// isDeclSkip: statement heads that never declare a variable the audit tracks.
func isDeclSkip(b []byte) bool {
	switch string(b) {
	case "using", "typedef", "friend", "namespace", "return", "static_assert", "@class",
		"@synthesize", "@dynamic", "-", "+", "template", "goto", "delete":
		return true
	}
	return false
}

// declaration records the variable declared by [s, e), if it is one.
func (m *File) declaration(s, e int32, inClass bool, class string, fn int32) {
	s, ok := m.declStart(s, e)
	if !ok {
		return
	}
	d := Decl{File: m.path}
	typeStart := m.declSpecifiers(&d, s, e)
	stop := m.declaratorEnd(typeStart, e)
	nameAt, qualStart, ok := m.declName(typeStart, stop)
	if !ok {
		return
	}
	star, ok := m.declType(&d, typeStart, qualStart)
	if !ok {
		return
	}
	if m.Is(stop, "(") && !d.Container && !d.Mutex && !(fn >= 0 || m.objectArgs(stop, e)) {
		return // a function declaration
	}
	if star {
		d.Const = false
	}
	m.placeDecl(&d, nameAt, qualStart, inClass, class, fn)
	if !d.Atomic {
		// (An atomic pointer to an object is not recorded as an Instance of its class:
		// the rules that ask, MPS006's, were written before atomics were declarations.)
		m.recordInstances(&d, typeStart, qualStart, m.Is(stop, "["))
	}
	d.Line, d.Col = m.Pos(m.code[nameAt])
	if fn >= 0 {
		f := &m.funcs[fn]
		if f.statics == nil {
			f.statics = map[string]*Decl{}
		}
		dd := d
		f.statics[d.Name] = &dd
		return
	}
	m.decls = append(m.decls, d)
}

// declStart skips what comes before a declaration's words in [s, e) (labels, attributes,
// @property's attributes) and reports false for statements that declare nothing the audit
// tracks: using, typedef, friend, ..., and forward declarations.
func (m *File) declStart(s, e int32) (int32, bool) {
	s = m.StripPrefix(s, e)
	if s >= e {
		return s, false
	}
	if m.Is(s, "@property") {
		s++
		if m.Is(s, "(") && m.match[s] > s && m.match[s] < e {
			s = m.match[s] + 1
		}
	}
	if s >= e || isDeclSkip(m.Bytes(s)) {
		return s, false
	}
	if (m.Is(s, "class") || m.Is(s, "struct") || m.Is(s, "union") || m.Is(s, "enum")) && e-s <= 3 {
		return s, false // forward declaration
	}
	return s, true
}

// declSpecifiers reads the storage words before a declaration's type (static,
// thread_local, const, extern, an export macro) into d, and returns where the type starts.
func (m *File) declSpecifiers(d *Decl, s, e int32) int32 {
	for ; s < e && m.IsIdent(s); s++ {
		switch string(m.Bytes(s)) {
		case "static":
			d.Static = true
		case "thread_local", "__thread", "C10_THREAD_LOCAL":
			d.ThreadLocal = true
		case "const", "constexpr", "constinit":
			d.Const = true
		case "extern", "inline", "mutable", "volatile", "register":
		default:
			if t := m.Bytes(s); bytes.HasSuffix(t, []byte("_API")) && isUpper(t) {
				continue
			}
			return s
		}
	}
	return s
}

// declaratorEnd returns the first token after the declared name in [s, e): the =, (, {,
// [, : or , that follows it outside template arguments, or e.
func (m *File) declaratorEnd(s, e int32) int32 {
	angle := 0
	for j := s; j < e; j++ {
		c := m.Byte1(j)
		switch {
		case c == '<' && j > s && (m.IsIdent(j-1) || m.Is(j-1, "::")):
			angle++
		case c == '>' && angle > 0:
			angle--
		case angle > 0 && m.Is(j, ">>"):
			angle -= 2
			if angle < 0 {
				angle = 0
			}
		case angle > 0:
			if (c == '(' || c == '[' || c == '{') && m.match[j] > j && m.match[j] < e {
				j = m.match[j]
			}
		case c == '=' || c == '(' || c == '{' || c == '[' || c == ':' || c == ',':
			return j
		}
	}
	return e
}

// declName finds the declared name before stop, and where its qualifiers (A::B::) start;
// false when there is no name, or no type before it (an expression or a macro call).
func (m *File) declName(typeStart, stop int32) (nameAt, qualStart int32, ok bool) {
	nameAt = stop - 1
	if !m.IsIdent(nameAt) || nameAt <= typeStart && !m.Is(nameAt-1, "::") {
		return 0, 0, false
	}
	qualStart = nameAt
	for qualStart-2 >= typeStart && m.Is(qualStart-1, "::") && m.IsIdent(qualStart-2) {
		qualStart -= 2
	}
	if qualStart <= typeStart {
		return 0, 0, false // no type: an expression or a macro call
	}
	return nameAt, qualStart, true
}

// declType reads the type [s, e) into d (atomic, container, mutex, thread_local, static)
// and reports whether it holds a pointer; false for an operator's declaration.
func (m *File) declType(d *Decl, s, e int32) (star, ok bool) {
	for j := s; j < e; j++ {
		t := m.Bytes(j)
		if m.code[j].Kind == Ident {
			switch string(t) {
			case "operator":
				return false, false
			case "atomic":
				d.Atomic = true
			case "thread_local":
				d.ThreadLocal = true
			case "static":
				d.Static = true
			default:
				if isContainerType(t) {
					d.Container = true
				} else if isMutexType(t) {
					d.Mutex = true
				} else if bytes.HasPrefix(t, []byte("atomic_")) {
					d.Atomic = true // std::atomic_int, std::atomic_uint64_t
				}
			}
		}
		if string(t) == "*" {
			star = true
		}
	}
	return star, true
}

// placeDecl names d and says whose it is: a member of class (inClass), a static member
// defined out of its class (C::name), a namespace-scope variable or a function-local
// static (fn >= 0).
func (m *File) placeDecl(d *Decl, nameAt, qualStart int32, inClass bool, class string, fn int32) {
	d.Name = m.Text(nameAt)
	if qualStart < nameAt {
		d.Class = m.Text(nameAt - 2)
		d.Static = true // out-of-class definition of a static member
	} else if inClass {
		d.Class = class
		d.Member = !d.Static
	} else {
		d.Static = true // namespace scope or function-local static: one per process
	}
	d.Local = fn >= 0
}

// objectArgs reports whether the parentheses at open (before e) hold constructor arguments
// rather than parameters: a literal, or a lone all-capitals macro name.
func (m *File) objectArgs(open, e int32) bool {
	close := m.match[open]
	if close <= open || close >= e {
		return false
	}
	for j := open + 1; j < close; j++ {
		if k := m.code[j].Kind; k == String || k == Number {
			return true
		}
	}
	if close == open+2 && m.IsIdent(open+1) {
		t := m.Text(open + 1)
		return len(t) > 1 && strings.ToUpper(t) == t
	}
	return false
}

// recordInstances notes which classes the declaration d, with its type in [s, e), holds
// objects of: one process-wide object when d is static (not thread_local), many when d
// is thread_local, a container or an array. Names in the type that are not classes are
// recorded too; they never match a class with a mutex member.
func (m *File) recordInstances(d *Decl, s, e int32, array bool) {
	many := d.ThreadLocal || d.Container || array
	if !many && !d.Static {
		return
	}
	pooled := d.Container
	for j := s; j < e; j++ {
		if !m.IsIdent(j) || m.Is(j+1, "::") {
			continue
		}
		b := m.Bytes(j)
		if string(b) == "array" {
			many = true
		}
		if b[0] < 'A' || b[0] > 'Z' {
			continue // std, unique_ptr, const, ...: PyTorch's classes are capitalised
		}
		m.instances = append(m.instances, Instance{Class: m.intern(b), Many: many, Pooled: pooled})
	}
}

// intern returns b as a string shared by every occurrence in the file.
func (m *File) intern(b []byte) string { return m.names.Intern(b) }

// Interner hands out one string for each distinct name it is given, so that a name that
// occurs a thousand times in a file is kept once. The zero value is ready to use.
type Interner struct{ m map[string]string }

// Intern returns b as the string shared by every earlier and later call with the same
// bytes.
func (n *Interner) Intern(b []byte) string {
	if s, ok := n.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if n.m == nil {
		n.m = map[string]string{}
	}
	n.m[s] = s
	return s
}

// IsNotDeclPrev: words that, before a name, make it an expression rather than a declaration.
func IsNotDeclPrev(b []byte) bool {
	switch string(b) {
	case "return", "else", "new", "delete", "case", "goto", "throw", "co_return", "co_yield",
		"sizeof", "do", "not", "and", "or":
		return true
	}
	return false
}
