package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mpspatch/mpspatch/internal/pipeline"
)

// How mpspatch run shows itself: each stage's start and end on stderr (runReporter), the
// running stage's own progress (stageView: one redrawn line on a terminal, its lines
// otherwise), and the summary as text or Markdown (also appended to the step summary file).

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// runReporter shows stage progress on stderr: a line as each stage starts and ends, the
// running stage's own progress between them (view).
type runReporter struct {
	p    *printer
	view *stageView
}

func (r runReporter) Start(name string, i, n int, log string) {
	r.view.bar.clear()
	r.p.Progressf("run: [%d/%d] %s (log %s)", i, n, name, log)
}

func (r runReporter) Done(s pipeline.StageReport) {
	r.view.end()
	r.view.bar.clear()
	switch s.Outcome {
	case pipeline.Ran:
		r.p.Progressf("run: %s done in %s%s", s.Name, roundSeconds(s.Seconds), suffix(s.Detail))
	case pipeline.UpToDate:
		r.p.Progressf("run: %s up to date, skipped%s", s.Name, suffix(s.Detail))
	case pipeline.Skipped:
		r.p.Progressf("run: %s skipped: %s", s.Name, s.Reason)
	case pipeline.Failed, pipeline.Interrupted:
		r.p.Progressf("run: %s %s (exit %d): %s", s.Name, s.Outcome, s.Code, s.Reason)
	}
}

// stageView shows the running stage's progress on run's stderr. It is written what the
// stage writes to its stderr, which are already the plain lines a command prints when its
// stderr is not a terminal (a line per build phase or 5%, per clone phase or 10%, never
// one per git update). On a terminal each line replaces the last on one redrawn line (the
// build's progressLine); elsewhere each is printed once. Warnings keep a line of their
// own; a command's closing error line is left to the stage's summary line.
type stageView struct {
	mu   sync.Mutex
	p    *printer
	bar  *progressLine
	part []byte // a line not yet ended
}

func newStageView(p *printer, tty bool) *stageView {
	return &stageView{p: p, bar: newProgressLine(p, tty)}
}

func (v *stageView) Write(b []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.part = append(v.part, b...)
	for {
		i := bytes.IndexByte(v.part, '\n')
		if i < 0 {
			break
		}
		v.show(string(v.part[:i]))
		v.part = v.part[i+1:]
	}
	if len(v.part) > maxViewLine {
		v.show(string(v.part))
		v.part = v.part[:0]
	}
	return len(b), nil
}

// end shows what is left of an unfinished line when a stage ends.
func (v *stageView) end() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.part) > 0 {
		v.show(string(v.part))
		v.part = v.part[:0]
	}
}

func (v *stageView) show(line string) {
	line = strings.TrimRight(line, "\r")
	switch {
	case line == "", strings.HasPrefix(line, "mpspatch: "):
	case strings.HasPrefix(line, "warning: "):
		v.bar.clear()
		v.p.Warnf("%s", strings.TrimPrefix(line, "warning: "))
	default:
		v.bar.update(line, line, false)
	}
}

func suffix(detail string) string {
	if detail == "" {
		return ""
	}
	return ": " + detail
}

func roundSeconds(s float64) string {
	return (time.Duration(s*1000) * time.Millisecond).Round(10 * time.Millisecond).String()
}

func writeRunText(w io.Writer, p *printer, rep runReport) {
	fmt.Fprintf(w, "mpspatch run %s (series %s, device %s)\n", rep.Dir, shortHash(rep.Series), rep.Device)
	for _, s := range rep.Stages {
		c := dim
		switch s.Outcome {
		case pipeline.Ran, pipeline.UpToDate:
			c = green
		case pipeline.Failed, pipeline.Interrupted:
			c = red
		}
		// Pad by the visible width: colour codes must not push the columns apart.
		label := string(s.Outcome)
		fmt.Fprintf(w, "  %-7s %s%s %8s  %s\n", s.Name, p.Paint(c, label), strings.Repeat(" ", max(0, 12-len(label))),
			roundSeconds(s.Seconds), runStageNote(s))
	}
	if rep.Code == 0 {
		fmt.Fprintf(w, "%s in %s\n", p.Paint(green, "ok"), roundSeconds(rep.Seconds))
	} else {
		fmt.Fprintf(w, "%s (exit %d) in %s\n", p.Paint(red, "failed"), rep.Code, roundSeconds(rep.Seconds))
	}
}

// runStageNote is the last column of a stage's line: what it did, or why not, and where
// to look.
func runStageNote(s pipeline.StageReport) string {
	var parts []string
	switch s.Outcome {
	case pipeline.Skipped, pipeline.Failed, pipeline.Interrupted:
		parts = append(parts, s.Reason)
	}
	if s.Detail != "" && s.Outcome != pipeline.Skipped {
		parts = append(parts, s.Detail)
	}
	if s.Report != "" {
		parts = append(parts, "report "+s.Report)
	} else if s.Log != "" && s.Outcome != pipeline.UpToDate {
		parts = append(parts, "log "+s.Log)
	}
	return strings.Join(parts, "; ")
}

// markdownRunSummary renders the summary as a Markdown table, for a CI job summary or a
// pull-request comment.
func markdownRunSummary(rep runReport) string {
	var b strings.Builder
	status := "ok"
	if rep.Code != 0 {
		status = fmt.Sprintf("failed (exit %d)", rep.Code)
	}
	fmt.Fprintf(&b, "### mpspatch run: %s\n\n", status)
	fmt.Fprintf(&b, "Series `%s`, device `%s`, %s.\n\n", shortHash(rep.Series), rep.Device, roundSeconds(rep.Seconds))
	b.WriteString("| stage | outcome | time | notes |\n|---|---|---|---|\n")
	for _, s := range rep.Stages {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", s.Name, s.Outcome, roundSeconds(s.Seconds), markdownCell(runStageNote(s)))
	}
	return b.String()
}

func markdownCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
