package builder

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNinjaProgress(t *testing.T) {
	tests := []struct {
		line            string
		wantDone, wantT int
		wantOK          bool
	}{
		{"[123/4567] Building CXX object caffe2/CMakeFiles/torch_cpu.dir/__/aten/src/ATen/native/mps/operations/Linear.mm.o", 123, 4567, true},
		{"  [1/9] Building C object CMakeFiles/kernels.dir/src/k3.c.o", 1, 9, true},
		{"\x1b[32m[7/9]\x1b[0m Linking C static library libkernels.a", 7, 9, true},
		{"[4567/4567] Linking CXX shared library lib/libtorch_python.dylib", 4567, 4567, true},
		{"[0/12] Re-running CMake...", 0, 12, true},
		{"[ 45%] Building CXX object foo.o", 0, 0, false}, // make: percent only, not ninja
		{"[10/9] impossible", 0, 0, false},
		{"[1/0] impossible", 0, 0, false},
		{"[1/9]no space after status", 0, 0, false},
		{"-- Configuring done (12.3s)", 0, 0, false},
		{"/src/a.mm:42:5: error: use of undeclared identifier", 0, 0, false},
		{"copying torch/lib/libc10.dylib -> build/lib", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			done, total, ok := ninjaProgress(tt.line)
			if done != tt.wantDone || total != tt.wantT || ok != tt.wantOK {
				t.Errorf("ninjaProgress(%q) = %d, %d, %v; want %d, %d, %v", tt.line, done, total, ok, tt.wantDone, tt.wantT, tt.wantOK)
			}
		})
	}
}

// fakeClock advances by step on every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time {
	c.t = c.t.Add(c.step)
	return c.t
}

func TestTrackerEvents(t *testing.T) {
	clock := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), step: 10 * time.Second}
	var events []Event
	tr := newTracker(reporterFunc(func(e Event) { events = append(events, e) }), clock.now)
	lines := []string{
		"Using pip 23.2.1 from /usr/lib/python3/dist-packages/pip (python 3.11)",
		"  running develop",
		"  -- The CXX compiler identification is AppleClang 16.0.0.16000026",
		"  -- Detecting CXX compiler ABI info",
		"  -- Build files have been written to: /src/pytorch/build",
		"  [1/5] Building CXX object a.o",
		"  warning: unused variable 'x'",
		"  [2/5] Building CXX object b.o",
		"  [3/5] Building CXX object c.o",
		"  [1/2] Re-checking globbed directories...", // a second ninja run: rate restarts
		"  [2/2] Linking CXX shared library libtorch.dylib",
		"[ 50%] Building CXX object make.o",
		"Installing collected packages: torch",
		"Successfully installed torch-2.9.1a0",
	}
	for _, l := range lines {
		tr.line(l)
	}
	tr.finish()

	type brief struct {
		Phase       Phase
		Done, Total int
		Percent     float64
		ETA         time.Duration
	}
	var have []brief
	for _, e := range events {
		have = append(have, brief{e.Phase, e.Done, e.Total, e.Percent, e.ETA})
	}
	// The clock moves 10s per reading: two readings per ninja line (rate and elapsed),
	// so each step takes 20s once the rate is known.
	want := []brief{
		{PhaseConfigure, 0, 0, -1, 0},
		{PhaseCompile, 1, 5, 20, 0},
		{PhaseCompile, 2, 5, 40, 60 * time.Second},
		{PhaseCompile, 3, 5, 60, 40 * time.Second},
		{PhaseCompile, 1, 2, 50, 0},
		{PhaseCompile, 2, 2, 100, 0},
		{PhaseCompile, 0, 0, 50, 0},
		{PhaseInstall, 0, 0, 50, 0},
		{PhaseDone, 0, 0, 50, 0},
	}
	if !slices.Equal(have, want) {
		t.Errorf("events:\n have %+v\n want %+v", have, want)
	}
	if events[1].Line != "[1/5] Building CXX object a.o" {
		t.Errorf("event line = %q, want the trimmed ninja line", events[1].Line)
	}
	for i := 1; i < len(events); i++ {
		if events[i].Elapsed <= events[i-1].Elapsed {
			t.Errorf("Elapsed not increasing at event %d: %v then %v", i, events[i-1].Elapsed, events[i].Elapsed)
		}
	}
}

