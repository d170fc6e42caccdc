package cxx

import (
	"bytes"
	"fmt"
	"strings"
)

// Kind classifies a token.
type Kind uint8

// Token kinds. Every byte of the input that is not white space (or a backslash-newline
// splice) belongs to exactly one token.
const (
	Invalid   Kind = iota // a byte that starts no C++ token (a stray backslash, a control byte)
	Comment               // // line or /* block */ comment
	Directive             // a whole preprocessor line, continuations and comments included
	Ident                 // identifier or keyword; ObjC @keywords (@synchronized) are one Ident
	Number                // preprocessing number (1'000, 0x1p-3, 1.5e+3f)
	String                // string literal: "..", u8"..", R"d(..)d", @".."
	Char                  // character literal: 'a', L'\n'
	Punct                 // punctuator: longest match, including ::, ->, [[ and ]]
)

var kindNames = [...]string{"invalid", "comment", "directive", "ident", "number", "string", "char", "punct"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Token is one lexical token of a C++ or Objective-C++ source. Off and End are byte offsets
// into the source; Pos gives the line and column. A token is 12 bytes: the analysis keeps
// one for every four or five bytes of source, and line and column are needed only for the
// few tokens that a finding or a declaration points at.
type Token struct {
	Kind Kind
	// first is the token's first byte, kept in what would be padding after Kind, so that
	// the analysis compares a token with a punctuator without reading the source.
	first byte
	Off   int32
	End   int32
}

// Text returns the token's bytes within src.
func (t Token) Text(src []byte) []byte { return src[t.Off:t.End] }

// Pos returns the token's 1-based line and column in src (the source it was read from),
// the column counting bytes from the start of the line. A backslash-newline ends a line.
// It counts the newlines before the token: for many tokens of one file, use a lineCursor.
func (t Token) Pos(src []byte) (line, col int) {
	var c lineCursor
	return c.pos(src, int(t.Off))
}

// lineCursor computes line and column of offsets in one source, counting newlines from
// the previous offset asked about: asking in (about) increasing order costs one pass over
// the source in all.
type lineCursor struct {
	off, line, lineStart int // line (0-based) and start of line at offset off
}

// pos returns the 1-based line and byte column of offset off in src.
func (c *lineCursor) pos(src []byte, off int) (line, col int) {
	if off > len(src) {
		off = len(src)
	}
	switch {
	case off >= c.off:
		seg := src[c.off:off]
		if nl := bytes.Count(seg, []byte{'\n'}); nl > 0 {
			c.line += nl
			c.lineStart = c.off + bytes.LastIndexByte(seg, '\n') + 1
		}
	case off >= c.lineStart:
		// same line, further left
	default:
		c.line -= bytes.Count(src[off:c.off], []byte{'\n'})
		c.lineStart = bytes.LastIndexByte(src[:off], '\n') + 1
	}
	c.off = off
	return c.line + 1, off - c.lineStart + 1
}

// maxSource is the largest file the tokenizer accepts (offsets are int32).
const maxSource = 1 << 30

// Tokenize splits a C++/Objective-C++ source into tokens. It never fails: bytes that start no
// token become Invalid tokens, and unterminated comments and literals run to the end of their
// line (strings, chars) or of the input (block comments, raw strings).
func Tokenize(src []byte) []Token {
	return tokenize(src, true)
}

// tokenize is Tokenize with control over preprocessor directives: with directives false a
// leading '#' is an ordinary punctuator, which is how present/absent intents compare text.
func tokenize(src []byte, directives bool) []Token {
	return tokenizeInto(nil, src, directives)
}

// tokenizeInto is tokenize appending to buf[:0], so that a worker can reuse one buffer.
func tokenizeInto(buf []Token, src []byte, directives bool) []Token {
	if len(src) > maxSource {
		src = src[:maxSource]
	}
	lx := lexer{src: src, bol: true, directives: directives}
	if want := len(src)/3 + 4; cap(buf) < want {
		// C++ averages a token every four to five bytes; this avoids regrowth.
		buf = make([]Token, 0, want)
	}
	lx.toks = buf[:0]
	lx.run()
	return lx.toks
}

type lexer struct {
	src        []byte
	pos        int
	bol        bool // only white space since the last newline
	directives bool
	toks       []Token

	// Code mode (lexCode): comments are dropped, directives go to dirs, tokens of dead
	// #if branches are dropped, and [[ / ]] become two brackets.
	code   bool
	dirs   []Token
	conds  []cond
	active bool
}

// cond is one open #if: whether its parent is live, whether this branch is, and whether
// a branch of it has been taken.
type cond struct{ parentActive, active, taken bool }

// lexCode tokenizes src into the code tokens the analysis reads, appending to buf[:0] and
// dirs[:0]: what the compiler would see on a plausible configuration. Comments go;
// directives are returned apart; of each #if the first live branch is kept (the #else
// branch of #if 0); [[ and ]] become two brackets so that nested ObjC sends match.
func lexCode(buf, dirs []Token, src []byte) ([]Token, []Token) {
	if len(src) > maxSource {
		src = src[:maxSource]
	}
	lx := lexer{src: src, bol: true, directives: true, code: true, active: true, dirs: dirs[:0]}
	if want := len(src)/3 + 4; cap(buf) < want {
		// A worker reuses the buffer: some room to spare spares a new one for each
		// slightly larger file.
		buf = make([]Token, 0, want+want/4)
	}
	lx.toks = buf[:0]
	lx.run()
	return lx.toks, lx.dirs
}

// emitCode appends t in code mode.
func (lx *lexer) emitCode(t Token) {
	switch t.Kind {
	case Comment:
		return
	case Directive:
		lx.dirs = append(lx.dirs, t)
		lx.directive(lx.src[t.Off:t.End])
		return
	}
	if !lx.active {
		return
	}
	if t.Kind == Punct && t.End-t.Off == 2 {
		if b := lx.src[t.Off:t.End]; string(b) == "[[" || string(b) == "]]" {
			a, c := t, t
			a.End = t.Off + 1
			c.Off = t.Off + 1
			lx.toks = append(lx.toks, a, c)
			return
		}
	}
	lx.toks = append(lx.toks, t)
}

// directive updates the #if state for one directive line.
func (lx *lexer) directive(text []byte) {
	word, rest := DirectiveWord(text)
	switch word {
	case "if", "ifdef", "ifndef":
		taken := !(word == "if" && IsZeroCond(rest))
		lx.conds = append(lx.conds, cond{parentActive: lx.active, active: lx.active && taken, taken: taken})
	case "elif", "elifdef", "elifndef":
		if n := len(lx.conds); n > 0 {
			c := &lx.conds[n-1]
			if c.taken {
				c.active = false
			} else {
				c.taken = !(word == "elif" && IsZeroCond(rest))
				c.active = c.parentActive && c.taken
			}
		}
	case "else":
		if n := len(lx.conds); n > 0 {
			c := &lx.conds[n-1]
			c.active = c.parentActive && !c.taken
			c.taken = true
		}
	case "endif":
		if n := len(lx.conds); n > 0 {
			lx.conds = lx.conds[:n-1]
		}
	default:
		return
	}
	lx.active = true
	if n := len(lx.conds); n > 0 {
		lx.active = lx.conds[n-1].active
	}
}

// DirectiveWord returns the directive's name (if, define, ...) and the rest of its line.
func DirectiveWord(b []byte) (string, []byte) {
	b = bytes.TrimLeft(b[1:], " \t")
	i := 0
	for i < len(b) && isIdentChar(b[i]) {
		i++
	}
	return string(b[:i]), b[i:]
}

// IsZeroCond reports whether the rest of an #if line is a constant 0 (or false): a branch
// that never compiles.
func IsZeroCond(rest []byte) bool {
	if i := bytes.Index(rest, []byte("//")); i >= 0 {
		rest = rest[:i]
	}
	if i := bytes.Index(rest, []byte("/*")); i >= 0 {
		rest = rest[:i]
	}
	s := string(bytes.TrimSpace(rest))
	return s == "0" || s == "false" || s == "(0)"
}

func (lx *lexer) peek(i int) byte {
	if p := lx.pos + i; p < len(lx.src) {
		return lx.src[p]
	}
	return 0
}

// splice reports the length of a backslash-newline at p (0 when there is none).
func splice(src []byte, p int) int {
	if p >= len(src) || src[p] != '\\' {
		return 0
	}
	if p+1 < len(src) && src[p+1] == '\n' {
		return 2
	}
	if p+2 < len(src) && src[p+1] == '\r' && src[p+2] == '\n' {
		return 3
	}
	return 0
}

func (lx *lexer) run() {
	src := lx.src
	n := len(src)
	// The position, start-of-line flag and token slice live in locals (registers) and
	// go through the lexer only around scan and emitCode.
	toks, pos, bol := lx.toks, lx.pos, lx.bol
	for pos < n {
		c := src[pos]
		switch c {
		case '\n':
			pos++
			bol = true
			continue
		case ' ', '\t', '\r', '\f', '\v':
			pos++
			for pos < n && (src[pos] == ' ' || src[pos] == '\t') { // indentation
				pos++
			}
			continue
		case '\\':
			if k := splice(src, pos); k > 0 {
				pos += k
				continue
			}
		}
		start := pos
		// Fast paths for the two commonest tokens, identifiers (those not followed by a
		// quote, which may be an encoding prefix) and one-byte punctuators that never
		// combine; both are kept in code mode while the branch is live.
		if cls := charClass[c]; cls&1 != 0 || cls&4 != 0 {
			p := start + 1
			if cls&1 != 0 {
				for p < n && charClass[src[p]]&2 != 0 {
					p++
				}
			}
			if p >= n || src[p] != '"' && src[p] != '\'' || cls&4 != 0 {
				kind := Ident
				if cls&4 != 0 {
					kind = Punct
				}
				pos = p
				bol = false
				if !lx.code || lx.active {
					toks = append(toks, Token{Kind: kind, first: c, Off: int32(start), End: int32(p)})
				}
				continue
			}
		}
		lx.pos, lx.bol = pos, bol
		kind := lx.scan(c)
		pos = lx.pos
		if pos <= start { // defensive: always make progress
			pos = start + 1
		}
		t := Token{Kind: kind, first: c, Off: int32(start), End: int32(pos)}
		switch {
		case lx.code && lx.active && (kind == Ident || kind == Number || kind == String || kind == Char ||
			kind == Punct && !(pos-start == 2 && (c == '[' || c == ']') && src[start+1] == c)):
			toks = append(toks, t) // emitCode's common case ([[ and ]] aside), without the call
		case lx.code:
			lx.toks = toks
			lx.emitCode(t)
			toks = lx.toks
		default:
			toks = append(toks, t)
		}
		if kind != Comment {
			bol = false
		}
	}
	lx.toks, lx.pos, lx.bol = toks, pos, bol
}

// charClass marks identifier bytes: 1 may start one, 2 may continue one; 4 marks the
// punctuators that are one byte whatever follows them.
var charClass = func() (t [256]byte) {
	for c := 0; c < 256; c++ {
		if c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 {
			t[c] = 3
		} else if strings.IndexByte("{}();,?~", byte(c)) >= 0 {
			t[c] = 4
		} else if c >= '0' && c <= '9' {
			t[c] = 2
		}
	}
	return t
}()

func isIdentStart(c byte) bool { return charClass[c]&1 != 0 }

func isIdentChar(c byte) bool { return charClass[c]&2 != 0 }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scan consumes one token starting with c at lx.pos and returns its kind.
func (lx *lexer) scan(c byte) Kind {
	src := lx.src
	switch {
	case c == '/' && lx.peek(1) == '/':
		lx.pos = lineCommentEnd(src, lx.pos+2)
		return Comment
	case c == '/' && lx.peek(1) == '*':
		lx.pos = blockCommentEnd(src, lx.pos+2)
		return Comment
	case c == '#' && lx.bol && lx.directives:
		lx.pos = directiveEnd(src, lx.pos+1)
		return Directive
	case isIdentStart(c):
		p := lx.pos + 1
		for p < len(src) && isIdentChar(src[p]) {
			p++
		}
		word := src[lx.pos:p]
		if p < len(src) && (src[p] == '"' || src[p] == '\'') {
			if k, ok := lx.prefixedLiteral(word, p); ok {
				return k
			}
		}
		lx.pos = p
		return Ident
	case isDigit(c) || c == '.' && isDigit(lx.peek(1)):
		lx.pos = numberEnd(src, lx.pos)
		return Number
	case c == '"':
		lx.pos = quotedEnd(src, lx.pos+1, '"')
		return String
	case c == '\'':
		lx.pos = quotedEnd(src, lx.pos+1, '\'')
		return Char
	case c == '@':
		next := lx.peek(1)
		if next == '"' {
			lx.pos = quotedEnd(src, lx.pos+2, '"')
			return String
		}
		if isIdentStart(next) {
			p := lx.pos + 2
			for p < len(src) && isIdentChar(src[p]) {
				p++
			}
			lx.pos = p
			return Ident
		}
		lx.pos++
		return Punct
	}
	if k := punctLen(src[lx.pos:]); k > 0 {
		lx.pos += k
		return Punct
	}
	lx.pos++
	return Invalid
}

// prefixedLiteral handles encoding prefixes (u8, u, U, L) and raw strings (R, u8R, ...);
// quote is the offset of the opening quote.
func (lx *lexer) prefixedLiteral(word []byte, quote int) (Kind, bool) {
	src := lx.src
	raw := false
	switch string(word) {
	case "u8", "u", "U", "L":
	case "R", "u8R", "uR", "UR", "LR":
		raw = true
	default:
		return 0, false
	}
	if src[quote] == '\'' {
		if raw {
			return 0, false
		}
		lx.pos = quotedEnd(src, quote+1, '\'')
		return Char, true
	}
	if !raw {
		lx.pos = quotedEnd(src, quote+1, '"')
		return String, true
	}
	// R"delim( ... )delim"
	p := quote + 1
	d := p
	for d < len(src) && d-p <= 16 && src[d] != '(' {
		switch src[d] {
		case ' ', ')', '\\', '\t', '\v', '\f', '\n', '"':
			// Not a valid raw-string delimiter: lex as an ordinary string.
			lx.pos = quotedEnd(src, quote+1, '"')
			return String, true
		}
		d++
	}
	if d >= len(src) || src[d] != '(' {
		lx.pos = quotedEnd(src, quote+1, '"')
		return String, true
	}
	delim := src[p:d]
	closeSeq := make([]byte, 0, len(delim)+2)
	closeSeq = append(closeSeq, ')')
	closeSeq = append(closeSeq, delim...)
	closeSeq = append(closeSeq, '"')
	if i := bytes.Index(src[d+1:], closeSeq); i >= 0 {
		lx.pos = d + 1 + i + len(closeSeq)
	} else {
		lx.pos = len(src)
	}
	return String, true
}

// lineCommentEnd returns the end of a // comment body starting at p: the next newline that is
// not spliced.
func lineCommentEnd(src []byte, p int) int {
	start := p
	for p < len(src) {
		i := bytes.IndexByte(src[p:], '\n')
		if i < 0 {
			return len(src)
		}
		q := p + i
		// A backslash right before the newline (or before its \r) splices the next line
		// on, whatever precedes the backslash.
		if q-1 >= start && src[q-1] == '\\' || q-2 >= start && src[q-1] == '\r' && src[q-2] == '\\' {
			p = q + 1
			continue
		}
		return q
	}
	return p
}

func blockCommentEnd(src []byte, p int) int {
	if i := bytes.Index(src[p:], []byte("*/")); i >= 0 {
		return p + i + 2
	}
	return len(src)
}

// quotedEnd scans a string or char literal body starting at p (after the opening quote).
// An unterminated literal ends before the newline.
func quotedEnd(src []byte, p int, quote byte) int {
	for p < len(src) {
		switch src[p] {
		case quote:
			return p + 1
		case '\\':
			if k := splice(src, p); k > 0 {
				p += k
				continue
			}
			p += 2
			continue
		case '\n':
			return p
		}
		p++
	}
	if p > len(src) {
		p = len(src)
	}
	return p
}

// directiveEnd scans a preprocessor line from p: to the first newline that is neither spliced
// nor inside a block comment. Literals are skipped so that "//" inside one is not a comment.
func directiveEnd(src []byte, p int) int {
	for p < len(src) {
		c := src[p]
		switch {
		case c == '\n':
			return p
		case c == '\\' && splice(src, p) > 0:
			p += splice(src, p)
		case c == '/' && p+1 < len(src) && src[p+1] == '*':
			p = blockCommentEnd(src, p+2)
		case c == '/' && p+1 < len(src) && src[p+1] == '/':
			return lineCommentEnd(src, p+2)
		case c == '"' || c == '\'':
			p = quotedEnd(src, p+1, c)
		default:
			p++
		}
	}
	return p
}

// numberEnd scans a preprocessing number: digits, letters, '.', digit separators and signed
// exponents.
func numberEnd(src []byte, p int) int {
	p++
	for p < len(src) {
		c := src[p]
		switch {
		case (c == '+' || c == '-') && (src[p-1]|0x20 == 'e' || src[p-1]|0x20 == 'p'):
			p++
		case c == '\'' && p+1 < len(src) && isIdentChar(src[p+1]):
			p += 2
		case isIdentChar(c) || c == '.':
			p++
		default:
			return p
		}
	}
	return p
}

// punctLen returns the length of the punctuator at the start of b (longest match), or 0.
// A switch on the first byte: this runs for about every other token.
func punctLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	var c1, c2 byte
	if len(b) > 1 {
		c1 = b[1]
	}
	if len(b) > 2 {
		c2 = b[2]
	}
	switch b[0] {
	case '{', '}', '(', ')', ';', ',', '?', '~', '@':
		return 1
	case '[':
		if c1 == '[' {
			return 2
		}
		return 1
	case ']':
		if c1 == ']' {
			return 2
		}
		return 1
	case ':':
		if c1 == ':' {
			return 2
		}
		return 1
	case '.':
		if c1 == '.' && c2 == '.' {
			return 3
		}
		if c1 == '*' {
			return 2
		}
		return 1
	case '-':
		if c1 == '>' {
			if c2 == '*' {
				return 3
			}
			return 2
		}
		if c1 == '-' || c1 == '=' {
			return 2
		}
		return 1
	case '+', '&', '|':
		if c1 == b[0] || c1 == '=' {
			return 2
		}
		return 1
	case '*', '/', '%', '^', '!', '=':
		if c1 == '=' {
			return 2
		}
		return 1
	case '#':
		if c1 == '#' {
			return 2
		}
		return 1
	case '<':
		if c1 == '<' {
			if c2 == '=' {
				return 3
			}
			return 2
		}
		if c1 == '=' {
			if c2 == '>' {
				return 3
			}
			return 2
		}
		return 1
	case '>':
		if c1 == '>' {
			if c2 == '=' {
				return 3
			}
			return 2
		}
		if c1 == '=' {
			return 2
		}
		return 1
	}
	return 0
}

// TokenizeText is Tokenize with a leading '#' read as an ordinary punctuator, not as a
// preprocessor directive: how present/absent intents compare a text with a file.
func TokenizeText(src []byte) []Token {
	return tokenize(src, false)
}

// CodeTokens returns the code tokens of src, as a File holds them: no comments, no
// directives, no tokens of #if 0 branches.
func CodeTokens(src []byte) []Token {
	code, _ := lexCode(nil, nil, src)
	return code
}
