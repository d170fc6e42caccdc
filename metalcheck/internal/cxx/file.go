package cxx

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
)

// ScopeKind says what a pair of braces is.
type ScopeKind uint8

const (
	ScopeFile      ScopeKind = iota
	ScopeNamespace           // namespace X { }, extern "C" { }
	ScopeClass               // class/struct/union body, ObjC ivar block
	ScopeEnum                // enum body
	ScopeFunction            // function or ObjC method body
	ScopeLambda              // C++ lambda body
	ScopeBlock               // ObjC block ^{ }
	ScopeControl             // if/else/for/while/do/switch/try/catch body
	ScopePlain               // bare { }, case block, @autoreleasepool
	ScopeInit                // brace initialiser
	ScopeSync                // @synchronized(x) { }
)

var scopeKindNames = [...]string{"file", "namespace", "class", "enum", "function", "lambda",
	"block", "control", "plain", "init", "synchronized"}

func (k ScopeKind) String() string { return scopeKindNames[k] }

// expression scopes sit inside a statement, which goes on after their closing brace.
func (k ScopeKind) expression() bool { return k == ScopeInit || k == ScopeLambda || k == ScopeBlock }

// declarative scopes hold declarations rather than statements.
func (k ScopeKind) declarative() bool {
	return k == ScopeFile || k == ScopeNamespace || k == ScopeClass
}

type Scope struct {
	kind   ScopeKind
	parent int32
	open   int32 // code-token index of '{' (-1 for the file)
	close  int32 // code-token index of '}' (len(code) when unclosed)
	fn     int32 // innermost enclosing function, -1 outside functions
	name   string
	// region names the lock a region scope holds throughout: @synchronized(x), a block or
	// lambda passed to dispatch_sync(q, ...) or std::call_once(flag, ...).
	region     string
	regionKind string
	// regionVia: the region's lock or queue is reached through another object
	// (stream->queue(), @synchronized(obj.lock)): one per object, not one per process.
	regionVia bool
	// dispatch says the scope is a block or lambda dispatched onto a serial queue
	// (dispatch_sync, dispatch_async, ...; not a global or the main queue), and queue
	// names that queue: its body runs on the queue, not where it is written.
	dispatch DispatchKind
	queue    string
	locks    []LockEvent
}

// DispatchKind says how a block runs on the queue it is dispatched onto.
type DispatchKind uint8

const (
	NotDispatched DispatchKind = iota
	DispatchedSync
	DispatchedAsync
)

// LockEvent is a lock taken (or released) by a statement; it holds after Pos until the end
// of its scope or a matching release. The model hands out copies.
type LockEvent struct {
	Pos     int32  // code-token index of the statement's ';'
	At      int32  // code-token index where the lock is named (for findings)
	Name    string // the mutex: last identifier of the argument (_streamMutex)
	Qual    string // its qualifier when written C::m
	Guard   string // guard variable (lock_guard<..> guard(m)), "" for m.lock()
	Release bool
	// Via: the mutex is reached through another object or an element (pools[i].mutex,
	// shard->mutex): one mutex per object, whatever its name.
	Via bool
}

// Function is a function or ObjC method with a body. Read it through its methods: the
// model is shared by every question asked about the file.
type Function struct {
	name      string // as written: MPSStream::synchronize, -[Foo bar:]
	bare      string // synchronize, bar:
	class     string // class whose member this is, "" for free functions
	headStart int32
	open      int32
	close     int32
	scope     int32
	ctor      bool
	// entryMacro: defined by TORCH_IMPL_FUNC(name)(...) or a macro like it, the way
	// structured operator kernels are.
	entryMacro bool
	statics    map[string]*Decl
}

// Name is the function's name as written: MPSStream::synchronize, -[Foo bar:].
func (f *Function) Name() string { return f.name }

// Bare is the name without its class: synchronize, bar:.
func (f *Function) Bare() string { return f.bare }

// Class is the class whose member the function is, "" for a free function.
func (f *Function) Class() string { return f.class }

// HeadStart is the code-token index where the function's declaration statement starts.
func (f *Function) HeadStart() int32 { return f.headStart }

// Open and Close are the code-token indexes of the body's braces (Close is the number of
// code tokens when the body is unclosed).
func (f *Function) Open() int32  { return f.open }
func (f *Function) Close() int32 { return f.close }

// Scope is the index of the body's scope.
func (f *Function) Scope() int32 { return f.scope }

// Ctor reports a constructor or destructor of its class.
func (f *Function) Ctor() bool { return f.ctor }

// EntryMacro reports a function defined by TORCH_IMPL_FUNC(name)(...) or a macro like it,
// the way structured operator kernels are.
func (f *Function) EntryMacro() bool { return f.entryMacro }

// Static returns a copy of the function-local static declared as name, if there is one.
func (f *Function) Static(name string) (Decl, bool) {
	if d := f.statics[name]; d != nil {
		return *d, true
	}
	return Decl{}, false
}

// HasStatic reports whether the function declares a local static called name.
func (f *Function) HasStatic(name string) bool { return f.statics[name] != nil }

