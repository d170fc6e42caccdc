package cxx

import (
	"fmt"
	"strings"
	"testing"
)

// render lists tokens as kind:text, one per line.
func render(src string, toks []Token) string {
	var b strings.Builder
	for _, t := range toks {
		fmt.Fprintf(&b, "%s:%s\n", t.Kind, src[t.Off:t.End])
	}
	return b.String()
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"scope and arrow", "a::b->c", "ident:a\npunct:::\nident:b\npunct:->\nident:c\n"},
		{"attribute brackets", "[[nodiscard]] int f();", "punct:[[\nident:nodiscard\npunct:]]\nident:int\nident:f\npunct:(\npunct:)\npunct:;\n"},
		{"line comment", "x // if (!g) g = new G;\ny", "ident:x\ncomment:// if (!g) g = new G;\nident:y\n"},
		{"block comment", "a /* b\n c */ d", "ident:a\ncomment:/* b\n c */\nident:d\n"},
		{"unterminated block comment", "a /* b", "ident:a\ncomment:/* b\n"},
		{"string with escapes", `s = "a\"b" ;`, "ident:s\npunct:=\nstring:\"a\\\"b\"\npunct:;\n"},
		{"unterminated string stops at newline", "\"abc\nd", "string:\"abc\nident:d\n"},
		{"raw string", "R\"x(a)\" b)x\" c", "string:R\"x(a)\" b)x\"\nident:c\n"},
		{"raw string over lines", "u8R\"(\nline\n)\"", "string:u8R\"(\nline\n)\"\n"},
		{"objc string and keyword", `@synchronized(self) { @"x"; }`, "ident:@synchronized\npunct:(\nident:self\npunct:)\npunct:{\nstring:@\"x\"\npunct:;\npunct:}\n"},
		{"char literals", `'a' L'\n' '\''`, "char:'a'\nchar:L'\\n'\nchar:'\\''\n"},
		{"numbers", "1'000'000 0x1p-3 1.5e+3f .5", "number:1'000'000\nnumber:0x1p-3\nnumber:1.5e+3f\nnumber:.5\n"},
		{"directive with continuation", "#define X \\\n  1\nint y;", "directive:#define X \\\n  1\nident:int\nident:y\npunct:;\n"},
		{"directive with block comment", "#if 0 /* a\nb */\nx", "directive:#if 0 /* a\nb */\nident:x\n"},
		{"hash not at line start", "a # b", "ident:a\npunct:#\nident:b\n"},
		{"comment before directive", "/* c */ #pragma once\n", "comment:/* c */\ndirective:#pragma once\n"},
		{"longest punctuators", "a<<=b>>=c<=>d...e->*f", "ident:a\npunct:<<=\nident:b\npunct:>>=\nident:c\npunct:<=>\nident:d\npunct:...\nident:e\npunct:->*\nident:f\n"},
		{"invalid byte", "a ` b", "ident:a\ninvalid:`\nident:b\n"},
		{"utf8 identifier", "int größe;", "ident:int\nident:größe\npunct:;\n"},
		{"block caret", "^{ x(); }", "punct:^\npunct:{\nident:x\npunct:(\npunct:)\npunct:;\npunct:}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have := render(tt.src, Tokenize([]byte(tt.src)))
			if have != tt.want {
				t.Errorf("Tokenize(%q):\nhave\n%s\nwant\n%s", tt.src, have, tt.want)
			}
		})
	}
}

func TestTokenizeLineCol(t *testing.T) {
	src := "a\n  /* x\n y */ b\n\tc \\\n d"
	want := []struct{ line, col int }{{1, 1}, {2, 3}, {3, 7}, {4, 2}, {5, 2}}
	toks := Tokenize([]byte(src))
	if len(toks) != len(want) {
		t.Fatalf("have %d tokens, want %d: %s", len(toks), len(want), render(src, toks))
	}
	var cur lineCursor
	for i, w := range want {
		line, col := toks[i].Pos([]byte(src))
		if line != w.line || col != w.col {
			t.Errorf("token %d %q at %d:%d, want %d:%d", i, src[toks[i].Off:toks[i].End], line, col, w.line, w.col)
		}
		// The cursor answers the same, asked forwards and then backwards.
		if l, c := cur.pos([]byte(src), int(toks[i].Off)); l != w.line || c != w.col {
			t.Errorf("cursor: token %d at %d:%d, want %d:%d", i, l, c, w.line, w.col)
		}
	}
	for i := len(want) - 1; i >= 0; i-- {
		if l, c := cur.pos([]byte(src), int(toks[i].Off)); l != want[i].line || c != want[i].col {
			t.Errorf("cursor backwards: token %d at %d:%d, want %d:%d", i, l, c, want[i].line, want[i].col)
		}
	}
}

