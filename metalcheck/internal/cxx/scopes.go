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
