package cxx

import (
	"bytes"
	"strings"
)

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
	w := walk{stack: []int32{0}}
	code, scopeOf := m.code, m.scopeOf[:n]
	for i := int32(0); i < n; i++ {
		cur := w.stack[len(w.stack)-1]
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
			m.objcKeyword(&w, i)
			continue
		}
		if t.Kind != Punct || t.End-t.Off != 1 {
			continue
		}
		switch c := t.first; c {
		case '(', '[':
			w.parens = append(w.parens, i)
		case ')', ']':
			m.closeParen(&w, i, c, cur)
		case '{':
			m.openBrace(&w, i, cur)
		case '}':
			m.closeBrace(&w, i)
		case ';':
			if k := len(w.parens); k > 0 && w.parens[k-1] > m.scopes[cur].open {
				continue // for (;;)
			}
			m.endStatement(w.stmt, i, cur)
			w.stmt = i + 1
		}
	}
	for _, s := range w.stack[1:] {
		m.scopes[s].close = n
		if f := m.scopes[s].fn; f >= 0 && m.scopes[s].kind == ScopeFunction {
			m.funcs[f].close = n
		}
	}
}

// walk is build's position: the open scopes, the open ( and [, the statement starts saved
// across expression scopes and the start of the current statement.
type walk struct {
	stack, parens, stmts []int32
	stmt                 int32
}

// objcKeyword handles @end and @implementation Name at i.
func (m *File) objcKeyword(w *walk, i int32) {
	switch {
	case m.Is(i, "@end"):
		w.stmt = i + 1
		m.objcClass = ""
	case m.Is(i, "@implementation") && m.IsIdent(i+1):
		m.objcClass = m.Text(i + 1)
	}
}

// closeParen matches the ) or ] at i with the innermost open bracket of the current scope
// cur, when it is the same kind.
func (m *File) closeParen(w *walk, i int32, c byte, cur int32) {
	want := byte('(')
	if c == ']' {
		want = '['
	}
	if k := len(w.parens); k > 0 && m.code[w.parens[k-1]].first == want && w.parens[k-1] > m.scopes[cur].open {
		o := w.parens[k-1]
		w.parens = w.parens[:k-1]
		m.match[o], m.match[i] = i, o
	}
}

// openBrace opens the scope of the '{' at i inside scope cur.
func (m *File) openBrace(w *walk, i, cur int32) {
	var innerParen int32 = -1
	if k := len(w.parens); k > 0 && w.parens[k-1] > m.scopes[cur].open {
		innerParen = w.parens[k-1]
	}
	s := m.openScope(i, w.stmt, cur, innerParen)
	w.stack = append(w.stack, s)
	m.scopeOf[i] = s
	if m.scopes[s].kind.expression() {
		// The statement holding a lambda, block or initialiser goes on after
		// its closing brace; inside, statements start afresh.
		w.stmts = append(w.stmts, w.stmt)
	}
	w.stmt = i + 1
}

