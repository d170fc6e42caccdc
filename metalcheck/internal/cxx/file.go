package cxx

import (
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

// String names the kind: file, namespace, class, ...
func (k ScopeKind) String() string { return scopeKindNames[k] }

// expression scopes sit inside a statement, which goes on after their closing brace.
func (k ScopeKind) expression() bool { return k == ScopeInit || k == ScopeLambda || k == ScopeBlock }

// declarative scopes hold declarations rather than statements.
func (k ScopeKind) declarative() bool {
	return k == ScopeFile || k == ScopeNamespace || k == ScopeClass
}

// Scope is one brace pair (or the file): what it is, where it opens and closes, the
// function it is in, the lock it holds throughout and the lock statements directly in it.
// Read it through its methods.
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
func (f *Function) Open() int32 { return f.open }

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
	names      Interner   // interned names (classes of instances)
	objcClass  string     // the @implementation being built, while build runs
	lines      lineCursor // line and column of the tokens findings and declarations point at
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

// Bytes returns the bytes of code token i; nil when i is out of range, so that look-behind
// and look-ahead at the edges of malformed input never panic.
func (m *File) Bytes(i int32) []byte {
	if i < 0 || int(i) >= len(m.code) {
		return nil
	}
	t := m.code[i]
	return m.src[t.Off:t.End]
}

// Is reports whether code token i is s (false out of range).
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

// Byte1 returns the byte of code token i when the token is one byte long (a one-byte
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

// IsIdent reports whether code token i is an identifier (false out of range).
func (m *File) IsIdent(i int32) bool {
	return i >= 0 && int(i) < len(m.code) && m.code[i].Kind == Ident
}

// Text is Bytes as a string.
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

// Statics returns copies of the function's local statics, in source order.
func (f *Function) Statics() []Decl {
	ds := make([]Decl, 0, len(f.statics))
	for _, d := range f.statics {
		ds = append(ds, *d)
	}
	slices.SortFunc(ds, func(a, b Decl) int { return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col)) })
	return ds
}
