package cxx

import (
	"strings"
)

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

// throughObject reports whether the expression [s, e) reaches its last name through
// another object: a.b, p->b, a[i].b, q->queue() (not this-> or self->).
func (m *File) throughObject(s, e int32) bool {
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

// lastIdent returns the last identifier in [s, e) that is not a call's name.
func (m *File) lastIdent(s, e int32) string {
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
