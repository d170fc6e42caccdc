package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/pipeline"
	"github.com/mpspatch/mpspatch/internal/redact"
	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/metalcheck"
	"github.com/mpspatch/mpspatch/verify"
)

// The stages of mpspatch run: each calls a command's work function (clone, apply, audit,
// build, probeMetal, the verify session) with a deps whose streams are the stage's log,
// writes the command line that would redo the stage, and takes its detail from the typed
// report; no stage re-enters Main or decodes another command's output.

func (r *runner) withPatches(args ...string) []string {
	if r.opts.patches != "" {
		args = append(args, "--patches", r.opts.patches)
	}
	return args
}

// clone checks out the pinned commit into the directory, or accepts a checkout that is
// already there at that commit. A checkout at another commit is refused: the series was
// written for the pinned one, and silently patching another base is how wrong results
// start. A clone that was interrupted is handed to `mpspatch clone`, which resumes it.
func (r *runner) clone(ctx context.Context, log io.Writer) (pipeline.Result, error) {
	if head, ok, err := existingCheckout(ctx, r.dir, r.commit); err != nil {
		return pipeline.Result{}, err
	} else if ok {
		fmt.Fprintf(log, "%s is already a checkout of %s\n", r.dir, head)
		return pipeline.Result{Detail: "checkout already at " + shortSHA(head)}, nil
	}
	args := []string{"clone", "--dir", r.dir}
	if r.opts.full {
		args = append(args, "--full")
	}
	opts := &cloneOptions{dir: r.dir, full: r.opts.full, filter: defaultCloneFilter, jobs: defaultCloneJobs}
	var rep *cloneReport
	err := r.stage(ctx, log, args, func(ctx context.Context, d *deps) (err error) {
		if rep, err = clone(ctx, d, opts); err != nil {
			return err
		}
		return writeClone(d.printer(), rep)
	})
	if err != nil {
		return pipeline.Result{}, err
	}
	return pipeline.Result{Detail: "cloned " + shortSHA(rep.Commit), Report: rep.Log}, nil
}

// existingCheckout judges a directory the clone stage finds: ok with its HEAD when it
// holds a finished checkout of the pinned commit; an error (exit 2 for another commit,
// git's for a HEAD it cannot read) when it holds a finished checkout of anything else;
// neither when there is no checkout yet or an interrupted clone, which `mpspatch clone`
// makes or resumes.
func existingCheckout(ctx context.Context, dir, commit string) (head string, ok bool, err error) {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil || gitcli.CloneInterrupted(dir) {
		return "", false, nil
	}
	g := &gitcli.Git{}
	if head, err = g.RevParse(ctx, dir, "HEAD"); err != nil {
		return "", false, gitError(err)
	}
	if head != commit {
		return "", false, usageErrorf("%s is a checkout of %s, not of the pinned commit %s; use another --dir or check out the pinned commit", dir, head, commit)
	}
	return head, true, nil
}

// apply applies the series to the tree, under the lock run holds.
func (r *runner) apply(ctx context.Context, log io.Writer) (pipeline.Result, error) {
	opts := &applyOptions{treeOptions: treeOptions{tree: r.dir, patches: r.opts.patches}}
	var res pipeline.Result
	err := r.stage(ctx, log, r.withPatches("apply", "--tree", r.dir), func(ctx context.Context, d *deps) error {
		rep, err := apply(ctx, d, opts)
		if rep == nil {
			return err
		}
		// The report's text for the log; the stage's outcome is the apply's own, without
		// the silence of a command whose report went to the terminal.
		_ = writeApply(d.printer(), rep, err)
		if rep.Noop {
			res.Detail = "the tree already held the series"
		} else {
			res.Detail = plural(len(rep.Patches), "patch") + " applied"
		}
		return applyError(rep, err)
	})
	if err != nil {
		return pipeline.Result{}, err
	}
	return res, nil
}

// build builds the tree, under the lock run holds (nothing may change the tree while it
// compiles).
func (r *runner) build(ctx context.Context, log io.Writer) (pipeline.Result, error) {
	args := []string{"build", "--tree", r.dir}
	if r.opts.python != "" {
		args = append(args, "--python", r.opts.python)
	}
	// jobs -1: the config's build.jobs, as the command without --jobs.
	opts := &buildOptions{treeOptions: treeOptions{tree: r.dir, patches: r.opts.patches}, python: r.opts.python, jobs: -1}
	var rep *buildReport
	err := r.stage(ctx, log, r.withPatches(args...), func(ctx context.Context, d *deps) (err error) {
		if rep, err = build(ctx, d, opts); err != nil {
			return err
		}
		return writeBuild(d.printer(), rep)
	})
	if err != nil {
		return pipeline.Result{}, err
	}
	r.built = true
	detail := fmt.Sprintf("built in %.0f s", rep.Seconds)
	if rep.UpToDate {
		detail = "up to date (nothing built)"
	}
	return pipeline.Result{Detail: detail, Report: rep.Log}, nil
}

// probe runs the Metal probe with its default matrix.
func (r *runner) probe(ctx context.Context, log io.Writer) (pipeline.Result, error) {
	err := r.stage(ctx, log, []string{"probe"}, func(ctx context.Context, d *deps) error {
		rep, err := probeMetal(ctx, d, newProbeOptions())
		if rep == nil {
			return err
		}
		werr := writeProbe(d.printer(), rep, err)
		var silent *silentError
		if errors.As(werr, &silent) {
			// The report, in the log, names the scenarios; the reason says where it is.
			return withCode(silent.code, errors.New("scenarios failed; the report is in the log"))
		}
		return werr
	})
	return pipeline.Result{}, err
}

