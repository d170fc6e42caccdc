package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/mpspatch/mpspatch/verify"
)

// How mpspatch verify shows itself: the environment block, the terminal observer that prints
// each probe, test and scaling row as the session runs, and the final table.

// renderVerify redraws the reports of an archived run (results.jsonl or `verify --json`
// output) with this mpspatch, and exits as that run would have.
func renderVerify(p *printer, opts *verifyOptions) error {
	rep, err := verify.ReadReportFile(opts.render)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("--render %s: %w", opts.render, err))
	}
	if err := verify.WriteReports(opts.reportDir, rep); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if p.json {
		_ = p.StreamSummary(verify.SummaryRecord(rep))
	} else {
		for _, e := range rep.Envs {
			writeEnv(p.out, e)
		}
		// --render redraws the HTML and JUnit reports; results.jsonl is its input, not written.
		writeVerifyTable(p, rep, opts.reportDir, verify.HTMLFile, verify.JUnitFile)
	}
	if rep.Failed() || rep.Interrupted || len(rep.Results) == 0 {
		return &silentError{ExitCheckFailed}
	}
	return nil
}

func writeEnv(w io.Writer, e verify.Env) {
	git := e.TorchGit
	if git == "" {
		git = "unknown"
	}
	dev := e.Device
	if e.DeviceName != "" {
		dev += " (" + e.DeviceName + ")"
	}
	fmt.Fprintf(w, "%s: torch %s (git %s) at %s\n", e.Target, e.Torch, git, e.TorchPath)
	fmt.Fprintf(w, "  provenance: %s\n", e.ProvenanceSummary())
	fmt.Fprintf(w, "  python %s (%s), pytest %s, device %s\n", e.Python, e.Executable, e.Pytest, dev)
}

// verifyTerminal is the terminal half of the report: a progress line per finished test on
// stderr, or in --json mode one JSON line per record on stdout.
type verifyTerminal struct {
	p    *printer
	live bool // stderr is a terminal: show the running test on a line that is redrawn
	open bool // a "running" line is on screen
	info verify.RunInfo
}

func (t *verifyTerminal) Probing(target, interpreter string) {
	if target == verify.TargetPatched {
		t.p.Progressf("verify: probing %s", interpreter)
		return
	}
	t.p.Progressf("verify: probing %s %s", target, interpreter)
}

// Ready shows what is about to be verified: the run's settings (--json) and each
// interpreter's torch, with the verdict rule.
func (t *verifyTerminal) Ready(info verify.RunInfo, envs []verify.Env) {
	t.info = info
	if t.p.json {
		_ = t.p.JSONLine(verify.RunRecord(info))
	}
	for _, e := range envs {
		for _, w := range e.Warnings {
			t.p.Warnf("%s: %s", e.Target, w)
		}
		if t.p.json {
			_ = t.p.JSONLine(verify.EnvRecord(e))
		} else {
			writeEnv(t.p.out, e)
		}
	}
	if !t.p.json {
		fmt.Fprintf(t.p.out, "rule: %s\n\n", verify.VerdictRule)
	}
}

func (t *verifyTerminal) Running(e verify.Env, files int) {
	t.clear()
	t.p.Progressf("verify: %s: %s on %s, profile %s, repeat %d", e.Target, plural(files, "suite file"), e.Device, t.info.Profile, t.info.Repeat)
}

// clear removes the "running" line before a permanent line is written.
func (t *verifyTerminal) clear() {
	if t.open {
		fmt.Fprint(t.p.err, "\r\x1b[K")
		t.open = false
	}
}

func (t *verifyTerminal) Env(e verify.Env) {
	if t.p.json {
		_ = t.p.JSONLine(verify.EnvRecord(e))
	}
}

func (t *verifyTerminal) Started(target, id string) {
	if !t.live {
		return
	}
	t.clear()
	fmt.Fprintf(t.p.err, "[%s] running %s", target, id)
	t.open = true
}

func (t *verifyTerminal) Result(r verify.Result) {
	if t.p.json {
		_ = t.p.JSONLine(verify.ResultRecord(r))
	}
	word := strings.ToUpper(string(r.Outcome))
	c := green
	switch {
	case r.Outcome == verify.Skip:
		c = dim
	case r.Outcome.Failed():
		c = red
	}
	extra := ""
	if r.Death != "" {
		extra += " " + r.Death
	}
	if len(r.Signatures) > 0 {
		extra += " [" + strings.Join(r.Signatures, ",") + "]"
	}
	t.clear()
	rep := ""
	if r.Repeat > 1 {
		rep = fmt.Sprintf(" #%d", r.Repeat)
	}
	t.p.Progressf("[%s] %s %s%s (%.2fs)%s", r.Target, t.p.paintErr(c, fmt.Sprintf("%-7s", word)), r.ID, rep, r.Duration, extra)
}

