package cxx

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scopesOf renders the brace scopes of src in order: kind, and the function name or
// region where there is one.
func scopesOf(src string) string {
	m := Read("x.mm", []byte(src))
	var parts []string
	for _, sc := range m.scopes[1:] {
		s := sc.kind.String()
		if sc.kind == ScopeFunction && sc.fn >= 0 {
			s += "(" + m.funcs[sc.fn].name + ")"
		}
		if sc.kind == ScopeClass {
			s += "(" + sc.name + ")"
		}
		if sc.region != "" {
			s += "[" + sc.regionKind + " " + sc.region + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestScopes(t *testing.T) {
	tests := []struct{ src, want string }{
		{"namespace at::mps { namespace { } }", "namespace namespace"},
		{`extern "C" { int f(); }`, "namespace"},
		{"class A : public B<C<D>> { void f() { } };", "class(A) function(A::f)"},
		{"template <typename T> struct TORCH_API S final { T x{}; };", "class(S) init"},
		{"void MPSStream::synchronize(SyncType t) { if (t) { } else { } }", "function(MPSStream::synchronize) control control"},
		{"Foo::Foo(int a) : a_{a}, b_(2), c_{} { }", "init init function(Foo::Foo)"},
		{"void f() { auto l = [&](int x) mutable -> int { return x; }; }", "function(f) lambda"},
		{"void f() { auto l = [] { }; int a[] = {1, 2}; std::vector<int> v{3}; }", "function(f) lambda init init"},
		{"void f() { dispatch_sync(_serialQueue, ^() { @autoreleasepool { } }); }", "function(f) block[dispatch_sync _serialQueue] plain"},
		{"void f() { dispatch_sync_with_rethrow(s->queue(), ^{ }); }", "function(f) block[dispatch_sync_with_rethrow queue]"},
		{"void f() { std::call_once(flag, [&]() { }); }", "function(f) lambda[call_once flag]"},
		{"void f() { dispatch_async(q, ^{ }); }", "function(f) block"},
		{"void f() { @synchronized(self) { } }", "function(f) synchronized[@synchronized self]"},
		{"TORCH_IMPL_FUNC(add_out_mps)(const Tensor& a) { }", "function(add_out_mps)"},
		{"@implementation Cache\n- (void)store:(id)x forKey:(id)k { [[X alloc] init]; }\n@end", "function(-[Cache store:forKey:])"},
		{"@interface Foo : NSObject { int _x; }\n- (void)bar;\n@end", "class(Foo)"},
		{"bool operator==(const A& a, const A& b) { return true; }", "function(operator==)"},
		{"A::~A() { }", "function(A::~A)"},
		{"void f() { switch (x) { case K::A: { break; } default: { } } }", "function(f) control plain plain"},
		{"#if 0\nvoid f() {\n#else\nvoid g() {\n#endif\n}", "function(g)"},
		{"#ifdef X\nvoid f() {\n#else\nvoid g() {\n#endif\n}", "function(f)"},
		{"[[nodiscard]] int f() { return [[obj a] b]; }", "function(f)"},
		{"int T::operator[](int i) { return i; }", "function(T::operator[])"},
		{"void f() { return; } }} void g() { }", "function(f) function(g)"},
		{"C10_DEFINE_REGISTRY(Registry, Callback)\nnamespace alloc { void f() { } }", "namespace function(f)"},
		{"REGISTER_DISPATCH(add_stub, &add_kernel)\nvoid g() { }", "function(g)"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			if have := scopesOf(tt.src); have != tt.want {
				t.Errorf("scopes of %q:\nhave %s\nwant %s", tt.src, have, tt.want)
			}
		})
	}
}

func TestDeclarations(t *testing.T) {
	src := `
static std::unordered_map<std::string, std::vector<int>> g_map;
static thread_local Cache* t_cache = nullptr;
const std::map<int, int> kTable = {{1, 2}};
std::mutex g_mutex;
extern std::recursive_mutex g_rmutex;
int f(int a);
class Lib {
 public:
  static Lib* _instance;
  std::unordered_map<std::string, id> libMap;
  NSMutableDictionary* dict;
  void method();
 private:
  std::mutex m_;
  std::atomic<uint64_t> m_count{0};
};
Lib* Lib::_instance = nullptr;
static std::atomic_int g_hits;
void g() { static std::mutex s_m; static thread_local std::vector<int> t_v; }
`
	m := Read("x.mm", []byte(src))
	var have []string
	for _, d := range m.decls {
		have = append(have, fmt.Sprintf("%s static=%v member=%v tl=%v const=%v container=%v mutex=%v atomic=%v",
			d.Qualified(), d.Static, d.Member, d.ThreadLocal, d.Const, d.Container, d.Mutex, d.Atomic))
	}
	for _, f := range m.funcs {
		for _, name := range []string{"s_m", "t_v"} {
			if d := f.statics[name]; d != nil {
				have = append(have, fmt.Sprintf("%s.%s local tl=%v container=%v mutex=%v", f.name, name, d.ThreadLocal, d.Container, d.Mutex))
			}
		}
	}
	want := []string{
		"g_map static=true member=false tl=false const=false container=true mutex=false atomic=false",
		"t_cache static=true member=false tl=true const=false container=false mutex=false atomic=false",
		"kTable static=true member=false tl=false const=true container=true mutex=false atomic=false",
		"g_mutex static=true member=false tl=false const=false container=false mutex=true atomic=false",
		"g_rmutex static=true member=false tl=false const=false container=false mutex=true atomic=false",
		"Lib::_instance static=true member=false tl=false const=false container=false mutex=false atomic=false",
		"Lib::libMap static=false member=true tl=false const=false container=true mutex=false atomic=false",
		"Lib::dict static=false member=true tl=false const=false container=true mutex=false atomic=false",
		"Lib::m_ static=false member=true tl=false const=false container=false mutex=true atomic=false",
		"Lib::m_count static=false member=true tl=false const=false container=false mutex=false atomic=true",
		"Lib::_instance static=true member=false tl=false const=false container=false mutex=false atomic=false",
		"g_hits static=true member=false tl=false const=false container=false mutex=false atomic=true",
		"g.s_m local tl=false container=false mutex=true",
		"g.t_v local tl=true container=true mutex=false",
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Errorf("declarations:\nhave\n%s\nwant\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}

func TestHeldLocks(t *testing.T) {
	src := `void f() {
  std::unique_lock<std::mutex> lk(m1, std::defer_lock);
  A;
  lk.lock();
  B;
  {
    std::scoped_lock both(m2, Lib::m3);
    C;
  }
  D;
  lk.unlock();
  E;
  @synchronized(obj) { F; }
  dispatch_sync(q, ^{ G; });
  run([&] { std::lock_guard<std::mutex> g(m4); H; });
  I;
}
`
	m := Read("x.mm", []byte(src))
	want := map[string]string{"A": "", "B": "m1", "C": "m1 m2 m3", "D": "m1", "E": "", "F": "obj", "G": "q", "H": "m4", "I": ""}
	for i := range m.code {
		name := m.Text(int32(i))
		w, ok := want[name]
		if !ok {
			continue
		}
		held, _ := m.HeldLocks(int32(i))
		if have := strings.Join(held, " "); have != w {
			t.Errorf("locks held at %s: have %q, want %q", name, have, w)
		}
	}
}

// TestIsLocalMatchesLocalNames checks that answering "is this name a local" by scanning
// the function gives the set's answer, for every identifier of every function of
// metalcheck's fixture tree, asked more often than the scan limit.
func TestIsLocalMatchesLocalNames(t *testing.T) {
	t.Parallel()
	srcs := map[string][]byte{}
	err := filepath.WalkDir("../../testdata/tree", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".h", ".mm", ".cpp":
			b, err := os.ReadFile(path)
			srcs[path] = b
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked, locals := 0, 0
	for name, src := range srcs {
		scanned, set := Read(name, src), Read(name, src)
		scans, sets := newLocals(scanned), newLocals(set)
		for fi := range scanned.funcs {
			f := &scanned.funcs[fi]
			for k := f.headStart; k < f.close && int(k) < len(scanned.code); k++ {
				if !scanned.IsIdent(k) {
					continue
				}
				id := scanned.Text(k)
				want := sets.names(int32(fi))[id] && set.funcs[fi].statics[id] == nil
				if got := scans.IsLocal(int32(fi), id); got != want {
					t.Errorf("%s: %s: isLocal(%q) = %v, the set says %v", name, f.name, id, got, want)
				}
				checked++
				if want {
					locals++
				}
			}
		}
	}
	if checked < 1000 || locals < 50 {
		t.Fatalf("checked %d names, %d locals: the fixtures should give more", checked, locals)
	}
}

// TestDispatchTargets: blocks and lambdas dispatched onto a serial queue know the queue
// and whether the call waits for them; global and main queues, and blocks passed to
// anything else, are not dispatched.
func TestDispatchTargets(t *testing.T) {
	tests := []struct{ src, want string }{
		{"void f() { dispatch_sync(_serialQueue, ^() { }); }", "sync _serialQueue"},
		{"void f() { dispatch_sync_with_rethrow(stream->queue(), ^{ }); }", "sync stream->queue()"},
		{"void f() { dispatch_async(getCurrentMPSStream()->queue(), ^{ }); }", "async getCurrentMPSStream()->queue()"},
		{"void f() { dispatch_after(when, q, ^{ }); }", "async q"},
		{"void f() { dispatch_async(dispatch_get_global_queue(0, 0), ^{ }); }", "-"},
		{"void f() { dispatch_async(dispatch_get_main_queue(), ^{ }); }", "-"},
		{"void f() { [cb addCompletedHandler:^(id<MTLCommandBuffer> b) { }]; }", "-"},
		{"void f() { run(q, ^{ }); }", "-"},
		{"void f() { std::call_once(flag, [&] { }); }", "-"},
	}
	for _, tt := range tests {
		m := Read("x.mm", []byte(tt.src))
		var have []string
		for _, sc := range m.scopes {
			if sc.kind != ScopeBlock && sc.kind != ScopeLambda {
				continue
			}
			switch sc.dispatch {
			case DispatchedSync:
				have = append(have, "sync "+sc.queue)
			case DispatchedAsync:
				have = append(have, "async "+sc.queue)
			default:
				have = append(have, "-")
			}
		}
		if got := strings.Join(have, ", "); got != tt.want {
			t.Errorf("%s: have %q, want %q", tt.src, got, tt.want)
		}
	}
}
