package cxx

import (
	"strings"
)

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
	if m.Is(head, "-") || m.Is(head, "+") {
		m.objcMethodName(&f, head, i)
		return f
	}
	m.functionName(&f, head, i)
	if f.class == "" {
		f.class = m.objcClass
	}
	if f.class != "" && !strings.Contains(f.name, "::") {
		f.name = f.class + "::" + f.bare
	}
	if f.class != "" && (f.bare == f.class || f.bare == "~"+f.class) {
		f.ctor = true
	}
	return f
}

// objcMethodName names the ObjC method whose head [head, i) starts with - or +: its
// selector (bar:baz:, or the lone word of a method without arguments) and -[Class bar:baz:].
func (m *File) objcMethodName(f *Function, head, i int32) {
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
		f.class = m.objcClass
	}
	f.name = m.Text(head) + "[" + f.class + " " + f.bare + "]"
}

// functionName names the C++ function whose head is [head, i): the name stands before the
// first parameter list (TORCH_IMPL_FUNC(name)(args) names the function inside the macro's
// parentheses), with its qualifiers.
func (m *File) functionName(f *Function, head, i int32) {
	end := i
	if c := m.CtorColon(head, i); c >= 0 {
		end = c
	}
	for j := head; j < end; j++ {
		if m.Is(j, "<") && j > head && m.IsIdent(j-1) && !m.Is(j-1, "operator") {
			j = m.angleEnd(j, end) - 1
			continue
		}
		if !m.Is(j, "(") {
			continue
		}
		nameAt := m.nameBefore(head, j)
		if m.IsIdent(nameAt) && isNotFuncName(m.Bytes(nameAt)) {
			if m.match[j] > j {
				j = m.match[j]
			}
			continue
		}
		if close := m.match[j]; close > j && m.Is(close+1, "(") && m.IsIdent(nameAt) && isUpper(m.Bytes(nameAt)) {
			f.bare = m.lastIdent(j+1, close)
			f.name = f.bare
			f.entryMacro = true
			return
		}
		nameAt = m.bareName(f, head, nameAt, j)
		m.qualifiedName(f, head, nameAt)
		return
	}
}

// nameBefore returns the token naming the call or function whose parameter list opens at
// paren: the one before it, or before the <...> of a template specialisation f<T>(...).
func (m *File) nameBefore(head, paren int32) int32 {
	nameAt := paren - 1
	if m.Is(nameAt, ">") {
		for k := nameAt; k > head; k-- {
			if m.Is(k, "<") {
				return k - 1
			}
		}
	}
	return nameAt
}

// bareName sets f's bare name from the token at nameAt before the parameter list at paren
// (operator(), operator[], ~Class, operator+ included) and returns where the name's
// qualifiers end.
func (m *File) bareName(f *Function, head, nameAt, paren int32) int32 {
	switch {
	case m.Is(nameAt, "operator") && m.Is(paren+1, ")"):
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
	return nameAt
}

// qualifiedName sets f's name from the qualifiers, A::B:: before nameAt: the name is
// A::B::bare, the class B; built in one string, of which class and bare are parts.
func (m *File) qualifiedName(f *Function, head, nameAt int32) {
	q := nameAt
	for k := nameAt - 1; k > head && m.Is(k, "::") && m.IsIdent(k-1); k -= 2 {
		q = k - 1
	}
	if q == nameAt {
		f.name = f.bare
		return
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
}
