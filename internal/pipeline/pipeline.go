package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mpspatch/mpspatch/internal/confined"
)

// Outcome is what became of one stage in one run.
type Outcome string

// The outcomes, in the words the summary uses.
const (
	Ran         Outcome = "ran"         // ran and succeeded
	UpToDate    Outcome = "up-to-date"  // skipped: its inputs match the stamp of its last success
	Skipped     Outcome = "skipped"     // not run here, for the stated reason (needs macOS, ...)
	Failed      Outcome = "failed"      // ran and failed; Code says how
	Interrupted Outcome = "interrupted" // Ctrl-C or SIGTERM while it ran
	NotReached  Outcome = "not-reached" // an earlier stage failed or was interrupted
)

// Stage is one step of the pipeline.
type Stage struct {
	Name string
	// Skip, when set, returns why the stage does not run in this run ("" runs it). A
	// skipped stage still contributes its reason to the digest chain, so that when it
	// starts running later, everything after it runs again too.
	Skip func() string
	// Inputs returns what the stage's result depends on, as name → value (a file's hash,
	// a flag, a version). It is called just before the stage would run, after the stages
	// before it have run, so it may look at their results. An error fails the stage
	// before it starts: it gets no log, and no stamp is read, removed or written, for it
	// or any stage after it (a precondition refused writes nothing).
	Inputs func(ctx context.Context) (map[string]string, error)
	// State, when set, returns the state of what the stage works on, which the stage
	// itself changes (apply: the tree's files). It is part of the stage's digest like
	// Inputs, read before the stage to judge whether it is up to date, and read again
	// after the stage ran: the stamp records the state the stage left, so the stage is
	// up to date exactly while the state is still that one (an unapplied tree is not).
	State func(ctx context.Context) (map[string]string, error)
	// Run does the work, writing its full output to log. The returned Result says where
	// its report is; an error carries the exit code the caller's CodeOf maps it to.
	Run func(ctx context.Context, log io.Writer) (Result, error)
}

// Result is what a stage that ran reports.
type Result struct {
	Detail string `json:"detail,omitempty"` // one line: "10 patches applied", "254 passed"
	Report string `json:"report,omitempty"` // where its full report is, when it has one
}

// StageReport is one line of the summary.
type StageReport struct {
	Name    string  `json:"stage"`
	Outcome Outcome `json:"outcome"`
	Code    int     `json:"code"`
	Reason  string  `json:"reason,omitempty"` // why skipped, up to date, or failed
	Detail  string  `json:"detail,omitempty"`
	Seconds float64 `json:"seconds"`
	Log     string  `json:"log,omitempty"`
	Report  string  `json:"report,omitempty"`
	Digest  string  `json:"digest,omitempty"`
}

// Summary is the result of a run.
type Summary struct {
	Stages  []StageReport `json:"stages"`
	Code    int           `json:"code"` // the first failing stage's code, else 0
	Seconds float64       `json:"seconds"`
}

// Reporter receives progress: a stage starting, and each stage's final report.
type Reporter interface {
	Start(name string, index, total int, log string)
	Done(r StageReport)
}

