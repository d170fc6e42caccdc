package metalcheck

import (
	"strings"
	"testing"
)

// findingsOf audits files in memory and renders the findings of the given rules as
// "file:line RULE", in order.
func findingsOf(files map[string]string, rules ...string) string {
	in := map[string][]byte{}
	for name, src := range files {
		in[name] = []byte(src)
	}
	var have []string
	for _, f := range AuditSources(in) {
		for _, r := range rules {
			if f.Rule == r {
				have = append(have, f.File+":"+itoa(f.Line)+" "+f.Rule)
			}
		}
	}
	return strings.Join(have, ", ")
}

// TestHeldByCallers: the locks a function can count on are those every call holds, at
// the call or through its own callers; a recursive call constrains nothing; a function
// no audited code calls gets none.
func TestHeldByCallers(t *testing.T) {
	src := `void A::f() { }
void A::g() {
  std::lock_guard<std::mutex> a(m1);
  std::lock_guard<std::mutex> b(m2);
  f();
}
void A::h() {
  std::lock_guard<std::mutex> a(m1);
  f();
  r(3);
}
void A::r(int n) {
  if (n > 0) {
    r(n - 1);
  }
}
void A::lone() { }
void A::viaQueue() {
  dispatch_sync(_queue, ^{ lone2(); });
}
void A::lone2() { }
`
	all := []facts{analyze("x.mm", []byte(src)).extract()}
	cg := newCallers(all)
	for _, tt := range []struct{ fn, want string }{
		{"f", "m1"},
		{"r", "m1"},
		{"lone", ""},
		{"lone2", "_queue"},
		{"g", ""},
	} {
		locks, top := cg.heldByCallers("A", tt.fn)
		var have []string
		for _, l := range locks {
			have = append(have, l.String())
		}
		if got := strings.Join(have, " "); got != tt.want || top {
			t.Errorf("%s: held by callers %q (top %v), want %q", tt.fn, got, top, tt.want)
		}
	}
}

// TestSplitLockCounterAcrossFiles: MPS011 judges a counter over every file that changes
// it, with declarations from a header.
func TestSplitLockCounterAcrossFiles(t *testing.T) {
	header := `extern std::mutex g_mutex;
extern uint64_t g_count;
class Stream {
  std::mutex m_mutex;
  void bump();
};
`
	twoStreams := `std::vector<Stream*> g_streams;
void Stream::bump() {
  std::lock_guard<std::mutex> lock(m_mutex);
  g_count++;
}
`
	global := `void bumpGlobal() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_count += 1;
}
`
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"a per-stream mutex (streams are many)", map[string]string{"s.h": header, "a.mm": twoStreams}, "a.mm:4 MPS011"},
		{"one process-wide mutex", map[string]string{"s.h": header, "b.mm": global, "c.mm": global}, ""},
		{"a per-stream mutex here, the global one there", map[string]string{"s.h": header, "a.mm": twoStreams, "b.mm": global}, "a.mm:4 MPS011"},
		{"atomic", map[string]string{"s.h": strings.Replace(header, "extern uint64_t", "extern std::atomic<uint64_t>", 1), "a.mm": twoStreams}, ""},
		{"the stream is one per process", map[string]string{"s.h": header, "a.mm": strings.Replace(twoStreams, "std::vector<Stream*> g_streams;", "static Stream g_stream;", 1)}, ""},
	}
	for _, tt := range tests {
		if have := findingsOf(tt.files, "MPS011"); have != tt.want {
			t.Errorf("%s: have %q, want %q", tt.name, have, tt.want)
		}
	}
}

// TestWaitAcrossFiles: whether a call blocks (MPS010, MPS009) comes from its definition
// in any audited file; MPS009 wants a wait outside a loop (a method that waits for one
// stream), MPS010 any wait of the callee's own code.
func TestWaitAcrossFiles(t *testing.T) {
	calls := `void Op::encode(Stream* s) {
  dispatch_sync(s->queue(), ^{ s->drain(); });
  dispatch_sync(s->queue(), ^{ s->drain(SyncType::COMMIT); });
}
void Hooks::deviceSynchronize() {
  getCurrentMPSStream()->drain();
}
`
	tests := []struct {
		name, def, want string
	}{
		{"waits once", "void Stream::drain() { [_cb waitUntilCompleted]; }\n", "a.mm:2 MPS010, a.mm:6 MPS009"},
		{"waits in a loop", "void Stream::drain() { for (auto cb : _cbs) { [cb waitUntilCompleted]; } }\n", "a.mm:2 MPS010"},
		{"waits in a completion handler", "void Stream::drain() { [_cb addCompletedHandler:^(id b) { [b waitUntilCompleted]; }]; }\n", ""},
		{"does not wait", "void Stream::drain() { [_cb commit]; }\n", ""},
		{"not audited", "", ""},
	}
	for _, tt := range tests {
		files := map[string]string{"a.mm": calls}
		if tt.def != "" {
			files["b.mm"] = tt.def
		}
		if have := findingsOf(files, "MPS009", "MPS010"); have != tt.want {
			t.Errorf("%s: have %q, want %q", tt.name, have, tt.want)
		}
	}
}

// TestFetchReturnedExcusedByCallers: a helper that returns the stream's command buffer
// is fine when every caller runs it on the queue, and a finding as soon as one does not.
func TestFetchReturnedExcusedByCallers(t *testing.T) {
	helper := "id<MTLCommandBuffer> currentBuffer(Stream* s) {\n  return s->commandBuffer();\n}\n"
	onQueue := "void a(Stream* s) {\n  dispatch_sync(s->queue(), ^{ [currentBuffer(s) enqueue]; });\n}\n"
	offQueue := "void b(Stream* s) {\n  [currentBuffer(s) enqueue];\n}\n"
	if have := findingsOf(map[string]string{"h.mm": helper, "a.mm": onQueue}, "MPS013"); have != "" {
		t.Errorf("every caller on the queue: have %q, want none", have)
	}
	if have := findingsOf(map[string]string{"h.mm": helper, "a.mm": onQueue, "b.mm": offQueue}, "MPS013"); have != "h.mm:2 MPS013" {
		t.Errorf("one caller off the queue: have %q, want h.mm:2 MPS013", have)
	}
}

// TestAtomicDeclarationsKeepVerdicts: atomics became declarations (for MPS011); the
// rules that did not see them before judge them as before.
func TestAtomicDeclarationsKeepVerdicts(t *testing.T) {
	src := `static std::atomic<Widget*> g_widget{nullptr};
Widget* get() {
  if (!g_widget) { g_widget = new Widget(); }
  return g_widget;
}
Widget* Factory::get() {
  static std::atomic<Widget*> _cache{nullptr};
  if (_cache == nullptr) { _cache = new Widget(); }
  return _cache;
}
`
	if have := findingsOf(map[string]string{"w.mm": src}, "MPS001", "MPS002", "MPS003"); have != "" {
		t.Errorf("have %q, want no finding (as before atomics were declarations)", have)
	}
}
