package builder

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mpspatch/mpspatch/internal/lazyregexp"
)

// Phase is the stage a PyTorch build is in, as far as its output tells.
type Phase string

const (
	PhaseStart     Phase = "start"     // pip and setuptools getting going
	PhaseConfigure Phase = "configure" // CMake configuring ("-- ..." lines)
	PhaseCompile   Phase = "compile"   // ninja (or make) building
	PhaseInstall   Phase = "install"   // pip installing the editable package
	PhaseDone      Phase = "done"
	// PhaseVenv and PhaseRequirements come before the build, with --venv: creating the
	// virtual environment and installing the tree's build requirements into it.
	PhaseVenv         Phase = "venv"
	PhaseRequirements Phase = "requirements"
)

// Event is one progress report.
type Event struct {
	Phase Phase
	// Done and Total come from ninja's "[Done/Total]" status; both 0 when unknown.
	Done, Total int
	// Percent is 0..100, or -1 when the output gave no measure yet.
	Percent float64
	// ETA is the estimated time left in the current ninja run; 0 when unknown.
	ETA time.Duration
	// Elapsed is the time since the build started.
	Elapsed time.Duration
	// Line is the output line that caused the event, ANSI codes stripped.
	Line string
}

// Reporter receives progress. Report is called from the goroutines reading the build's
// output, one call at a time.
type Reporter interface {
	Report(Event)
}

// reporterFunc adapts a function to Reporter.
type reporterFunc func(Event)

// Report calls f(e).
func (f reporterFunc) Report(e Event) { f(e) }

var (
	ansiRE = lazyregexp.New("\x1b\\[[0-9;?]*[A-Za-z]")
	// ninja's default NINJA_STATUS is "[%f/%t] "; pip -v may indent subprocess output.
	ninjaRE = lazyregexp.New(`^\s*\[(\d{1,9})/(\d{1,9})\]\s`)
	// make-based CMake builds print "[ 45%] Building ...".
	makeRE = lazyregexp.New(`^\s*\[\s*(\d{1,3})%\]\s`)
	// A compiler diagnostic: "path:line[:col]: [fatal ]error: message".
	compilerErrRE = lazyregexp.New(`^\s*\S[^:]*:\d+(?::\d+)?:\s+(?:fatal\s+)?error:`)
	anyErrRE      = lazyregexp.New(`(?:^|\s)(?:fatal\s+)?error:\s`)
)

// ninjaProgress reads a ninja status line "[done/total] description". ok is false for any
// other line and for impossible counts (done > total, total 0).
func ninjaProgress(line string) (done, total int, ok bool) {
	m := ninjaRE().FindStringSubmatch(stripANSI(line))
	if m == nil {
		return 0, 0, false
	}
	done, err1 := strconv.Atoi(m[1])
	total, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || total == 0 || done > total {
		return 0, 0, false
	}
	return done, total, true
}

func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansiRE().ReplaceAllString(s, "")
}

// tracker turns build output lines into progress events and remembers the first error
// lines. It is safe for concurrent use (stdout and stderr feed it at once).
type tracker struct {
	mu       sync.Mutex
	now      func() time.Time
	start    time.Time
	report   func(Event)
	phase    Phase
	last     Event
	runStart time.Time // when the current ninja run's first status line came
	runDone  int       // its done count then
	runTotal int

	compilerErrs []string
	failed       []string
	otherErrs    []string
}

// maxETA caps estimates (a stalled start would otherwise predict centuries).
const maxETA = 100 * time.Hour

// maxQuoted bounds each kind of remembered error line.
const maxQuoted = 8

// newTracker starts a tracker whose clock is now (time.Now when nil) and which sends
// events to r (none when nil).
func newTracker(r Reporter, now func() time.Time) *tracker {
	if now == nil {
		now = time.Now
	}
	t := &tracker{now: now, phase: PhaseStart, report: func(Event) {}}
	if r != nil {
		t.report = r.Report
	}
	t.start = now()
	t.last = Event{Phase: PhaseStart, Percent: -1}
	return t
}

// line feeds one line of output (without its newline).
func (t *tracker) line(raw string) {
	line := strings.TrimRight(stripANSI(raw), "\r\n")
	t.mu.Lock()
	defer t.mu.Unlock()
	t.noteError(line)
	ev, ok := t.classify(line)
	if !ok {
		return
	}
	ev.Elapsed = t.now().Sub(t.start)
	ev.Line = strings.TrimSpace(line)
	t.last = ev
	t.report(ev)
}

