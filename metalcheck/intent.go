package metalcheck

import (
	"fmt"
	"github.com/mpspatch/mpspatch/metalcheck/internal/cxx"
	"path"
	"strconv"
	"strings"

	"github.com/mpspatch/mpspatch/internal/lazyregexp"
)

// IntentKind is the form of an intent rule (docs/series-format.md, "Intent rules").
type IntentKind uint8

// The intent forms.
const (
	IntentThreadLocal IntentKind = iota + 1 // thread-local SYMBOL in PATH
	IntentGuarded                           // guarded SYMBOL by LOCK in PATH
	IntentNoFinding                         // no-finding RULE in PATH
	IntentPresent                           // present "TEXT" in PATH
	IntentAbsent                            // absent "TEXT" in PATH
)

var intentKindNames = map[IntentKind]string{IntentThreadLocal: "thread-local", IntentGuarded: "guarded",
	IntentNoFinding: "no-finding", IntentPresent: "present", IntentAbsent: "absent"}

func (k IntentKind) String() string {
	if s, ok := intentKindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("intent(%d)", int(k))
}

// Intent is one parsed `Intent:` trailer: something that must hold in the tree after its
// patch is applied.
type Intent struct {
	Kind   IntentKind `json:"kind"`
	Symbol string     `json:"symbol,omitempty"` // thread-local, guarded: possibly qualified
	Lock   string     `json:"lock,omitempty"`   // guarded
	Rule   string     `json:"rule,omitempty"`   // no-finding: the rule ID
	Text   string     `json:"text,omitempty"`   // present, absent
	Path   string     `json:"path"`             // tree-relative, slash-separated
}

// String renders the intent in its canonical trailer form (ParseIntent(i.String()) == i).
func (i Intent) String() string {
	switch i.Kind {
	case IntentThreadLocal:
		return fmt.Sprintf("thread-local %s in %s", i.Symbol, i.Path)
	case IntentGuarded:
		return fmt.Sprintf("guarded %s by %s in %s", i.Symbol, i.Lock, i.Path)
	case IntentNoFinding:
		return fmt.Sprintf("no-finding %s in %s", i.Rule, i.Path)
	case IntentPresent, IntentAbsent:
		return fmt.Sprintf("%s %s in %s", i.Kind, strconv.Quote(i.Text), i.Path)
	}
	return fmt.Sprintf("invalid intent (kind %d)", int(i.Kind))
}

// MarshalText lets Intent appear as its trailer form in JSON keys and TOML.
func (k IntentKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

var symbolRE = lazyregexp.New(`^(::)?[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$`)

// ParseIntent parses the text after "Intent: ". The grammar:
//
//	thread-local SYMBOL in PATH
//	guarded SYMBOL by LOCK in PATH
//	no-finding RULE in PATH
//	present "TEXT" in PATH
//	absent "TEXT" in PATH
//
// SYMBOL and LOCK are C++ names, optionally qualified (A::b); RULE is an audit rule ID or
// name; TEXT is a double-quoted string with Go escapes (\" and \\); PATH is a relative,
// slash-separated path inside the tree.
func ParseIntent(s string) (Intent, error) {
	s = strings.TrimSpace(s)
	verb, rest, _ := strings.Cut(s, " ")
	rest = strings.TrimLeft(rest, " \t")
	var in Intent
	fail := func(format string, args ...any) (Intent, error) {
		return Intent{}, fmt.Errorf("intent %q: %s", s, fmt.Sprintf(format, args...))
	}
	switch verb {
	case "thread-local":
		in.Kind = IntentThreadLocal
	case "guarded":
		in.Kind = IntentGuarded
	case "no-finding":
		in.Kind = IntentNoFinding
	case "present":
		in.Kind = IntentPresent
	case "absent":
		in.Kind = IntentAbsent
	case "":
		return fail("empty; want one of thread-local, guarded, no-finding, present, absent")
	default:
		return fail("unknown form %q; want one of thread-local, guarded, no-finding, present, absent", verb)
	}
	var subject string
	switch in.Kind {
	case IntentPresent, IntentAbsent:
		if !strings.HasPrefix(rest, `"`) {
			return fail(`want a double-quoted "TEXT" after %s`, verb)
		}
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return fail("bad quoted text: %v", err)
		}
		text, err := strconv.Unquote(q)
		if err != nil {
			return fail("bad quoted text: %v", err)
		}
		if strings.TrimSpace(text) == "" {
			return fail("empty text")
		}
		in.Text = text
		rest = rest[len(q):]
		if !strings.HasPrefix(rest, " ") {
			return fail(`want " in PATH" after the text`)
		}
		rest = strings.TrimLeft(rest, " \t")
	default:
		subject, rest, _ = strings.Cut(rest, " ")
		rest = strings.TrimLeft(rest, " \t")
		if subject == "" || subject == "in" {
			return fail("missing %s", map[IntentKind]string{IntentThreadLocal: "SYMBOL", IntentGuarded: "SYMBOL", IntentNoFinding: "RULE"}[in.Kind])
		}
	}
	switch in.Kind {
	case IntentThreadLocal, IntentGuarded:
		if !symbolRE().MatchString(subject) {
			return fail("%q is not a C++ name (A::b)", subject)
		}
		in.Symbol = strings.TrimPrefix(subject, "::")
	case IntentNoFinding:
		r, ok := LookupRule(subject)
		if !ok {
			return fail("unknown audit rule %q (want MPS001..MPS007 or a rule name)", subject)
		}
		in.Rule = r.ID
	}
	if in.Kind == IntentGuarded {
		var by string
		by, rest, _ = strings.Cut(rest, " ")
		if by != "by" {
			return fail(`want "by LOCK" after the symbol`)
		}
		rest = strings.TrimLeft(rest, " \t")
		var lock string
		lock, rest, _ = strings.Cut(rest, " ")
		rest = strings.TrimLeft(rest, " \t")
		if lock == "" || lock == "in" {
			return fail("missing LOCK after \"by\"")
		}
		if !symbolRE().MatchString(lock) {
			return fail("lock %q is not a C++ name", lock)
		}
		in.Lock = strings.TrimPrefix(lock, "::")
	}
	kw, p, _ := strings.Cut(rest, " ")
	if kw != "in" {
		return fail(`want "in PATH"`)
	}
	p = strings.TrimSpace(p)
	if err := checkIntentPath(p); err != nil {
		return fail("%v", err)
	}
	in.Path = p
	return in, nil
}

func checkIntentPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("missing PATH")
	case strings.ContainsAny(p, " \t\\"):
		return fmt.Errorf("PATH %q: want a slash-separated path without spaces", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("PATH %q must be relative to the tree root", p)
	case path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("PATH %q must be a clean path inside the tree", p)
	}
	return nil
}

// IntentResult is the verdict on one intent.
type IntentResult struct {
	Intent Intent `json:"intent"`
	OK     bool   `json:"ok"`
	// Detail says why it failed, with file:line where there is one; for a held intent it
	// may say what was checked.
	Detail string `json:"detail,omitempty"`
}

// EvaluateIntents checks intents against file contents read through read(path)
// (tree-relative, slash-separated), returning one result per intent in order. A file that
// cannot be read fails its intent. no-finding audits PATH together with the header of the
// same name beside it (X.h for X.mm), so members declared there are known.
func EvaluateIntents(intents []Intent, read func(path string) ([]byte, error)) []IntentResult {
	cache := map[string]*extractor{}
	srcs := map[string][]byte{}
	load := func(p string) ([]byte, error) {
		if b, ok := srcs[p]; ok {
			return b, nil
		}
		b, err := read(p)
		if err != nil {
			return nil, err
		}
		srcs[p] = b
		return b, nil
	}
	model := func(p string) (*extractor, error) {
		if m, ok := cache[p]; ok {
			return m, nil
		}
		b, err := load(p)
		if err != nil {
			return nil, err
		}
		m := analyze(p, b)
		cache[p] = m
		return m, nil
	}
	out := make([]IntentResult, len(intents))
	for i, in := range intents {
		r := IntentResult{Intent: in}
		switch in.Kind {
		case IntentThreadLocal, IntentGuarded:
			m, err := model(in.Path)
			if err != nil {
				r.Detail = fmt.Sprintf("read %s: %v", in.Path, err)
				break
			}
			if in.Kind == IntentThreadLocal {
				r.OK, r.Detail = m.checkThreadLocal(in.Symbol)
			} else {
				r.OK, r.Detail = m.checkGuarded(in.Symbol, in.Lock)
			}
		case IntentNoFinding:
			b, err := load(in.Path)
			if err != nil {
				r.Detail = fmt.Sprintf("read %s: %v", in.Path, err)
				break
			}
			files := map[string][]byte{in.Path: b}
			if ext := path.Ext(in.Path); ext != ".h" {
				h := strings.TrimSuffix(in.Path, ext) + ".h"
				if hb, err := load(h); err == nil {
					files[h] = hb
				}
			}
			r.OK = true
			var where []string
			for _, f := range AuditSources(files) {
				if f.Rule == in.Rule && f.File == in.Path {
					r.OK = false
					where = append(where, fmt.Sprintf("%s:%d:%d: %s", f.File, f.Line, f.Col, f.Message))
				}
			}
			if !r.OK {
				r.Detail = fmt.Sprintf("%d %s finding(s): %s", len(where), in.Rule, strings.Join(where, "; "))
			}
		case IntentPresent, IntentAbsent:
			b, err := load(in.Path)
			if err != nil {
				r.Detail = fmt.Sprintf("read %s: %v", in.Path, err)
				break
			}
			line, found := findTokens(b, in.Text)
			if in.Kind == IntentPresent {
				r.OK = found
				if !found {
					r.Detail = fmt.Sprintf("%s: %q not found (compared as tokens)", in.Path, in.Text)
				}
			} else {
				r.OK = !found
				if found {
					r.Detail = fmt.Sprintf("%s:%d: %q is present", in.Path, line, in.Text)
				}
			}
		default:
			r.Detail = "invalid intent"
		}
		out[i] = r
	}
	return out
}