func TestFirstErrors(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{
		{
			name: "compiler diagnostics first",
			lines: []string{
				"  FAILED: caffe2/CMakeFiles/torch_cpu.dir/MPSStream.mm.o",
				"/src/aten/src/ATen/mps/MPSStream.mm:42:5: error: use of undeclared identifier 'streamLock'",
				"/src/aten/src/ATen/mps/MPSStream.mm:50:1: warning: unused function",
				"In file included from /src/a.h:3:",
				"/src/aten/src/ATen/mps/MPSGuard.h:7:10: fatal error: 'missing.h' file not found",
				"error: subprocess-exited-with-error",
			},
			want: []string{
				"/src/aten/src/ATen/mps/MPSStream.mm:42:5: error: use of undeclared identifier 'streamLock'",
				"/src/aten/src/ATen/mps/MPSGuard.h:7:10: fatal error: 'missing.h' file not found",
			},
		},
		{
			name: "cmake errors count as diagnostics",
			lines: []string{
				"CMake Error at cmake/Dependencies.cmake:1234 (message):",
				"error: subprocess-exited-with-error",
			},
			want: []string{"CMake Error at cmake/Dependencies.cmake:1234 (message):"},
		},
		{
			name:  "failed targets when no diagnostic",
			lines: []string{"FAILED: lib/libtorch_cpu.dylib ", "ld: symbol(s) not found", "error: subprocess-exited-with-error"},
			want:  []string{"FAILED: lib/libtorch_cpu.dylib"},
		},
		{
			name:  "any error line last",
			lines: []string{"Traceback (most recent call last):", "error: subprocess-exited-with-error"},
			want:  []string{"error: subprocess-exited-with-error"},
		},
		{
			name:  "not errors",
			lines: []string{"-- Performing Test HAS_WERROR_RETURN_TYPE", "-Werror=format", "no_error: false", "[3/9] Building errors.c.o"},
		},
		{
			name: "capped",
			lines: func() []string {
				var l []string
				for i := 1; i <= 20; i++ {
					l = append(l, fmt.Sprintf("f.c:%d:1: error: e%d", i, i))
				}
				return l
			}(),
			want: []string{"f.c:1:1: error: e1", "f.c:2:1: error: e2", "f.c:3:1: error: e3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTracker(nil, nil)
			for _, l := range tt.lines {
				tr.line(l)
			}
			have := tr.firstErrors(3)
			if !slices.Equal(have, tt.want) {
				t.Errorf("firstErrors:\n have %q\n want %q", have, tt.want)
			}
		})
	}
}

func TestLineWriter(t *testing.T) {
	// Every line here is an error line, so firstErrors shows how the writer split them.
	tr := newTracker(nil, nil)
	w := &lineWriter{t: tr}
	for _, chunk := range []string{"a.c:1:1: err", "or: one\r\nb.c:2:2: error: two\n", "c.c:3:3: error: th", "ree"} {
		w.Write([]byte(chunk))
	}
	w.flush()
	lines := tr.firstErrors(10)
	want := []string{"a.c:1:1: error: one", "b.c:2:2: error: two", "c.c:3:3: error: three"}
	if !slices.Equal(lines, want) {
		t.Errorf("lines = %q, want %q", lines, want)
	}

	long := &lineWriter{t: newTracker(nil, nil)}
	long.Write([]byte(strings.Repeat("x", maxLine+100)))
	if len(long.buf) != maxLine {
		t.Errorf("a long line kept %d bytes, want the cap %d", len(long.buf), maxLine)
	}
}

func FuzzTrackerLine(f *testing.F) {
	for _, s := range []string{
		"[123/4567] Building CXX object x.o", "[ 45%] Building", "[999999999/999999999] x",
		"-- Configuring done", "a.c:1:2: error: x", "FAILED: x", "\x1b[1m[1/2]\x1b[0m y", "[0/0] z",
		"Successfully installed torch",
	} {
		f.Add(s, "[2/3] next")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		tr := newTracker(reporterFunc(func(e Event) {
			if e.Percent < -1 || e.Percent > 100 {
				t.Errorf("Percent %v out of range for %q", e.Percent, e.Line)
			}
			if e.Done < 0 || e.Done > e.Total || e.ETA < 0 {
				t.Errorf("bad event %+v", e)
			}
		}), nil)
		tr.line(a)
		tr.line(b)
		tr.finish()
		if len(tr.firstErrors(maxQuoted+5)) > maxQuoted {
			t.Error("firstErrors exceeds its cap")
		}
	})
}

// BenchmarkTracker measures the cost of reading build output through the tracker against
// only splitting it into lines (what any log tee does anyway). A PyTorch build prints
// on the order of 10^5 lines; the ratio says what progress tracking adds.
func BenchmarkTracker(b *testing.B) {
	var out strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&out, "    [%d/2000] Building CXX object caffe2/CMakeFiles/torch_cpu.dir/__/aten/src/ATen/native/k%d.cpp.o\n", i, i)
		if i%100 == 0 {
			fmt.Fprintf(&out, "/src/aten/src/ATen/native/k%d.cpp:12:3: warning: unused variable 'x' [-Wunused-variable]\n", i)
		}
	}
	data := []byte(out.String())
	lines := strings.Count(out.String(), "\n")
	var split, tracked time.Duration
	for b.Loop() {
		start := time.Now()
		n := 0
		w := &lineWriter{t: newTracker(nil, nil)}
		for _, c := range data {
			if c == '\n' {
				n++
			}
		}
		split += time.Since(start)
		start = time.Now()
		w.Write(data)
		w.flush()
		tracked += time.Since(start)
		if n != lines {
			b.Fatal("miscounted")
		}
	}
	b.ReportMetric(float64(tracked.Nanoseconds())/float64(b.N*lines), "ns/line")
	b.ReportMetric(float64(tracked)/float64(split), "tracker/split")
}