// Decl is a variable declaration the audit knows about: a global, a static or non-static
// class member, or a function-local static. The model hands out copies.
type Decl struct {
	Name        string
	Class       string // class the member belongs to ("" for globals and locals)
	File        string
	Line, Col   int
	Static      bool // static member, namespace-scope variable, or function-local static
	Member      bool // non-static class member
	Local       bool // function-local static
	ThreadLocal bool
	Const       bool
	Container   bool
	Mutex       bool
	Atomic      bool // std::atomic<T>, std::atomic_int, ...
}

// Qualified is Class::Name, or Name outside a class.
func (d *Decl) Qualified() string {
	if d.Class != "" {
		return d.Class + "::" + d.Name
	}
	return d.Name
}

// File is one read source file: its code tokens, the brace scopes they sit in, the
// functions, declarations and lock statements. It is built once by Reader.Read and read
// only afterwards; its accessors take code-token, scope and function indexes. A File is
// used by one goroutine (the line cursor behind Pos moves as it is asked).
type File struct {
	path       string
	src        []byte
	code       []Token // code tokens: no comments, directives or tokens of #if 0 branches
	directives []Token
	scopeOf    []int32
	match      []int32
	scopes     []Scope
	funcs      []Function
	decls      []Decl
	instances  []Instance
	bases      []ClassBase
	names      map[string]string // interned names (classes of instances)
	objcClass  string            // the @implementation being built, while build runs
	lines      lineCursor        // line and column of the tokens findings and declarations point at
}

// Instance records that a declaration holds objects of a class: one process-wide object
// (a static, global or function-local static of that type, or a pointer to one), or many
// (thread_local, a container or an array of them). The model hands out copies.
type Instance struct {
	Class string
	Many  bool
	// Pooled: held in a container (a free list, a pool), so that one object is handed
	// out, returned and handed out again.
	Pooled bool
}

// ClassBase records "class Derived : public Base": a process-wide Derived object is also a
// process-wide Base, with Base's members. The model hands out copies.
type ClassBase struct {
	Class, Base string
}

// tb returns the bytes of code token i; nil when i is out of range, so that look-behind
// and look-ahead at the edges of malformed input never panic.
func (m *File) Bytes(i int32) []byte {
	if i < 0 || int(i) >= len(m.code) {
		return nil
	}
	t := m.code[i]
	return m.src[t.Off:t.End]
}

func (m *File) Is(i int32, s string) bool {
	if i < 0 || int(i) >= len(m.code) {
		return false
	}
	t := &m.code[i]
	if int(t.End-t.Off) != len(s) || t.first != s[0] {
		return false
	}
	return len(s) == 1 || string(m.src[t.Off:t.End]) == s
}

// b1 returns the byte of code token i when the token is one byte long (a one-byte
// punctuator, or a one-letter name), else 0: m.Byte1(i) == '<' is m.Is(i, "<"), read once
// for a switch over several punctuators.
func (m *File) Byte1(i int32) byte {
	if i < 0 || int(i) >= len(m.code) {
		return 0
	}
	if t := &m.code[i]; t.End-t.Off == 1 {
		return t.first
	}
	return 0
}

func (m *File) IsIdent(i int32) bool {
	return i >= 0 && int(i) < len(m.code) && m.code[i].Kind == Ident
}

func (m *File) Text(i int32) string { return string(m.Bytes(i)) }

// isUpper reports whether b has no lower-case letter (strings.ToUpper(b) == b), without
// converting it.
func isUpper(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return strings.ToUpper(string(b)) == string(b)
		}
		if 'a' <= c && c <= 'z' {
			return false
		}
	}
	return true
}

// Read tokenizes src and builds its scope structure, declarations and locks.
func Read(path string, src []byte) *File {
	return new(Reader).Read(path, src)
}

// Reader holds the per-file buffers one worker reuses from file to file: the File that
// Read returns is valid until the next Read on the same Reader. Callers copy what they
// keep (Decls, Instances and Bases return copies).
type Reader struct {
	code, dirs     []Token
	scopeOf, match []int32
	scopes         []Scope
	funcs          []Function
	decls          []Decl
}

// Read tokenizes src and builds its model, reusing the reader's buffers.
func (a *Reader) Read(path string, src []byte) *File {
	clear(a.funcs) // drop the previous file's maps before reuse
	m := &File{path: path, src: src, scopes: a.scopes[:0], funcs: a.funcs[:0], decls: a.decls[:0]}
	m.code, m.directives = lexCode(a.code, a.dirs, src)
	n := len(m.code)
	if cap(a.scopeOf) < n {
		a.scopeOf = make([]int32, n, n+n/4)
		a.match = make([]int32, n, n+n/4)
	}
	m.scopeOf, m.match = a.scopeOf[:n], a.match[:n]
	m.build()
	a.code, a.dirs, a.scopes, a.funcs, a.decls = m.code, m.directives, m.scopes, m.funcs, m.decls
	return m
}