// closeBrace closes the innermost open scope at the '}' at i (a stray one at file scope
// only ends a statement).
func (m *File) closeBrace(w *walk, i int32) {
	if len(w.stack) == 1 {
		w.stmt = i + 1
		return
	}
	s := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	sc := &m.scopes[s]
	sc.close = i
	m.scopeOf[i] = s
	if sc.open >= 0 {
		m.match[sc.open], m.match[i] = i, sc.open
	}
	for len(w.parens) > 0 && w.parens[len(w.parens)-1] > sc.open {
		w.parens = w.parens[:len(w.parens)-1]
	}
	if sc.kind == ScopeFunction && sc.fn >= 0 {
		m.funcs[sc.fn].close = i
	}
	if sc.kind.expression() && len(w.stmts) > 0 {
		w.stmt = w.stmts[len(w.stmts)-1]
		w.stmts = w.stmts[:len(w.stmts)-1]
	} else {
		w.stmt = i + 1
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

// openScope classifies the '{' at i whose statement started at stmt.
func (m *File) openScope(i, stmt, cur, innerParen int32) int32 {
	parent := &m.scopes[cur]
	sc := Scope{parent: cur, open: i, close: int32(len(m.code)), fn: parent.fn}
	head := m.StripPrefix(stmt, i)
	sc.kind = m.braceKind(&sc, i, stmt, head, parent.kind)
	if (sc.kind == ScopeLambda || sc.kind == ScopeBlock) && innerParen > 0 && m.Is(innerParen, "(") {
		m.argumentRegion(&sc, innerParen, i)
	}
	idx := int32(len(m.scopes))
	switch sc.kind {
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

// braceKind says what the '{' at i is, its statement starting at stmt and its head
// (the statement without labels, attributes and templates) at head; an @synchronized
// block gets its region in sc.
func (m *File) braceKind(sc *Scope, i, stmt, head int32, parent ScopeKind) ScopeKind {
	switch {
	case m.isBlockOpen(i):
		return ScopeBlock
	case m.isLambdaOpen(i):
		return ScopeLambda
	case head < i && m.Is(head, "@synchronized"):
		if m.Is(head+1, "(") && m.match[head+1] > head+1 {
			sc.region = m.lastIdent(head+2, m.match[head+1])
			sc.regionKind = "@synchronized"
		}
		return ScopeSync
	case head < i && isControlWord(m.Bytes(head)):
		return ScopeControl
	case head < i && m.Is(head, "@autoreleasepool"):
		return ScopePlain
	case head < i && (m.Is(head, "namespace") || m.Is(head, "inline") && m.Is(head+1, "namespace") ||
		m.Is(head, "extern") && head+1 < int32(len(m.code)) && m.code[head+1].Kind == String):
		return ScopeNamespace
	case head == i:
		if stmt < i && m.isObjCHeader(stmt) {
			return ScopeClass
		}
		return ScopePlain
	default:
		return m.classifyHead(head, i, parent)
	}
}

// argumentRegion handles a block or lambda sc opening at brace as an argument of the call
// whose parenthesis is at paren: a region holding a lock when the call is dispatch_sync,
// call_once and the like (the lock being the last name of the first argument), and a
// block dispatched onto a serial queue when the call is a GCD dispatch.
func (m *File) argumentRegion(sc *Scope, paren, brace int32) {
	// The callee is the name before the parenthesis (lastIdent of that one token).
	if !m.IsIdent(paren - 1) {
		return
	}
	if isRegionCallee(m.Bytes(paren - 1)) {
		callee := m.Text(paren - 1)
		end := m.TopLevelComma(paren+1, brace)
		sc.region = m.LastName(paren+1, end)
		if sc.region == "" {
			sc.region = callee
		}
		sc.regionKind = callee
		sc.regionVia = m.throughObject(paren+1, end)
	}
	m.dispatchTarget(sc, paren, brace)
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
	k := m.skipLambdaSpecifiers(i - 1)
	if k < 0 {
		return false
	}
	if !m.Is(k, ")") && !m.Is(k, "]") {
		var ok bool
		if k, ok = m.beforeTrailingReturn(k); !ok {
			return false
		}
	}
	if m.Is(k, "]") {
		return m.isCaptureList(m.match[k])
	}
	if m.Is(k, ")") {
		o := m.match[k]
		if o <= 0 || !m.Is(o-1, "]") {
			return false
		}
		return m.isCaptureList(m.match[o-1])
	}
	return false
}

// skipLambdaSpecifiers steps back from k over the words between a lambda's parameters and
// its body (mutable, constexpr, noexcept(...)), a few at most.
func (m *File) skipLambdaSpecifiers(k int32) int32 {
	for steps := 0; k >= 0 && steps < 16; steps++ {
		switch {
		case m.IsIdent(k) && isLambdaSpecifier(m.Bytes(k)):
			k--
		case m.Is(k, ")") && m.match[k] > 0 && m.Is(m.match[k]-1, "noexcept"):
			k = m.match[k] - 2
		default:
			return k
		}
	}
	return k
}

// beforeTrailingReturn steps back from k, the end of a trailing return type, over
// type-ish tokens to its '->' and the specifiers before it: the index where the lambda's
// parameters or captures should end; false when there is no '->'.
func (m *File) beforeTrailingReturn(k int32) (int32, bool) {
	j := k
	for steps := 0; j >= 0 && steps < 12; steps++ {
		if m.Is(j, "->") {
			break
		}
		if !(m.IsIdent(j) || m.Is(j, "::") || m.Is(j, "<") || m.Is(j, ">") || m.Is(j, "*") || m.Is(j, "&") || m.Is(j, ",")) {
			return 0, false
		}
		j--
	}
	if !m.Is(j, "->") {
		return 0, false
	}
	k = j - 1
	for k >= 0 && m.IsIdent(k) && isLambdaSpecifier(m.Bytes(k)) {
		k--
	}
	return k, true
}

// isCaptureList reports whether the '[' at o opens a lambda's captures rather than an
// index, a subscript operator or an attribute.
func (m *File) isCaptureList(o int32) bool {
	return o >= 0 && !m.Is(o-1, "operator") && !m.IsIdent(o-1) && !m.Is(o-1, ")") && !m.Is(o-1, "]")
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
