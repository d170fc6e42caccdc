package cxx

import (
	"iter"
	"slices"
	"unicode/utf8"
)

// The accessors below are the model's whole reading surface. Indexes are code-token
// indexes (0 <= i < Len()), scope indexes (0 is the file) and function indexes; byte
// slices alias the source given to Read and must not be modified; slices of declarations
// are copies.

// Path is the file's path as given to Read.
func (m *File) Path() string { return m.path }

// Len is the number of code tokens.
func (m *File) Len() int32 { return int32(len(m.code)) }

// Tok returns code token i.
func (m *File) Tok(i int32) Token { return m.code[i] }

// TokenBytes returns the source bytes of t, a code token or a directive of this file.
func (m *File) TokenBytes(t Token) []byte { return m.src[t.Off:t.End] }

// Match returns the index of the bracket matching the one at i ((, [, {, and their
// closers), or -1 when i is no bracket or is unmatched.
func (m *File) Match(i int32) int32 { return m.match[i] }

// ScopeOf returns the index of the innermost scope holding code token i (a brace belongs
// to the scope it opens or closes).
func (m *File) ScopeOf(i int32) int32 { return m.scopeOf[i] }

// NumScopes is the number of scopes, the file's own (index 0) included.
func (m *File) NumScopes() int32 { return int32(len(m.scopes)) }

// Scope returns scope s.
func (m *File) Scope(s int32) *Scope { return &m.scopes[s] }

// NumFuncs is the number of functions with a body.
func (m *File) NumFuncs() int32 { return int32(len(m.funcs)) }

// Func returns function fi.
func (m *File) Func(fi int32) *Function { return &m.funcs[fi] }

// Decls returns a copy of the file's declarations (globals, members, statics), in source
// order; function-local statics are the functions' (Function.Static).
func (m *File) Decls() []Decl { return slices.Clone(m.decls) }

// Instances returns the classes the file's declarations hold objects of (shares the
// backing array only with a previous call: a copy).
func (m *File) Instances() []Instance { return slices.Clone(m.instances) }

// Bases returns a copy of the base classes named by the file's class heads.
func (m *File) Bases() []ClassBase { return slices.Clone(m.bases) }

// NumDirectives is the number of preprocessor directives.
func (m *File) NumDirectives() int { return len(m.directives) }

// Directive returns directive k.
func (m *File) Directive(k int) Token { return m.directives[k] }

// Pos returns the 1-based line and byte column of t, a code token or a directive of this
// file. Asking in (about) source order costs one pass over the source in all.
func (m *File) Pos(t Token) (line, col int) { return m.lines.pos(m.src, int(t.Off)) }

// HasToken says whether any token in [from, to) is word.
func (m *File) HasToken(from, to int32, word string) bool {
	for k := from; k < to; k++ {
		if m.Is(k, word) {
			return true
		}
	}
	return false
}

// Kind says what the scope's braces are.
func (sc *Scope) Kind() ScopeKind { return sc.kind }

// Parent is the index of the enclosing scope, -1 for the file.
func (sc *Scope) Parent() int32 { return sc.parent }

// Open is the code-token index of the '{' (-1 for the file); Close that of the '}' (Len()
// when unclosed).
func (sc *Scope) Open() int32  { return sc.open }
func (sc *Scope) Close() int32 { return sc.close }

// Fn is the index of the innermost enclosing function, -1 outside functions.
func (sc *Scope) Fn() int32 { return sc.fn }

// Name is a class scope's class name.
func (sc *Scope) Name() string { return sc.name }

// Region names the lock a region scope holds throughout ("" for none): @synchronized(x),
// a block or lambda passed to dispatch_sync(q, ...) or std::call_once(flag, ...), or
// CallerHeld for a fooLocked() function; RegionKind says which (@synchronized,
// dispatch_sync, call_once, caller, ...); RegionVia that the lock or queue is reached
// through another object.
func (sc *Scope) Region() string     { return sc.region }
func (sc *Scope) RegionKind() string { return sc.regionKind }
func (sc *Scope) RegionVia() bool    { return sc.regionVia }

// Dispatch says whether the scope is a block or lambda dispatched onto a serial queue,
// and how; Queue names the queue.
func (sc *Scope) Dispatch() DispatchKind { return sc.dispatch }
func (sc *Scope) Queue() string          { return sc.queue }

// NumLocks is the number of lock statements directly in the scope.
func (sc *Scope) NumLocks() int { return len(sc.locks) }

// Locks yields (copies of) the scope's lock statements in source order.
func (sc *Scope) Locks() iter.Seq[LockEvent] {
	return func(yield func(LockEvent) bool) {
		for _, ev := range sc.locks {
			if !yield(ev) {
				return
			}
		}
	}
}

// First is the token's first byte (a one-byte punctuator compares without the source).
func (t Token) First() byte { return t.first }

// RunePos is Pos with the column counted in runes (UTF-8), as findings report it.
func (m *File) RunePos(t Token) (line, col int) {
	line, bcol := m.Pos(t)
	return line, utf8.RuneCount(m.src[int(t.Off)-bcol+1:t.Off]) + 1
}

// Span returns the source bytes from the start of code token s to the end of code token
// e (aliasing the source: not to be modified).
func (m *File) Span(s, e int32) []byte { return m.src[m.code[s].Off:m.code[e].End] }