// checkTokens asserts the invariants every tokenization must keep: tokens are ordered and
// disjoint, everything between them is white space or a backslash-newline, and each token's
// line and column match its offset.
func checkTokens(t *testing.T, src []byte, toks []Token) {
	t.Helper()
	prev := 0
	prevLine := 1
	var cur lineCursor
	at, line, col := 0, 1, 1
	for i, tok := range toks {
		off, end := int(tok.Off), int(tok.End)
		if off < prev || end <= off || end > len(src) {
			t.Fatalf("token %d [%d,%d) out of order or empty (previous end %d, len %d)", i, off, end, prev, len(src))
		}
		if gap := src[prev:off]; !isBlank(gap) {
			t.Fatalf("bytes %q before token %d are not covered by a token", gap, i)
		}
		for ; at < off; at++ { // line and column by walking the bytes
			if src[at] == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		if l, c := tok.Pos(src); l != line || c != col {
			t.Fatalf("token %d at %d:%d, want %d:%d", i, l, c, line, col)
		}
		if l, c := cur.pos(src, off); l != line || c != col {
			t.Fatalf("cursor: token %d at %d:%d, want %d:%d", i, l, c, line, col)
		}
		if line < prevLine {
			t.Fatalf("token %d on line %d after line %d", i, line, prevLine)
		}
		prev, prevLine = end, line
	}
	if !isBlank(src[prev:]) {
		t.Fatalf("trailing bytes %q not covered", src[prev:])
	}
}

func isBlank(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
		case '\\':
			if k := splice(b, i); k > 0 {
				i += k - 1
				continue
			}
			return false
		default:
			return false
		}
	}
	return true
}

var fuzzSeeds = []string{
	"",
	"C10_DEFINE_REGISTRY(R, T)\nnamespace a { void f() { } }",
	"thread_local M t; void getK(int k) { if (t.count(k)) { return; } std::lock_guard<std::mutex> l(m); }",
	"void S::commit() { std::lock_guard<std::mutex> l(m_); [b commit]; } void g(S* s) { s->commit(); }",
	"void d() { std::unique_lock<std::mutex> l(m); [cb waitUntilCompleted]; dispatch_sync(q, ^{ dispatch_sync(r, ^{}); }); }",
	"void H::deviceSynchronize() { for (auto* s : all) { s->synchronize(W); } getCurrentMPSStream()->synchronize(W); }",
	"class B : public A {}; static B b; void A::malloc() { std::lock_guard<std::mutex> l(m_mutex); }",
	"int x;",
	"#define A(x) \\\n  do { x; } while (0)\n",
	"R\"delim(raw \" )\" text)delim\"",
	"R\"(unterminated",
	"u8\"s\" L'c' U\"w\" uR\"(x)\"",
	"@\"objc\" @synchronized(x) { [obj msg:arg] }",
	"/* open",
	"\"open\n",
	"'\\",
	"a\\\nb",
	"[[nodiscard]] auto f = [&](int a) mutable -> int { return a; };",
	"if (!g) g = new G(); // if (!h)\n",
	"dispatch_sync(q, ^{ s.insert(1); });",
	"\x00\xff\xfe`$@",
	"#if 0\n}\n#else\n{\n#endif\n",
	"class A : public B<C<D>> { std::map<int, std::vector<int>> m; };",
	"void A::f() : x_{1}, y_(2) { if (x_ == nullptr) { x_ = 0; } }",
	"}}}{{{)))(((",
	"- (void)foo:(int)x bar:(id)y { [y baz]; }",
}

func FuzzTokenize(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		toks := Tokenize(src)
		checkTokens(t, src, toks)
		checkTokens(t, src, tokenize(src, false))
		// Code mode keeps a subsequence of the same tokens ([[ split in two), in order.
		code, dirs := lexCode(nil, nil, src)
		k := 0
		for _, c := range code {
			for k < len(toks) && toks[k].End <= c.Off {
				k++
			}
			if k == len(toks) || c.Off < toks[k].Off || c.End > toks[k].End || toks[k].Kind == Comment || toks[k].Kind == Directive {
				t.Fatalf("code token [%d,%d) is not part of a code token of Tokenize", c.Off, c.End)
			}
		}
		nd := 0
		for _, tk := range toks {
			if tk.Kind == Directive {
				nd++
			}
		}
		if nd != len(dirs) {
			t.Fatalf("code mode returned %d directives, Tokenize %d", len(dirs), nd)
		}
	})
}