// build walks the code tokens once, matching brackets, classifying every brace pair and
// recording declarations, functions and lock statements.
func (m *File) build() {
	n := int32(len(m.code))
	if len(m.scopeOf) != int(n) {
		m.scopeOf = make([]int32, n)
		m.match = make([]int32, n)
	}
	for i := range m.match {
		m.match[i] = -1
	}
	m.scopes = append(m.scopes, Scope{kind: ScopeFile, parent: -1, open: -1, close: n, fn: -1})
	stack := []int32{0}
	var parens []int32 // open ( and [
	var stmts []int32  // statement starts saved across expression scopes
	stmt := int32(0)
	code, scopeOf := m.code, m.scopeOf[:n]
	for i := int32(0); i < n; i++ {
		cur := stack[len(stack)-1]
		// Most tokens only belong to the current scope: a tight loop takes them up to
		// the next bracket, semicolon or ObjC @keyword.
		for ; i < n; i++ {
			t := &code[i]
			if t.End-t.Off == 1 && buildStops[t.first] || t.first == '@' {
				break
			}
			scopeOf[i] = cur
		}
		if i == n {
			break
		}
		scopeOf[i] = cur
		t := code[i]
		if t.Kind == Ident && t.End-t.Off > 1 && t.first == '@' {
			switch {
			case m.Is(i, "@end"):
				stmt = i + 1
				m.objcClass = ""
			case m.Is(i, "@implementation") && m.IsIdent(i+1):
				m.objcClass = m.Text(i + 1)
			}
			continue
		}
		if t.Kind != Punct || t.End-t.Off != 1 {
			continue
		}
		switch c := t.first; c {
		case '(', '[':
			parens = append(parens, i)
		case ')', ']':
			want := byte('(')
			if c == ']' {
				want = '['
			}
			if k := len(parens); k > 0 && m.code[parens[k-1]].first == want && parens[k-1] > m.scopes[cur].open {
				o := parens[k-1]
				parens = parens[:k-1]
				m.match[o], m.match[i] = i, o
			}
		case '{':
			var innerParen int32 = -1
			if k := len(parens); k > 0 && parens[k-1] > m.scopes[cur].open {
				innerParen = parens[k-1]
			}
			s := m.openScope(i, stmt, cur, innerParen)
			stack = append(stack, s)
			m.scopeOf[i] = s
			if m.scopes[s].kind.expression() {
				// The statement holding a lambda, block or initialiser goes on after
				// its closing brace; inside, statements start afresh.
				stmts = append(stmts, stmt)
			}
			stmt = i + 1
		case '}':
			if len(stack) == 1 {
				stmt = i + 1
				continue
			}
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			sc := &m.scopes[s]
			sc.close = i
			m.scopeOf[i] = s
			if sc.open >= 0 {
				m.match[sc.open], m.match[i] = i, sc.open
			}
			for len(parens) > 0 && parens[len(parens)-1] > sc.open {
				parens = parens[:len(parens)-1]
			}
			if sc.kind == ScopeFunction && sc.fn >= 0 {
				m.funcs[sc.fn].close = i
			}
			if sc.kind.expression() && len(stmts) > 0 {
				stmt = stmts[len(stmts)-1]
				stmts = stmts[:len(stmts)-1]
			} else {
				stmt = i + 1
			}
		case ';':
			if k := len(parens); k > 0 && parens[k-1] > m.scopes[cur].open {
				continue // for (;;)
			}
			m.endStatement(stmt, i, cur)
			stmt = i + 1
		}
	}
	for _, s := range stack[1:] {
		m.scopes[s].close = n
		if f := m.scopes[s].fn; f >= 0 && m.scopes[s].kind == ScopeFunction {
			m.funcs[f].close = n
		}
	}
}

// buildStops are the one-byte tokens build acts on.
var buildStops = func() (t [256]bool) {
	for _, c := range []byte("()[]{};") {
		t[c] = true
	}
	return t
}()

// isControlWord: statements whose braces are control blocks, not functions or classes.
func isControlWord(b []byte) bool {
	switch string(b) {
	case "if", "else", "for", "while", "do", "switch", "try", "catch", "@try", "@catch",
		"@finally":
		return true
	}
	return false
}

// CallerHeld is the lock name of a function whose name says its caller holds the lock; it
// is not an identifier, so it never matches a real lock.
const CallerHeld = "<caller>"

// isRegionCallee: calls whose block or lambda argument runs with a lock held (a serial
// queue counts as a lock).
func isRegionCallee(b []byte) bool {
	switch string(b) {
	case "dispatch_sync", "dispatch_sync_with_rethrow", "dispatch_barrier_sync", "call_once":
		return true
	}
	return false
}

// DispatchQueueArg says which argument of a GCD dispatch call names the queue its block
// runs on (0 for the first), and whether the call waits for the block; -1 for other calls.
func DispatchQueueArg(b []byte) (int, DispatchKind) {
	switch string(b) {
	case "dispatch_sync", "dispatch_sync_with_rethrow", "dispatch_barrier_sync":
		return 0, DispatchedSync
	case "dispatch_async_and_wait":
		return 0, DispatchedSync
	case "dispatch_async", "dispatch_barrier_async":
		return 0, DispatchedAsync
	case "dispatch_after", "dispatch_group_async", "dispatch_group_notify":
		return 1, DispatchedAsync
	}
	return -1, NotDispatched
}