// finish reports the done phase.
func (t *tracker) finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	ev := t.last
	ev.Phase, ev.ETA, ev.Line = PhaseDone, 0, ""
	ev.Elapsed = t.now().Sub(t.start)
	t.last = ev
	t.report(ev)
}

// Last returns the most recent event.
func (t *tracker) Last() Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

func (t *tracker) classify(line string) (Event, bool) {
	if done, total, ok := ninjaProgress(line); ok {
		now := t.now()
		// A new ninja run (PyTorch's build can start several) or a changed total
		// restarts the rate measurement.
		if t.runStart.IsZero() || total != t.runTotal || done < t.last.Done {
			t.runStart, t.runDone, t.runTotal = now, done, total
		}
		t.phase = PhaseCompile
		ev := Event{Phase: PhaseCompile, Done: done, Total: total, Percent: 100 * float64(done) / float64(total)}
		if n := done - t.runDone; n > 0 {
			eta := float64(now.Sub(t.runStart)) / float64(n) * float64(total-done)
			ev.ETA = time.Duration(min(eta, float64(maxETA)))
		}
		return ev, true
	}
	if m := makeRE().FindStringSubmatch(line); m != nil {
		pct, _ := strconv.Atoi(m[1])
		if pct > 100 {
			return Event{}, false
		}
		t.phase = PhaseCompile
		return Event{Phase: PhaseCompile, Percent: float64(pct)}, true
	}
	next := t.phase
	trim := strings.TrimSpace(line)
	switch {
	// CMake's "-- " lines mean configuring unless ninja has started (then they are its
	// install step's "-- Installing: ..."). pip's legacy `setup.py develop` path prints
	// "Installing collected packages" before the build, so install may precede them.
	case strings.HasPrefix(trim, "-- ") && t.phase != PhaseCompile:
		next = PhaseConfigure
	case strings.HasPrefix(trim, "Installing collected packages"),
		strings.HasPrefix(trim, "Successfully installed"),
		strings.HasPrefix(trim, "Created wheel for"),
		strings.HasPrefix(trim, "running egg_info") && t.phase == PhaseCompile:
		next = PhaseInstall
	}
	if next == t.phase {
		return Event{}, false
	}
	t.phase = next
	ev := t.last
	ev.Phase, ev.ETA = next, 0
	if next == PhaseConfigure {
		ev.Done, ev.Total, ev.Percent = 0, 0, -1
	}
	return ev, true
}

func (t *tracker) noteError(line string) {
	trim := strings.TrimSpace(line)
	// The regular expressions below cost microseconds a line; nearly every line of a
	// build has no "error" in it at all.
	if !strings.Contains(trim, "error") && !strings.HasPrefix(trim, "FAILED: ") && !strings.HasPrefix(trim, "CMake Error") {
		return
	}
	switch {
	case compilerErrRE().MatchString(trim), strings.HasPrefix(trim, "CMake Error"):
		if len(t.compilerErrs) < maxQuoted {
			t.compilerErrs = append(t.compilerErrs, trim)
		}
	case strings.HasPrefix(trim, "FAILED: "):
		if len(t.failed) < maxQuoted {
			t.failed = append(t.failed, trim)
		}
	case anyErrRE().MatchString(trim):
		if len(t.otherErrs) < maxQuoted {
			t.otherErrs = append(t.otherErrs, trim)
		}
	}
}

// firstErrors returns the error lines worth quoting, most telling first: compiler
// diagnostics and CMake errors; else ninja's FAILED targets; else any other "error:" line
// (pip's "error: subprocess-exited-with-error" says little, so it comes last).
func (t *tracker) firstErrors(n int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, group := range [][]string{t.compilerErrs, t.failed, t.otherErrs} {
		for _, l := range group {
			if len(out) == n {
				return out
			}
			out = append(out, l)
		}
		if len(out) > 0 {
			break
		}
	}
	return out
}

// lineWriter splits what is written to it into lines for a tracker. \r ends a line too
// (tools redraw with it). A line longer than 64 KiB is cut there.
type lineWriter struct {
	t   *tracker
	fn  func(string) // receives the lines instead of t, when set
	buf []byte
}

const maxLine = 64 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		if c == '\n' || c == '\r' {
			w.flush()
			continue
		}
		if len(w.buf) < maxLine {
			w.buf = append(w.buf, c)
		}
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	if len(w.buf) > 0 && w.fn != nil {
		w.fn(string(w.buf))
		w.buf = w.buf[:0]
	} else if len(w.buf) > 0 {
		w.t.line(string(w.buf))
		w.buf = w.buf[:0]
	}
}