// checkThreadLocal: every declaration of sym in the file is thread_local (and there is one).
func (m *extractor) checkThreadLocal(sym string) (bool, string) {
	class, name := splitSymbol(sym)
	var found []cxx.Decl
	collect := func(d cxx.Decl) {
		if d.Name == name && (class == "" || d.Class == class) {
			found = append(found, d)
		}
	}
	for _, d := range m.Decls() {
		collect(d)
	}
	for _, f := range m.funcs {
		for _, d := range f.Statics() {
			if class == "" || f.Class() == class {
				d.Class = class
				collect(d)
			}
		}
	}
	if len(found) == 0 {
		return false, fmt.Sprintf("%s: no declaration of %s found", m.Path(), sym)
	}
	for _, d := range found {
		if !d.ThreadLocal {
			return false, fmt.Sprintf("%s:%d: %s is declared without thread_local", d.File, d.Line, sym)
		}
	}
	return true, fmt.Sprintf("%d declaration(s), all thread_local", len(found))
}

// checkGuarded: every use of sym inside a function body happens with lock held.
func (m *extractor) checkGuarded(sym, lock string) (bool, string) {
	class, name := splitSymbol(sym)
	_, lockName := splitSymbol(lock)
	uses := 0
	for i := int32(0); i < m.Len(); i++ {
		if m.Tok(i).Kind != cxx.Ident || string(m.Bytes(i)) != name {
			continue
		}
		fi := m.Scope(m.ScopeOf(i)).Fn()
		if fi < 0 {
			continue
		}
		if class != "" {
			q, ok := m.rootRef(i)
			if q != "" && q != class {
				continue
			}
			if q == "" && (!ok || m.funcs[fi].Class() != class) {
				continue
			}
		}
		uses++
		held, _ := m.HeldLocks(i)
		ok := false
		for _, h := range held {
			if h == lockName || h == cxx.CallerHeld {
				ok = true
				break
			}
		}
		if !ok {
			line, col := m.Pos(m.Tok(i))
			return false, fmt.Sprintf("%s:%d:%d: %s used in %s without holding %s", m.Path(), line, col, sym, m.funcs[fi].Name(), lock)
		}
	}
	if uses == 0 {
		return false, fmt.Sprintf("%s: no use of %s inside a function body", m.Path(), sym)
	}
	return true, fmt.Sprintf("%d use(s), all under %s", uses, lock)
}

func splitSymbol(sym string) (class, name string) {
	if i := strings.LastIndex(sym, "::"); i >= 0 {
		q := sym[:i]
		if j := strings.LastIndex(q, "::"); j >= 0 {
			q = q[j+2:]
		}
		return q, sym[i+2:]
	}
	return "", sym
}

// matchTokens is the token text used to compare present/absent texts: no comments,
// directives split into ordinary tokens, [[ and ]] split into single brackets.
func matchTokens(src []byte) []string {
	toks := cxx.TokenizeText(src)
	out := make([]string, 0, len(toks))
	for _, t := range toks {
		if t.Kind == cxx.Comment {
			continue
		}
		b := src[t.Off:t.End]
		if t.Kind == cxx.Punct && (string(b) == "[[" || string(b) == "]]") {
			out = append(out, string(b[:1]), string(b[1:]))
			continue
		}
		out = append(out, string(b))
	}
	return out
}

// findTokens reports whether text occurs in src as a token sequence, and the line of the
// first occurrence.
func findTokens(src []byte, text string) (int, bool) {
	want := matchTokens([]byte(text))
	if len(want) == 0 {
		return 0, false
	}
	toks := cxx.TokenizeText(src)
	var have []string
	var offs []int32
	for _, t := range toks {
		if t.Kind == cxx.Comment {
			continue
		}
		b := src[t.Off:t.End]
		if t.Kind == cxx.Punct && (string(b) == "[[" || string(b) == "]]") {
			have = append(have, string(b[:1]), string(b[1:]))
			offs = append(offs, t.Off, t.Off+1)
			continue
		}
		have = append(have, string(b))
		offs = append(offs, t.Off)
	}
outer:
	for i := 0; i+len(want) <= len(have); i++ {
		for j, w := range want {
			if have[i+j] != w {
				continue outer
			}
		}
		line, _ := cxx.Token{Off: offs[i]}.Pos(src)
		return line, true
	}
	return 0, false
}

// UnmarshalText reads the form names MarshalText writes.
func (k *IntentKind) UnmarshalText(b []byte) error {
	for kind, name := range intentKindNames {
		if name == string(b) {
			*k = kind
			return nil
		}
	}
	return fmt.Errorf("unknown intent kind %q", b)
}