// dispatchTarget marks sc, the block or lambda opening at brace as an argument of the
// call whose parenthesis is at paren, as dispatched onto a serial queue when the call is
// a GCD dispatch whose queue is neither a global (concurrent) queue nor the main queue.
func (m *File) dispatchTarget(sc *Scope, paren, brace int32) {
	arg, kind := DispatchQueueArg(m.Bytes(paren - 1))
	if kind == NotDispatched {
		return
	}
	s := paren + 1
	for ; arg > 0; arg-- {
		s = m.TopLevelComma(s, brace) + 1
	}
	e := m.TopLevelComma(s, brace)
	if s >= e || e >= brace {
		return // the block is the queue argument, or there is none
	}
	if m.HasToken(s, e, "dispatch_get_global_queue") || m.HasToken(s, e, "dispatch_get_main_queue") {
		return
	}
	sc.dispatch, sc.queue = kind, m.ExprText(s, e)
}

// ExprText is the text of a short expression [s, e) for a message (stream->queue(),
// _serialQueue): its tokens without spaces, but between two names; the last name when
// it is longer than a dozen tokens.
func (m *File) ExprText(s, e int32) string {
	if e-s > 12 {
		return m.LastName(s, e)
	}
	var sb strings.Builder
	for k := s; k < e; k++ {
		if k > s && (m.IsIdent(k) || m.code[k].Kind == Number) && (m.IsIdent(k-1) || m.code[k-1].Kind == Number) {
			sb.WriteByte(' ')
		}
		sb.Write(m.Bytes(k))
	}
	return sb.String()
}

// ThroughObject reports whether the expression [s, e) reaches its last name through
// another object: a.b, p->b, a[i].b, q->queue() (not this-> or self->).
func (m *File) ThroughObject(s, e int32) bool {
	for j := s; j < e; j++ {
		if m.Is(j, ".") || m.Is(j, "->") || m.Is(j, "[") {
			if m.Is(j-1, "this") || m.Is(j-1, "self") {
				continue
			}
			return true
		}
	}
	return false
}

// openScope classifies the '{' at i whose statement started at stmt.
func (m *File) openScope(i, stmt, cur, innerParen int32) int32 {
	parent := &m.scopes[cur]
	sc := Scope{parent: cur, open: i, close: int32(len(m.code)), fn: parent.fn}
	kind := ScopePlain
	head := m.StripPrefix(stmt, i)
	switch {
	case m.isBlockOpen(i):
		kind = ScopeBlock
	case m.isLambdaOpen(i):
		kind = ScopeLambda
	case head < i && m.Is(head, "@synchronized"):
		kind = ScopeSync
		if m.Is(head+1, "(") && m.match[head+1] > head+1 {
			sc.region = m.LastIdent(head+2, m.match[head+1])
			sc.regionKind = "@synchronized"
		}
	case head < i && isControlWord(m.Bytes(head)):
		kind = ScopeControl
	case head < i && m.Is(head, "@autoreleasepool"):
		kind = ScopePlain
	case head < i && (m.Is(head, "namespace") || m.Is(head, "inline") && m.Is(head+1, "namespace") ||
		m.Is(head, "extern") && head+1 < int32(len(m.code)) && m.code[head+1].Kind == String):
		kind = ScopeNamespace
	case head == i:
		if stmt < i && m.isObjCHeader(stmt) {
			kind = ScopeClass
		}
	default:
		kind = m.classifyHead(head, i, parent.kind)
	}
	sc.kind = kind
	if (kind == ScopeLambda || kind == ScopeBlock) && innerParen > 0 && m.Is(innerParen, "(") {
		// The callee is the name before the parenthesis (lastIdent of that one token).
		if m.IsIdent(innerParen-1) && isRegionCallee(m.Bytes(innerParen-1)) {
			callee := m.Text(innerParen - 1)
			end := m.TopLevelComma(innerParen+1, i)
			sc.region = m.LastName(innerParen+1, end)
			if sc.region == "" {
				sc.region = callee
			}
			sc.regionKind = callee
			sc.regionVia = m.ThroughObject(innerParen+1, end)
		}
		if m.IsIdent(innerParen - 1) {
			m.dispatchTarget(&sc, innerParen, i)
		}
	}
	idx := int32(len(m.scopes))
	switch kind {
	case ScopeClass:
		sc.name = m.className(stmt, head, i)
		m.classBases(sc.name, head, i)
	case ScopeFunction:
		f := m.newFunction(stmt, head, i, cur)
		f.scope = idx
		if strings.HasSuffix(f.bare, "Locked") || strings.HasSuffix(f.bare, "_locked") {
			// By convention the caller of fooLocked() / foo_locked() holds the lock.
			sc.region, sc.regionKind = CallerHeld, "caller"
		}
		sc.fn = int32(len(m.funcs))
		m.funcs = append(m.funcs, f)
	}
	m.scopes = append(m.scopes, sc)
	return idx
}