// audit runs the audit: its text report in the log, its SARIF kept in the report
// directory, where CI uploads it to code scanning.
func (r *runner) audit(ctx context.Context, log io.Writer) (pipeline.Result, error) {
	const sarifName = "audit.sarif"
	path := filepath.Join(r.state.report.Path(), sarifName)
	var res pipeline.Result
	err := r.stage(ctx, log, []string{"audit", "--tree", r.dir}, func(ctx context.Context, d *deps) error {
		rep, err := audit(ctx, d, &auditOptions{tree: r.dir})
		if err != nil {
			return err
		}
		var sarif bytes.Buffer
		if err := metalcheck.WriteSARIF(&sarif, rep.Result, rep.Reasons); err != nil {
			return err
		}
		// Redacted as the command's --format sarif is: as JSON, its strings only.
		if err := r.state.report.WriteFile(sarifName, redact.JSON(sarif.Bytes()), 0o644); err != nil {
			return err
		}
		res = pipeline.Result{Detail: plural(len(rep.New)+len(rep.Accepted), "finding"), Report: path}
		_ = writeAudit(d.printer(), "text", rep)
		fmt.Fprintf(d.io.Out, "SARIF: %s (mpspatch audit --tree %s --format sarif)\n", path, r.dir)
		if len(rep.New) > 0 {
			return withCode(ExitCheckFailed, fmt.Errorf("%s not in the baseline (see %s)", plural(len(rep.New), "new finding"), path))
		}
		return nil
	})
	return res, err
}

func (r *runner) verify(ctx context.Context, log io.Writer) (pipeline.Result, error) {
	// verify writes its reports by name: nothing in the directory may send them elsewhere
	// (checked before the run began, and again now that the build has run in the tree).
	if err := r.state.report.CheckNoLinks(); err != nil {
		return pipeline.Result{}, confinedError(err)
	}
	// The options `mpspatch verify` would have; the log shows that command line.
	o := &verifyOptions{verifyFlags: r.opts.verifyFlags, python: r.opts.python, reportDir: r.reportDir, repeat: 1}
	o.device, o.deviceSet = r.device, true
	if r.built {
		// Only a torch built in this tree is checked against it; without a build the
		// suites run against whatever torch the interpreter has, as the summary says.
		o.tree = r.dir
	} else {
		o.allowForeign = false
	}
	rep, err := verifyInLog(ctx, r.d, o, log)
	res := pipeline.Result{Report: filepath.Join(r.reportDir, verify.HTMLFile)}
	if rep != nil {
		counts := map[string]int{}
		for o, n := range rep.Counts(verify.TargetPatched) {
			counts[string(o)] = n
		}
		res.Detail = formatCounts(rep.Status(), counts)
	}
	return res, err
}

func formatCounts(status string, counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := []string{status}
	for _, k := range keys {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// stage does one command's work as a stage of run, under the tree lock run holds: in the
// log first the command line that does the same by hand, then what the command prints
// (its text result and progress), then how it ended. do's error is the stage's, as the
// command's own error: the pipeline's summary and progress line add only the stage.
func (r *runner) stage(ctx context.Context, log io.Writer, args []string, do func(context.Context, *deps) error) error {
	if r.d.global.configPath != "" {
		args = append([]string{"--config", r.d.global.configPath}, args...)
	}
	own := newSafeWriter(log, false, false)
	defer own.Flush()
	fmt.Fprintf(own, "$ mpspatch %s\n", strings.Join(args, " "))
	own.Flush()
	d, done := r.stageDeps(log)
	err := do(withHeldTreeLock(ctx, r.state.lock), d)
	done()
	code := exitCodeOf(err)
	if err != nil {
		if ctx.Err() != nil {
			code = ExitInterrupted
		}
		fmt.Fprintf(own, "mpspatch: %s\n", errorMessage(err, code))
	}
	fmt.Fprintf(own, "exit %d\n", code)
	if err != nil && strings.Contains(err.Error(), "\n") {
		// The summary's reason is one line; the rest (a build's first errors) is above.
		return firstLineError{err}
	}
	return err
}

// firstLineError is err, read as its first line.
type firstLineError struct{ err error }

func (e firstLineError) Error() string {
	line, _, _ := strings.Cut(e.err.Error(), "\n")
	return line
}

func (e firstLineError) Unwrap() error { return e.err }

// stageDeps are the deps of a command run as a stage: run's config, no --json, its
// results and progress in the stage's log (through the filters Main puts on stdout and
// stderr), its progress shown live too (see stageView). done flushes them.
func (r *runner) stageDeps(log io.Writer) (d *deps, done func()) {
	out := newSafeWriter(log, false, false)
	errw := newSafeWriter(io.MultiWriter(log, r.view), false, false)
	d = &deps{
		io:     IOStreams{In: strings.NewReader(""), Out: out, Err: errw, Getenv: r.d.io.Getenv},
		global: &globalOptions{configPath: r.d.global.configPath},
	}
	return d, func() {
		out.Flush()
		errw.Flush()
		r.view.end()
	}
}

// treeState is the tree's state for the files the series touches, as `mpspatch status`
// computes it (each file's version and blob, an interrupted write), read under the lock
// run holds: the apply stage's state, and the audit's input.
func (r *runner) treeState(context.Context) (map[string]string, error) {
	ts, err := series.InspectLocked(r.state.root, r.series, r.state.lock)
	if err != nil {
		return nil, engineError(fmt.Errorf("read the state of %s: %w", r.dir, err))
	}
	data, err := json.Marshal(struct {
		Applied     int                  `json:"applied"`
		Files       []series.FileStatus  `json:"files"`
		Interrupted *series.Interruption `json:"interrupted,omitempty"`
	}{ts.Applied, ts.Files, ts.Interrupted})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	return map[string]string{"tree": hex.EncodeToString(sum[:]), "summary": string(ts.Summary())}, nil
}
