package metalcheck

import (
	"bytes"
	"testing"
)

// fuzzSeeds are sources that exercise the reader's and the rules' corners (the reader's
// own fuzz target, in internal/cxx, starts from the same ones).
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

// FuzzAnalyze runs the whole per-file analysis on arbitrary input: it must not panic and
// every finding must point inside the file.
func FuzzAnalyze(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		lines := 1 + bytes.Count(src, []byte{'\n'})
		for _, fd := range AuditSources(map[string][]byte{"aten/src/ATen/native/mps/operations/X.mm": src}) {
			if fd.Line < 1 || fd.Line > lines || fd.Col < 1 || fd.Fingerprint == "" {
				t.Fatalf("finding out of the file (%d lines): %+v", lines, fd)
			}
		}
		m := analyze("x.mm", src)
		m.checkGuarded("a::b", "m")
		m.checkThreadLocal("b")
	})
}