// classifyHead decides between class, enum, function, initialiser and plain block for a
// head that is not a control statement, lambda or block.
func (m *File) classifyHead(head, i int32, parent ScopeKind) ScopeKind {
	prev := i - 1
	if prev >= 0 && m.code[prev].Kind == Punct {
		switch string(m.Bytes(prev)) {
		case "=", ",", "(", "[", "{", "?", "<", "return", "+", "-", "*", "&&", "||", "!", "==":
			return ScopeInit
		}
	}
	if m.Is(prev, "return") {
		return ScopeInit
	}
	first := head
	if m.Is(first, "typedef") {
		first++
	}
	for m.Is(first, "static") || m.Is(first, "const") || m.Is(first, "constexpr") || m.Is(first, "inline") {
		first++
	}
	hasParen := m.topLevelParen(head, i) >= 0
	switch {
	case m.Is(first, "class") || m.Is(first, "struct") || m.Is(first, "union"):
		if !hasParen {
			return ScopeClass
		}
	case m.Is(first, "enum"):
		return ScopeEnum
	}
	if parent.declarative() {
		if m.Is(head, "-") || m.Is(head, "+") {
			return ScopeFunction
		}
		if hasParen {
			// Foo::Foo() : a_{1}, b_(2) { ... } — the braces after a_ initialise a member.
			if m.CtorColon(head, i) >= 0 && (m.IsIdent(prev) || m.Is(prev, ">")) {
				return ScopeInit
			}
			return ScopeFunction
		}
		return ScopeInit
	}
	if m.IsIdent(prev) || m.Is(prev, ">") {
		return ScopeInit // T x{...}, std::vector<int>{...}
	}
	return ScopePlain
}

// isBlockOpen: ^{, ^(args){, ^Type(args){.
func (m *File) isBlockOpen(i int32) bool {
	p := i - 1
	if m.Is(p, "^") {
		return true
	}
	if m.Is(p, ")") {
		o := m.match[p]
		if o <= 0 {
			return false
		}
		if m.Is(o-1, "^") {
			return true
		}
		return m.IsIdent(o-1) && m.Is(o-2, "^")
	}
	return false
}

// isLambdaSpecifier: words between a lambda's parameters and its body.
func isLambdaSpecifier(b []byte) bool {
	switch string(b) {
	case "mutable", "constexpr", "consteval", "noexcept", "static":
		return true
	}
	return false
}

// isLambdaOpen: [..]{, [..](..){, [..](..) mutable -> T {.
func (m *File) isLambdaOpen(i int32) bool {
	k := i - 1
	for steps := 0; k >= 0 && steps < 16; steps++ {
		switch {
		case m.IsIdent(k) && isLambdaSpecifier(m.Bytes(k)):
			k--
			continue
		case m.Is(k, ")") && m.match[k] > 0 && m.Is(m.match[k]-1, "noexcept"):
			k = m.match[k] - 2
			continue
		}
		break
	}
	if k < 0 {
		return false
	}
	if !m.Is(k, ")") && !m.Is(k, "]") {
		// Trailing return type: look back for '->' over type-ish tokens.
		j := k
		for steps := 0; j >= 0 && steps < 12; steps++ {
			if m.Is(j, "->") {
				break
			}
			if !(m.IsIdent(j) || m.Is(j, "::") || m.Is(j, "<") || m.Is(j, ">") || m.Is(j, "*") || m.Is(j, "&") || m.Is(j, ",")) {
				return false
			}
			j--
		}
		if !m.Is(j, "->") {
			return false
		}
		k = j - 1
		for k >= 0 && m.IsIdent(k) && isLambdaSpecifier(m.Bytes(k)) {
			k--
		}
	}
	if m.Is(k, "]") {
		o := m.match[k]
		return o >= 0 && !m.Is(o-1, "operator") && !m.IsIdent(o-1) && !m.Is(o-1, ")") && !m.Is(o-1, "]")
	}
	if m.Is(k, ")") {
		o := m.match[k]
		if o <= 0 || !m.Is(o-1, "]") {
			return false
		}
		ob := m.match[o-1]
		return ob >= 0 && !m.Is(ob-1, "operator") && !m.IsIdent(ob-1) && !m.Is(ob-1, ")") && !m.Is(ob-1, "]")
	}
	return false
}

// StripPrefix skips labels, access specifiers, template<...>, attributes and an ObjC
// @implementation/@interface header at the start of [s, e); it returns the first index left.
func (m *File) StripPrefix(s, e int32) int32 {
	for s < e {
		switch m.code[s].Kind {
		case Ident:
			switch string(m.Bytes(s)) {
			case "@implementation", "@interface", "@protocol":
				s = m.objcHeaderEnd(s, e)
				continue
			case "public", "private", "protected", "default":
				if m.Is(s+1, ":") {
					s += 2
					continue
				}
				return s
			case "@public", "@private", "@protected", "@package":
				s++
				continue
			case "case":
				j := s + 1
				for j < e && !m.Is(j, ":") {
					j++
				}
				s = j + 1
				continue
			case "template":
				if m.Is(s+1, "<") {
					s = m.angleEnd(s+1, e)
					continue
				}
				return s
			case "__attribute__", "alignas", "__declspec":
				if m.Is(s+1, "(") && m.match[s+1] > 0 && m.match[s+1] < e {
					s = m.match[s+1] + 1
				} else {
					s++
				}
				continue
			}
			if m.Is(s+1, ":") && s+2 <= e && !isControlWord(m.Bytes(s)) {
				s += 2 // goto label
				continue
			}
			if m.Is(s+1, "(") && isMacroName(m.Bytes(s)) {
				// A macro invocation without a semicolon, C10_DEFINE_REGISTRY(R, T) or
				// REGISTER_DISPATCH(stub, fn), before the next declaration: without this
				// the rest of the file would read as the body of a function named after
				// the macro. TORCH_IMPL_FUNC(name)(args) is followed by '(' and stays.
				if c := m.match[s+1]; c > s+1 && c+1 < e && m.IsIdent(c+1) && !afterParams[string(m.Bytes(c+1))] {
					s = c + 1
					continue
				}
			}
			return s
		case Punct:
			if m.Is(s, "[") && m.Is(s+1, "[") {
				j := m.match[s]
				if j < 0 || j >= e {
					return s
				}
				s = j + 1
				continue
			}
			return s
		default:
			return s
		}
	}
	return s
}