// Options configure Run.
type Options struct {
	// Stamps holds one stamp per stage; Logs one log per stage run. Both are confined
	// to their directory: a link there is replaced or refused, never followed. Neither
	// is touched before a stage's Inputs succeed: a run whose first stage is refused by
	// its Inputs may pass neither.
	Stamps *confined.Dir
	Logs   *confined.Dir
	// Key authenticates the stamps (internal/statekey).
	Key []byte
	// Checkout identifies the tree the stamps describe (confined.Identity). It is part
	// of every stamp's MAC, and a stamp made for another checkout is ignored: stamps
	// copied along with a tree, or into another one, are not that tree's.
	Checkout string
	// From forces that stage and every later one to run; Until stops after that stage.
	From, Until string
	// CodeOf maps a stage's error to its exit code.
	CodeOf func(error) int
	// Reporter, when set, is told of progress.
	Reporter Reporter
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Names returns the stage names in order.
func Names(stages []Stage) []string {
	names := make([]string, len(stages))
	for i, s := range stages {
		names[i] = s.Name
	}
	return names
}

// Run runs the stages in order and returns the summary. The error is non-nil only when
// the pipeline itself could not work (bad --from, unwritable stamp directory); a failing
// stage is an outcome, and its code is Summary.Code.
func Run(ctx context.Context, stages []Stage, opts Options) (*Summary, error) {
	names := Names(stages)
	from, until := 0, len(stages)-1
	if opts.From != "" {
		if from = slices.Index(names, opts.From); from < 0 {
			return nil, fmt.Errorf("--from %q: not a stage (want one of %v)", opts.From, names)
		}
	}
	if opts.Until != "" {
		if until = slices.Index(names, opts.Until); until < 0 {
			return nil, fmt.Errorf("--until %q: not a stage (want one of %v)", opts.Until, names)
		}
	}
	if until < from {
		return nil, fmt.Errorf("--until %s comes before --from %s", opts.Until, opts.From)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	codeOf := opts.CodeOf
	if codeOf == nil {
		codeOf = func(error) int { return 1 }
	}
	store := &stampStore{dir: opts.Stamps, key: opts.Key, checkout: opts.Checkout}

	sum := &Summary{}
	started := now()
	prev := "" // digest of the stage before: changes upstream ripple down
	stopped := false
	for i, st := range stages[:until+1] {
		rep := StageReport{Name: st.Name}
		switch {
		case stopped:
			rep.Outcome = NotReached
			sum.Stages = append(sum.Stages, rep)
			report(opts.Reporter, rep)
			continue
		case st.Skip != nil:
			if why := st.Skip(); why != "" {
				rep.Outcome, rep.Reason = Skipped, why
				prev = chain(prev, st.Name, map[string]string{"skipped": why})
				rep.Digest = prev
				sum.Stages = append(sum.Stages, rep)
				report(opts.Reporter, rep)
				continue
			}
		}
		if err := ctx.Err(); err != nil {
			rep.Outcome, rep.Code, rep.Reason = Interrupted, codeOf(err), "interrupted before it started"
			stopped = true
			if sum.Code == 0 {
				sum.Code = rep.Code
			}
			sum.Stages = append(sum.Stages, rep)
			report(opts.Reporter, rep)
			continue
		}

		inputs, err := stageInputs(ctx, st, nil)
		if err != nil {
			rep.Outcome, rep.Code, rep.Reason = Failed, codeOf(err), err.Error()
			stopped = true
			sum.Code = rep.Code
			sum.Stages = append(sum.Stages, rep)
			report(opts.Reporter, rep)
			continue
		}
		before := prev
		digest := chain(before, st.Name, inputs)
		prev = digest
		rep.Digest = digest

		// Stages before --from are judged by their stamps like any other: --from must not
		// build on a stale result. From --from on, every stage runs.
		forced := opts.From != "" && i >= from
		if !forced {
			if s, ok := store.read(st.Name); ok && s.Digest == digest {
				rep.Outcome, rep.Reason = UpToDate, "inputs unchanged since "+s.Finished.Format(time.RFC3339)
				rep.Detail, rep.Log, rep.Report = s.Detail, s.Log, s.Report
				sum.Stages = append(sum.Stages, rep)
				report(opts.Reporter, rep)
				continue
			}
		}

		// The stage runs: its stamp and every later one stop being valid now, so that an
		// interruption from here on redoes this stage next time.
		for _, later := range stages[i:] {
			if err := store.remove(later.Name); err != nil {
				return nil, fmt.Errorf("stage %s: %w", st.Name, err)
			}
		}
		logFile, logPath, err := opts.Logs.Create(st.Name + "-" + now().UTC().Format("20060102T150405Z") + ".log")
		if err != nil {
			return nil, fmt.Errorf("stage %s: %w", st.Name, err)
		}
		if opts.Reporter != nil {
			opts.Reporter.Start(st.Name, i+1, until+1, logPath)
		}
		rep.Log = logPath
		t0 := now()
		res, err := runLogged(ctx, st, logFile, logPath)
		rep.Seconds = now().Sub(t0).Seconds()
		rep.Detail, rep.Report = res.Detail, res.Report
		if err == nil && st.State != nil {
			// The stamp records the state the stage left behind, and what follows builds
			// on that state, not on the one before.
			if inputs, err = stageInputs(ctx, st, inputs); err == nil {
				digest = chain(before, st.Name, inputs)
				prev, rep.Digest = digest, digest
			}
		}
		switch {
		case err != nil && ctx.Err() != nil:
			rep.Outcome, rep.Code, rep.Reason = Interrupted, codeOf(ctx.Err()), "interrupted; it runs again next time"
		case err != nil:
			rep.Outcome, rep.Code, rep.Reason = Failed, codeOf(err), err.Error()
		default:
			rep.Outcome = Ran
			if werr := store.write(stamp{Stage: st.Name, Digest: digest, Inputs: inputs,
				Finished: now().UTC(), Detail: res.Detail, Log: logPath, Report: res.Report}); werr != nil {
				return nil, fmt.Errorf("stage %s: write its stamp: %w", st.Name, werr)
			}
		}
		if rep.Outcome != Ran {
			stopped = true
			if sum.Code == 0 {
				sum.Code = rep.Code
			}
		}
		sum.Stages = append(sum.Stages, rep)
		report(opts.Reporter, rep)
	}
	sum.Seconds = now().Sub(started).Seconds()
	return sum, nil
}

func report(r Reporter, rep StageReport) {
	if r != nil {
		r.Done(rep)
	}
}

// stageInputs returns the stage's inputs and, when it has a state, that state, under
// names of their own. With known set (after the stage ran), only the state is read again.
func stageInputs(ctx context.Context, st Stage, known map[string]string) (map[string]string, error) {
	in := map[string]string{}
	if known != nil {
		for k, v := range known {
			if !strings.HasPrefix(k, statePrefix) {
				in[k] = v
			}
		}
	} else if st.Inputs != nil {
		got, err := st.Inputs(ctx)
		if err != nil {
			return nil, err
		}
		for k, v := range got {
			in[k] = v
		}
	}
	if st.State != nil {
		state, err := st.State(ctx)
		if err != nil {
			return nil, err
		}
		for k, v := range state {
			in[statePrefix+k] = v
		}
	}
	return in, nil
}

// statePrefix marks a stage's state among its inputs in the digest and the stamp.
const statePrefix = "state:"

// runLogged runs a stage with its output in the new log file f.
func runLogged(ctx context.Context, st Stage, f *os.File, logPath string) (Result, error) {
	res, err := st.Run(ctx, f)
	if cerr := f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("write log %s: %w", logPath, cerr)
	}
	return res, err
}

// chain hashes a stage's inputs together with the digest of the stage before it.
func chain(prev, name string, inputs map[string]string) string {
	h := sha256.New()
	fmt.Fprintf(h, "mpspatch-pipeline-v1\x00%s\x00%s\x00", prev, name)
	keys := make([]string, 0, len(inputs))
	for k := range inputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(inputs[k]), inputs[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}