func (t *verifyTerminal) Scaling(s verify.ScalingRow) {
	if t.p.json {
		_ = t.p.JSONLine(verify.ScalingRecord(s))
		return
	}
	t.clear()
	t.p.Progressf("[%s] scaling %s %s x%d: %.1f fwd/s, efficiency %.2f (%s)", s.Target, s.Model, s.Mode, s.Threads, s.FPS, s.Efficiency, s.Label)
}

func (t *verifyTerminal) Boundary(b verify.BoundaryRow) {
	if t.p.json {
		_ = t.p.JSONLine(verify.BoundaryRecord(b))
		return
	}
	t.clear()
	t.p.Progressf("[%s] thread boundary %s: %d of %d", b.Target, b.Op, b.Threads, b.Max)
}

func (t *verifyTerminal) Notice(target, msg string) {
	if t.p.json {
		_ = t.p.JSONLine(verify.NoticeRecord(target, msg))
	}
	t.clear()
	t.p.Progressf("[%s] %s", target, msg)
}

// writeVerifyTable is the text result: one row per test with a column per target, then the
// crashes with their signatures, the scaling labels, and the verdict.
func writeVerifyTable(p *printer, rep *verify.Report, reportDir string, written ...string) {
	w := p.out
	targets := rep.Targets()
	tw := newColumnWriter(w, 2)
	head := []string{"TEST"}
	for _, t := range targets {
		head = append(head, strings.ToUpper(t))
	}
	head = append(head, "TIME", "NOTE")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range rep.Rows() {
		cells := []string{row.ID}
		var notes []string
		for _, t := range targets {
			v, ok := row.ByTarget[t]
			if !ok {
				cells = append(cells, "-")
				continue
			}
			c := green
			if v.Outcome.Failed() {
				c = red
			} else if v.Outcome == verify.Skip {
				c = dim
			}
			cells = append(cells, p.Paint(c, v.Short()))
			if v.Outcome.Failed() {
				n := v.Death
				if len(v.Signatures) > 0 {
					n = strings.TrimSpace(n + " [" + strings.Join(v.Signatures, ",") + "]")
				}
				if n == "" {
					n = truncate(v.Message, 70)
				}
				if len(targets) > 1 {
					n = t + ": " + n
				}
				notes = append(notes, n)
			}
		}
		dur := "-"
		if v, ok := row.ByTarget[verify.TargetPatched]; ok {
			dur = fmt.Sprintf("%.1fs", v.Duration)
		}
		cells = append(cells, dur, strings.Join(notes, "; "))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()

	if crashes := rep.Crashes(); len(crashes) > 0 {
		fmt.Fprintln(w, "\ncrashes and timeouts:")
		for _, c := range crashes {
			fmt.Fprintf(w, "  %s %s #%d: %s\n", c.Target, c.ID, c.Repeat, c.Message)
			for _, s := range c.Signatures {
				fmt.Fprintf(w, "      %s\n", s)
			}
			if c.Log != "" {
				fmt.Fprintf(w, "      log: %s\n", filepath.Join(reportDir, c.Log))
			}
		}
	}
	if curves := rep.CurveLabels(); len(curves) > 0 {
		fmt.Fprintln(w, "\nscaling:")
		for _, c := range curves {
			fmt.Fprintf(w, "  %s %s: %s at %s; best %.1f fwd/s at %s\n",
				c.Target, c.Model, c.Label, plural(c.MaxThreads, "thread"), c.BestFPS, plural(c.BestThreads, "thread"))
		}
	}
	if len(rep.Boundaries) > 0 {
		fmt.Fprintln(w, "\nthread boundary (largest passing count):")
		for _, b := range rep.Boundaries {
			fmt.Fprintf(w, "  %s %s: %d of %d\n", b.Target, b.Op, b.Threads, b.Max)
		}
	}
	fmt.Fprintln(w)
	for _, t := range targets {
		fmt.Fprintf(w, "%s: %s\n", t, verify.CountsLine(rep.Counts(t)))
	}
	status := rep.Status()
	c := green
	if status != "pass" {
		c = red
	}
	fmt.Fprintf(w, "verify: %s; reports in %s (%s)\n", p.Paint(c, strings.ToUpper(status)), reportDir, strings.Join(written, ", "))
}

func truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