func (m *File) isObjCHeader(s int32) bool {
	return m.Is(s, "@implementation") || m.Is(s, "@interface") || m.Is(s, "@protocol")
}

// objcHeaderEnd skips "@implementation Name [: Super] [(Category)] [<Protocols>]".
func (m *File) objcHeaderEnd(s, e int32) int32 {
	s++
	if m.IsIdent(s) {
		s++
	}
	if m.Is(s, ":") && m.IsIdent(s+1) {
		s += 2
	}
	if m.Is(s, "(") && m.match[s] > s && m.match[s] < e {
		s = m.match[s] + 1
	}
	if m.Is(s, "<") {
		s = m.angleEnd(s, e)
	}
	if s > e {
		s = e
	}
	return s
}

// angleEnd returns the index after the '>' closing the '<' at s (>> closes two).
func (m *File) angleEnd(s, e int32) int32 {
	depth := 0
	for j := s; j < e; j++ {
		switch m.Byte1(j) {
		case '<':
			depth++
		case '>':
			depth--
		case '(':
			if m.match[j] > j && m.match[j] < e {
				j = m.match[j]
			}
		case 0:
			if m.Is(j, ">>") {
				depth -= 2
			}
		}
		if depth <= 0 {
			return j + 1
		}
	}
	return e
}

// topLevelParen returns the first '(' in [s, e) outside angle brackets, or -1.
func (m *File) topLevelParen(s, e int32) int32 {
	for j := s; j < e; j++ {
		if m.Is(j, "(") {
			return j
		}
		if m.Is(j, "<") && j > s && m.IsIdent(j-1) {
			k := m.angleEnd(j, e)
			if k > j {
				j = k - 1
			}
		}
	}
	return -1
}

// CtorColon returns the index of a constructor-initialiser ':' (after a top-level ')') in
// [s, e), or -1.
func (m *File) CtorColon(s, e int32) int32 {
	seenParen := false
	for j := s; j < e; j++ {
		switch c := m.Byte1(j); c {
		case '(', '[':
			if m.match[j] > j && m.match[j] < e {
				if c == '(' {
					seenParen = true
				}
				j = m.match[j]
			}
		case '{':
			if m.match[j] > j && m.match[j] < e {
				j = m.match[j]
			}
		case ':':
			if seenParen {
				return j
			}
		}
	}
	return -1
}

// TopLevelComma returns the first ',' in [s, e) outside brackets, or e.
func (m *File) TopLevelComma(s, e int32) int32 {
	for j := s; j < e; j++ {
		switch m.Byte1(j) {
		case '(', '[', '{':
			if m.match[j] > j {
				j = m.match[j]
			}
		case ',':
			return j
		}
	}
	return e
}

// LastIdent returns the last identifier in [s, e) that is not a call's name.
func (m *File) LastIdent(s, e int32) string {
	if s < 0 {
		s = 0
	}
	best := int32(-1)
	for j := s; j < e && int(j) < len(m.code); j++ {
		if m.IsIdent(j) && !m.Is(j+1, "(") {
			best = j
		}
	}
	if best >= 0 {
		return m.Text(best)
	}
	for j := e - 1; j >= s && j >= 0; j-- {
		if m.IsIdent(j) {
			return m.Text(j)
		}
	}
	return ""
}

// LastName returns the last identifier in [s, e), a call's name included (q for
// dispatch_sync(q, ...), queue for stream->queue()).
func (m *File) LastName(s, e int32) string {
	for j := e - 1; j >= s && j >= 0; j-- {
		if m.IsIdent(j) {
			return m.Text(j)
		}
	}
	return ""
}

// className finds the name in "class [attrs] Name [final] [: bases] {".
func (m *File) className(stmt, head, i int32) string {
	if m.isObjCHeader(stmt) && m.IsIdent(stmt+1) {
		return m.Text(stmt + 1)
	}
	name := ""
	for j := head; j < i; j++ {
		if m.Is(j, ":") {
			break
		}
		if m.Is(j, "<") && j > head && m.IsIdent(j-1) {
			j = m.angleEnd(j, i) - 1
			continue
		}
		if m.IsIdent(j) {
			switch string(m.Bytes(j)) {
			case "class", "struct", "union", "final", "typedef", "static", "const", "alignas":
			default:
				if b := m.Bytes(j); !bytes.HasSuffix(b, []byte("_API")) && !bytes.HasSuffix(b, []byte("_EXPORT")) {
					name = m.Text(j)
				}
			}
		}
	}
	return name
}

