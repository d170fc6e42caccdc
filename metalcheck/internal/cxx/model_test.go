package cxx

import (
	"strings"
	"testing"
)

// TestModelHandsOutCopies: what the model hands out can be changed by the caller without
// changing the model, so that the rules, which read it, cannot rewrite it for each other.
func TestModelHandsOutCopies(t *testing.T) {
	src := `class Lib : public Base { std::mutex m_; };
static std::map<int, int> g_map;
static Lib g_lib;
void f() { static std::mutex s_b; static int s_a; std::lock_guard<std::mutex> g(m_); }
`
	m := Read("x.mm", []byte(src))
	ds := m.Decls()
	if len(ds) != 3 {
		t.Fatalf("%d declarations, want 3: %+v", len(ds), ds)
	}
	ds[0].Name = "changed"
	if got := m.Decls()[0].Name; got != "m_" {
		t.Errorf("Decls()[0].Name = %q after the caller changed its copy, want m_", got)
	}
	in := m.Instances()
	if len(in) == 0 {
		t.Fatal("no instances")
	}
	in[0].Class = "changed"
	if got := m.Instances()[0].Class; got == "changed" {
		t.Error("Instances() shares the model's slice")
	}
	bs := m.Bases()
	if len(bs) != 1 || bs[0] != (ClassBase{Class: "Lib", Base: "Base"}) {
		t.Fatalf("Bases() = %+v, want Lib : Base", bs)
	}
	bs[0].Base = "changed"
	if got := m.Bases()[0].Base; got != "Base" {
		t.Errorf("Bases()[0].Base = %q after the caller changed its copy", got)
	}
	if m.NumFuncs() != 1 {
		t.Fatalf("%d functions, want 1", m.NumFuncs())
	}
	f := m.Func(0)
	d, ok := f.Static("s_b")
	if !ok || !d.Mutex {
		t.Fatalf("Static(s_b) = %+v, %v; want the mutex", d, ok)
	}
	d.Mutex = false
	if d2, _ := f.Static("s_b"); !d2.Mutex {
		t.Error("Static hands out the model's declaration, not a copy")
	}
	var names []string
	for _, d := range f.Statics() {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, " "); got != "s_b s_a" {
		t.Errorf("Statics() = %s, want source order s_b s_a", got)
	}
	sc := m.Scope(f.Scope())
	if sc.NumLocks() != 1 {
		t.Fatalf("%d lock statements in f, want 1", sc.NumLocks())
	}
	for ev := range sc.Locks() {
		ev.Name = "changed"
	}
	for ev := range sc.Locks() {
		if ev.Name != "m_" {
			t.Errorf("lock event names %q after the caller changed its copy, want m_", ev.Name)
		}
	}
}
