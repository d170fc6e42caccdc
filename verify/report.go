package verify

import (
	"fmt"
	"sort"
	"strings"
)

// VerdictRule is the fixed pass rule, printed in every report. A race is not cured by a
// rerun, so there are no automatic reruns and no "passed on retry".
const VerdictRule = "A test passes only if every one of its repetitions passes; " +
	"a single fail, error, crash or timeout in any repetition fails it. Nothing is rerun automatically."

// Report collects everything a run produced, in arrival order. It is an Observer, so it can
// be fed live; the writers render it at any moment, which keeps an interrupted run's results.
type Report struct {
	Info        RunInfo
	Envs        []Env // patched first when both are present
	Results     []Result
	ScalingRows []ScalingRow
	Boundaries  []BoundaryRow
	Notices     []string
	Interrupted bool
}

// Env records or replaces the environment of e.Target.
func (r *Report) Env(e Env) {
	for i := range r.Envs {
		if r.Envs[i].Target == e.Target {
			r.Envs[i] = e
			return
		}
	}
	r.Envs = append(r.Envs, e)
	sort.SliceStable(r.Envs, func(i, j int) bool { return targetRank(r.Envs[i].Target) < targetRank(r.Envs[j].Target) })
}

// Started is ignored: a report holds finished results only.
func (r *Report) Started(string, string) {}

// Result appends res.
func (r *Report) Result(res Result) { r.Results = append(r.Results, res) }

// Scaling appends row.
func (r *Report) Scaling(row ScalingRow) { r.ScalingRows = append(r.ScalingRows, row) }

// Boundary appends a thread-boundary row.
func (r *Report) Boundary(b BoundaryRow) { r.Boundaries = append(r.Boundaries, b) }

// Notice appends a runner notice.
func (r *Report) Notice(target, msg string) { r.Notices = append(r.Notices, target+": "+msg) }

func targetRank(t string) int {
	if t == TargetPatched {
		return 0
	}
	return 1
}

// Targets returns the targets that have an environment or results, patched first.
func (r *Report) Targets() []string {
	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, e := range r.Envs {
		add(e.Target)
	}
	for _, res := range r.Results {
		add(res.Target)
	}
	sort.SliceStable(out, func(i, j int) bool { return targetRank(out[i]) < targetRank(out[j]) })
	return out
}

// EnvOf returns the environment of target.
func (r *Report) EnvOf(target string) (Env, bool) {
	for _, e := range r.Envs {
		if e.Target == target {
			return e, true
		}
	}
	return Env{}, false
}

// Verdict is the aggregate of one test's repetitions against one target.
type Verdict struct {
	Outcome    Outcome  `json:"outcome"` // the worst outcome of any repetition
	Runs       int      `json:"runs"`
	Passes     int      `json:"passes"`
	Duration   float64  `json:"duration"` // total seconds over the repetitions
	Death      string   `json:"death,omitempty"`
	Signatures []string `json:"signatures,omitempty"`
	Message    string   `json:"message,omitempty"` // of the worst repetition
}

// PassRate is Passes/Runs, skips counted as runs that did not fail.
func (v Verdict) PassRate() float64 {
	if v.Runs == 0 {
		return 0
	}
	return float64(v.Passes) / float64(v.Runs)
}

// Short renders the verdict for a table cell: "pass", "crash 7/10".
func (v Verdict) Short() string {
	if v.Runs <= 1 {
		return string(v.Outcome)
	}
	return fmt.Sprintf("%s %d/%d", v.Outcome, v.Passes, v.Runs)
}

// Row is one test with its verdict per target.
type Row struct {
	ID       string             `json:"id"`
	File     string             `json:"file"`
	ByTarget map[string]Verdict `json:"verdicts"`
}

// Rows aggregates the results into one row per test, in first-seen order.
func (r *Report) Rows() []Row {
	idx := map[string]int{}
	var rows []Row
	for _, res := range r.Results {
		i, ok := idx[res.ID]
		if !ok {
			i = len(rows)
			idx[res.ID] = i
			rows = append(rows, Row{ID: res.ID, File: res.File, ByTarget: map[string]Verdict{}})
		}
		v, seen := rows[i].ByTarget[res.Target]
		v.Runs++
		v.Duration += res.Duration
		if res.Outcome == Pass || res.Outcome == Skip {
			v.Passes++
		}
		if !seen || worse(res.Outcome, v.Outcome) {
			v.Outcome = res.Outcome
			v.Message = res.Message
			v.Death = res.Death
		}
		v.Signatures = mergeNames(v.Signatures, res.Signatures)
		rows[i].ByTarget[res.Target] = v
	}
	return rows
}

func mergeNames(have, add []string) []string {
	for _, a := range add {
		found := false
		for _, h := range have {
			if h == a {
				found = true
				break
			}
		}
		if !found {
			have = append(have, a)
		}
	}
	return have
}

// Counts tallies the verdicts of target by outcome.
func (r *Report) Counts(target string) map[Outcome]int {
	c := map[Outcome]int{}
	for _, row := range r.Rows() {
		if v, ok := row.ByTarget[target]; ok {
			c[v.Outcome]++
		}
	}
	return c
}

// Failed reports whether any test of the patched target failed, crashed or timed out. The
// baseline (stock torch) is expected to crash and never fails the run.
func (r *Report) Failed() bool {
	for _, row := range r.Rows() {
		if v, ok := row.ByTarget[TargetPatched]; ok && v.Outcome.Failed() {
			return true
		}
	}
	return false
}

// Status is the one word of the run: pass, fail, or interrupted.
func (r *Report) Status() string {
	switch {
	case r.Interrupted:
		return "interrupted"
	case r.Failed():
		return "fail"
	case len(r.Results) == 0:
		return "empty"
	default:
		return "pass"
	}
}

// Crashes returns the results that crashed or timed out, in arrival order.
func (r *Report) Crashes() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Outcome == Crash || res.Outcome == Timeout {
			out = append(out, res)
		}
	}
	return out
}

// CountsLine renders counts as "12 pass, 1 crash", in severity order.
func CountsLine(c map[Outcome]int) string {
	var parts []string
	for _, o := range []Outcome{Pass, Fail, Error, Crash, Timeout, Skip} {
		if c[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[o], o))
		}
	}
	if len(parts) == 0 {
		return "no results"
	}
	return strings.Join(parts, ", ")
}

// CurveLabel is what a benchmark says about one model's curve against one target: the label
// of its largest thread count (the rows say host-bound, device-bound or scaling).
type CurveLabel struct {
	Target, Model, Label string
	Ceiling              float64
	HostMS, DeviceMS     float64
	MaxThreads           int
	BestFPS              float64
	BestThreads          int
}

// CurveLabels summarises the scaling rows per target and model (threads mode only).
func (r *Report) CurveLabels() []CurveLabel {
	type key struct{ t, m string }
	idx := map[key]int{}
	var out []CurveLabel
	for _, s := range r.ScalingRows {
		if s.Mode == "batched" {
			continue
		}
		k := key{s.Target, s.Model}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, CurveLabel{Target: s.Target, Model: s.Model})
		}
		c := &out[i]
		if s.Threads >= c.MaxThreads {
			c.MaxThreads = s.Threads
			c.Label, c.Ceiling, c.HostMS, c.DeviceMS = s.Label, s.Ceiling, s.HostMS, s.DeviceMS
		}
		if s.FPS > c.BestFPS {
			c.BestFPS, c.BestThreads = s.FPS, s.Threads
		}
	}
	return out
}