// classBases records the base classes named after the ':' of a class head [head, i).
func (m *File) classBases(class string, head, i int32) {
	if class == "" {
		return
	}
	j := head
	for j < i && !m.Is(j, ":") {
		if m.Is(j, "<") && j > head && m.IsIdent(j-1) {
			j = m.angleEnd(j, i)
			continue
		}
		j++
	}
	for j++; j < i; j++ {
		if m.Is(j, "<") && m.IsIdent(j-1) {
			j = m.angleEnd(j, i) - 1
			continue
		}
		if m.IsIdent(j) && !m.Is(j+1, "::") {
			switch b := m.Text(j); b {
			case "public", "private", "protected", "virtual", "final":
			default:
				m.bases = append(m.bases, ClassBase{Class: class, Base: b})
			}
		}
	}
}

// isMacroName: an all-capitals name with an underscore (C10_DEFINE_REGISTRY), as macros
// are spelled.
func isMacroName(b []byte) bool {
	under := false
	for _, c := range b {
		switch {
		case c == '_':
			under = true
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return under && len(b) > 2
}

// afterParams are the words that may follow a function's parameter list.
var afterParams = map[string]bool{"const": true, "noexcept": true, "override": true, "final": true,
	"volatile": true, "throw": true, "requires": true, "mutable": true, "__attribute__": true, "try": true}

// isNotFuncName: words before a parenthesis in a function head that do not name it.
func isNotFuncName(b []byte) bool {
	switch string(b) {
	case "noexcept", "throw", "alignas", "__attribute__", "decltype", "__declspec", "requires",
		"sizeof":
		return true
	}
	return false
}

// newFunction records the function whose body opens at i.
func (m *File) newFunction(stmt, head, i, cur int32) Function {
	f := Function{headStart: stmt, open: i, close: int32(len(m.code))}
	if m.scopes[cur].kind == ScopeClass {
		f.class = m.scopes[cur].name
	}
	objcClass := m.objcClass
	if m.Is(head, "-") || m.Is(head, "+") {
		var sel strings.Builder
		j := head + 1
		if m.Is(j, "(") && m.match[j] > j {
			j = m.match[j] + 1
		}
		first := ""
		for ; j < i; j++ {
			if m.Is(j, "(") && m.match[j] > j {
				j = m.match[j]
				continue
			}
			if m.IsIdent(j) && m.Is(j+1, ":") {
				sel.WriteString(m.Text(j) + ":")
			} else if first == "" && m.IsIdent(j) {
				first = m.Text(j)
			}
		}
		f.bare = sel.String()
		if f.bare == "" {
			f.bare = first
		}
		if f.class == "" {
			f.class = objcClass
		}
		f.name = m.Text(head) + "[" + f.class + " " + f.bare + "]"
		return f
	}
	end := i
	if c := m.CtorColon(head, i); c >= 0 {
		end = c
	}
	// The name stands before the first parameter list: TORCH_IMPL_FUNC(name)(args) names
	// the function inside the macro's parentheses.
	for j := head; j < end; j++ {
		if m.Is(j, "<") && j > head && m.IsIdent(j-1) && !m.Is(j-1, "operator") {
			j = m.angleEnd(j, end) - 1
			continue
		}
		if !m.Is(j, "(") {
			continue
		}
		nameAt := j - 1
		if m.Is(nameAt, ">") { // template<..> specialisation: f<T>(...)
			for k := nameAt; k > head; k-- {
				if m.Is(k, "<") {
					nameAt = k - 1
					break
				}
			}
		}
		if m.IsIdent(nameAt) && isNotFuncName(m.Bytes(nameAt)) {
			if m.match[j] > j {
				j = m.match[j]
			}
			continue
		}
		if close := m.match[j]; close > j && m.Is(close+1, "(") && m.IsIdent(nameAt) && isUpper(m.Bytes(nameAt)) {
			f.bare = m.LastIdent(j+1, close)
			f.name = f.bare
			f.entryMacro = true
			break
		}
		switch {
		case m.Is(nameAt, "operator") && m.Is(j+1, ")"):
			f.bare = "operator()"
		case m.Is(nameAt, "]") && m.Is(nameAt-1, "[") && m.Is(nameAt-2, "operator"):
			f.bare = "operator[]"
			nameAt -= 2
		case m.IsIdent(nameAt):
			f.bare = m.Text(nameAt)
			if m.Is(nameAt-1, "~") {
				f.bare = "~" + f.bare
				nameAt--
			}
		case nameAt > head && m.Is(nameAt-1, "operator"):
			f.bare = "operator" + m.Text(nameAt)
			nameAt--
		default:
			f.bare = m.Text(nameAt)
		}
		// The qualifiers, A::B:: before the name: the name is A::B::bare, the class B;
		// built in one string, of which class and bare are parts.
		q := nameAt
		for k := nameAt - 1; k > head && m.Is(k, "::") && m.IsIdent(k-1); k -= 2 {
			q = k - 1
		}
		if q == nameAt {
			f.name = f.bare
			break
		}
		var sb strings.Builder
		size := len(f.bare)
		for k := q; k < nameAt; k += 2 {
			size += len(m.Bytes(k)) + 2
		}
		sb.Grow(size)
		classAt := 0
		for k := q; k < nameAt; k += 2 {
			classAt = sb.Len()
			sb.Write(m.Bytes(k))
			sb.WriteString("::")
		}
		sb.WriteString(f.bare)
		f.name = sb.String()
		f.class = f.name[classAt : len(f.name)-len(f.bare)-2]
		f.bare = f.name[len(f.name)-len(f.bare):]
		break
	}
	if f.class == "" {
		f.class = objcClass
	}
	if f.class != "" && !strings.Contains(f.name, "::") {
		f.name = f.class + "::" + f.bare
	}
	if f.class != "" && (f.bare == f.class || f.bare == "~"+f.class) {
		f.ctor = true
	}
	return f
}

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
	s = m.StripPrefix(s, e)
	if s >= e {
		return
	}
	if m.Is(s, "@property") {
		s++
		if m.Is(s, "(") && m.match[s] > s && m.match[s] < e {
			s = m.match[s] + 1
		}
	}
	if s >= e || isDeclSkip(m.Bytes(s)) {
		return
	}
	if (m.Is(s, "class") || m.Is(s, "struct") || m.Is(s, "union") || m.Is(s, "enum")) && e-s <= 3 {
		return // forward declaration
	}
	d := Decl{File: m.path}
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
			goto typ
		}
	}
typ:
	typeStart := s
	stop := e
	angle := 0
scan:
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
			stop = j
			break scan
		}
	}
	nameAt := stop - 1
	if !m.IsIdent(nameAt) || nameAt <= typeStart && !m.Is(nameAt-1, "::") {
		return
	}
	qualStart := nameAt
	for qualStart-2 >= typeStart && m.Is(qualStart-1, "::") && m.IsIdent(qualStart-2) {
		qualStart -= 2
	}
	if qualStart <= typeStart {
		return // no type: an expression or a macro call
	}
	star := false
	for j := typeStart; j < qualStart; j++ {
		t := m.Bytes(j)
		if m.code[j].Kind == Ident {
			switch string(t) {
			case "operator":
				return
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
	if m.Is(stop, "(") && !d.Container && !d.Mutex && !(fn >= 0 || m.objectArgs(stop, e)) {
		return // a function declaration
	}
	if star {
		d.Const = false
	}
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
	// m.lock(); m->lock(); m.unlock();
	if e-s >= 4 && m.Is(e-1, ")") && m.Is(e-2, "(") && (m.Is(e-4, ".") || m.Is(e-4, "->")) {
		op := m.Text(e - 3)
		if op == "lock" || op == "unlock" || op == "lock_shared" || op == "unlock_shared" {
			if !m.IsIdent(e - 5) {
				return nil, false
			}
			name := m.Text(e - 5)
			via := (m.Is(e-6, ".") || m.Is(e-6, "->")) && !m.Is(e-7, "this") && !m.Is(e-7, "self") || m.Is(e-6, "]")
			return []LockEvent{{Pos: e, At: e - 5, Name: name, Release: strings.HasPrefix(op, "un"), Via: via}}, true
		}
	}
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
		return nil, false
	}
	j++
	if m.Is(j, "<") {
		j = m.angleEnd(j, e)
	}
	guard := ""
	if m.IsIdent(j) {
		guard = m.Text(j)
		j++
	} else if m.IsIdent(s+1) && m.Is(s, "auto") {
		guard = m.Text(s + 1)
	}
	if !(m.Is(j, "(") || m.Is(j, "{")) || m.match[j] <= j {
		return nil, false
	}
	close := m.match[j]
	var evs []LockEvent
	deferred := false
	for a := j + 1; a < close; {
		b := m.TopLevelComma(a, close)
		arg := m.LastIdent(a, b)
		switch arg {
		case "defer_lock", "try_to_lock":
			deferred = true
		case "adopt_lock", "":
		default:
			ev := LockEvent{Pos: e, Name: arg, Guard: guard}
			for k := a; k < b; k++ {
				if m.IsIdent(k) && string(m.Bytes(k)) == arg {
					ev.At = k
					if m.Is(k-1, "::") && m.IsIdent(k-2) {
						ev.Qual = m.Text(k - 2)
					}
				}
			}
			ev.Via = m.ThroughObject(a, ev.At)
			evs = append(evs, ev)
		}
		a = b + 1
	}
	if deferred {
		// Held only after guard.lock(); remember which mutex the guard owns.
		for k := range evs {
			evs[k].Release = true
		}
	}
	return evs, len(evs) > 0
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

// intern returns b as a string shared by every occurrence in the file.
func (m *File) intern(b []byte) string {
	if s, ok := m.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if m.names == nil {
		m.names = map[string]string{}
	}
	m.names[s] = s
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

// localScanLimit is how many questions about one function's locals are answered by
// scanning its tokens for the name before its set of locals is built (see IsLocal).
const localScanLimit = 4

// Locals answers whether a name is a parameter or non-static local of a function of a
// File. It keeps its answers beside the model, which stays read-only; Reset points it at
// the next file and reuses its memory.
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

// NewLocals returns the locals of m's functions.
func NewLocals(m *File) *Locals {
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

// Statics returns copies of the function's local statics, in source order.
func (f *Function) Statics() []Decl {
	ds := make([]Decl, 0, len(f.statics))
	for _, d := range f.statics {
		ds = append(ds, *d)
	}
	slices.SortFunc(ds, func(a, b Decl) int { return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col)) })
	return ds
}
