package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/internal/stack"
)

type applyOptions struct {
	treeOptions
	dryRun     bool
	ignoreBase bool
	fsync      bool
	noIntents  bool
	reverse    bool
	commit     bool
	branch     string
	force      bool
}

// newApplyCmd builds apply; runF, when not nil, replaces the work (tests of the flags
// read the options it is given and run nothing).
func newApplyCmd(d *deps, runF func(context.Context, *applyOptions) error) *cobra.Command {
	opts := &applyOptions{}
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Apply the whole series to a tree, all or nothing",
		Long: `Apply every patch of the series, in order, to the tree.

The whole series is computed in memory first; if any hunk does not locate, nothing is
written and the conflict is reported (exit 3). Each hunk is placed at its recorded line or
at the nearest offset where all its context and removed lines match exactly (zero fuzz,
as git apply). Writes go through a journal: a crash at any instant leaves the tree wholly
before or wholly after the series; the next apply finishes an interrupted apply and the
next unapply undoes it (status, check and --dry-run only report it, writing nothing).
One mpspatch works on a tree at a time; another waits a few seconds, then gives up.

Applying to a tree that already holds the series does nothing (exit 0). A tree where some
touched files are patched and others not, or a touched file carries edits of its own, is
refused with each file's state and the command that sets the files aside (exit 3). A
directory holding none of the files the series touches is not a PyTorch checkout (exit
2), as status says.

--commit (for patch authors, see docs/authoring.md) records the series in git instead:
a new branch (--branch, default mpspatch/series; an existing one only with --force) at
HEAD, one commit per patch with the mail's author, date and message and a
"Series-Id: NNNN" trailer naming the entry. The tree must be a clean git work tree; the
result is byte-identical to a plain apply.`,
		Example: `  mpspatch apply --tree ~/src/pytorch
  mpspatch apply --tree ~/src/pytorch --dry-run
  mpspatch apply --tree . --patches ./patches --json
  mpspatch apply --tree ~/src/pytorch --commit   # one commit per patch on mpspatch/series`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.checkCommitFlags(cmd.Flags().Changed("branch")); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runApply(cmd.Context(), d, opts)
		},
	}
	addTreeFlags(cmd, &opts.treeOptions)
	cmd.Flags().BoolVarP(&opts.dryRun, "dry-run", "n", false, "compute and report, write nothing")
	cmd.Flags().BoolVar(&opts.ignoreBase, "ignore-base", false, "accept touched files that differ from the recorded base when every hunk still locates")
	cmd.Flags().BoolVar(&opts.fsync, "fsync", false, "sync the journal and files to disk (durable across power loss; a killed process needs no sync)")
	cmd.Flags().BoolVar(&opts.noIntents, "no-intents", false, "write even when an Intent: of the series does not hold on the result")
	cmd.Flags().BoolVar(&opts.commit, "commit", false, "apply as one git commit per patch on a new branch")
	cmd.Flags().StringVar(&opts.branch, "branch", stack.DefaultBranch, "with --commit: the branch to create")
	cmd.Flags().BoolVar(&opts.force, "force", false, "with --commit: replace an existing branch")
	return cmd
}

func newUnapplyCmd(d *deps) *cobra.Command {
	opts := &applyOptions{reverse: true}
	cmd := &cobra.Command{
		Use:   "unapply",
		Short: "Reverse the whole series in a tree, all or nothing",
		Long: `Reverse every patch of the series, last first, with the same guarantees as apply:
computed in memory, written through a journal, refused on a partial or edited tree.
Unapplying a tree that does not hold the series does nothing (exit 0).`,
		Example: `  mpspatch unapply --tree ~/src/pytorch`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runApply(cmd.Context(), d, opts)
		},
	}
	addTreeFlags(cmd, &opts.treeOptions)
	cmd.Flags().BoolVarP(&opts.dryRun, "dry-run", "n", false, "compute and report, write nothing")
	cmd.Flags().BoolVar(&opts.ignoreBase, "ignore-base", false, "accept touched files that differ from the recorded patched state when every hunk still locates")
	cmd.Flags().BoolVar(&opts.fsync, "fsync", false, "sync the journal and files to disk (durable across power loss; a killed process needs no sync)")
	return cmd
}

// checkCommitFlags refuses the flags of --commit without it (they would be ignored, and
// the user believe a branch was made), and --commit with --dry-run.
func (o *applyOptions) checkCommitFlags(branchGiven bool) error {
	switch {
	case o.commit && o.dryRun:
		return usageErrorf("apply: --commit and --dry-run do not go together (check --tree computes without writing)")
	case !o.commit && branchGiven:
		return usageErrorf("apply: --branch names the branch --commit creates; give --commit too")
	case !o.commit && o.force:
		return usageErrorf("apply: --force replaces the branch --commit creates; give --commit too")
	}
	return nil
}

// applyReport is the --json shape of apply and unapply.
type applyReport struct {
	Operation string               `json:"operation"`
	Tree      string               `json:"tree"`
	Series    string               `json:"series"`
	DryRun    bool                 `json:"dry_run"`
	Noop      bool                 `json:"noop"`
	Recovery  string               `json:"recovery,omitempty"`
	Patches   []series.PatchResult `json:"patches,omitempty"`
	Outcomes  map[string]string    `json:"outcomes,omitempty"`
	Files     []string             `json:"files_written,omitempty"`
	Conflicts []*series.Conflict   `json:"conflicts,omitempty"`
	State     *series.TreeStatus   `json:"state,omitempty"`
	Intents   []intentReport       `json:"intents,omitempty"`
	Error     string               `json:"error,omitempty"`

	// What the text rendering shows besides the above.
	series *series.Series
	res    *series.Result
}

// planResults are the per-patch outcomes of the computed plan, none when there was none.
func (rep *applyReport) planResults() []series.PatchResult {
	if rep.res == nil || rep.res.Plan == nil {
		return nil
	}
	return rep.res.Plan.Results
}

func runApply(ctx context.Context, d *deps, opts *applyOptions) error {
	if opts.commit {
		if err := ctx.Err(); err != nil {
			return err
		}
		s, root, err := d.seriesAndTree(ctx, &opts.treeOptions)
		if err != nil {
			return err
		}
		defer root.Close()
		return runApplyCommit(ctx, d, opts, s, root)
	}
	rep, err := apply(ctx, d, opts)
	if rep == nil {
		return err
	}
	return writeApply(d.printer(), rep, err)
}

// apply does the work of apply and unapply (not --commit), with its progress on d's
// stderr. The report is nil when nothing was attempted (the error says why); otherwise
// err is the engine's own outcome (a conflict, errIntentsFailed, a busy tree), which
// writeApply shows and applyError turns into the command's exit.
func apply(ctx context.Context, d *deps, opts *applyOptions) (*applyReport, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := d.printer()
	s, root, err := d.seriesAndTree(ctx, &opts.treeOptions)
	if err != nil {
		return nil, err
	}
	defer root.Close()

	verb := "apply"
	do := series.Apply
	if opts.reverse {
		verb, do = "unapply", series.Unapply
	}
	p.Progressf("%s: series %s, %s, tree %s", verb, s.Source, plural(len(s.Patches), "patch"), opts.tree)
	var intents []intentReport
	// Held: under `mpspatch run`, which holds the tree's lock across its stages.
	sopts := series.Options{DryRun: opts.dryRun, IgnoreBase: opts.ignoreBase, Fsync: opts.fsync, Held: heldTreeLock(ctx)}
	if !opts.reverse {
		// Intents are judged on the computed result, before anything is written: a series
		// that applies but no longer does its job is refused whole, like a conflict.
		sopts.BeforeCommit = func(plan *series.Plan) error {
			read := overlayReader(root, plan)
			for _, pt := range s.Patches {
				intents = append(intents, evaluatePatchIntents(pt, read)...)
			}
			if n := failedIntents(intents); n > 0 && !opts.noIntents {
				return errIntentsFailed
			}
			return nil
		}
	}
	res, err := do(root, s, sopts)
	if err != nil && res != nil {
		// The wrong directory gets status's verdict, not a conflict per file; a tree in a
		// mixed state gets the way out (see wayOut).
		if nerr := notPyTorchCheckout(opts.tree, res.Before); nerr != nil {
			return nil, nerr
		}
		var se *series.StateError
		if hint := wayOut(opts.tree, res.Before); hint != "" && errors.As(err, &se) {
			err = fmt.Errorf("%w\n%s", err, hint)
		}
	}

	rep := &applyReport{Operation: verb, Tree: opts.tree, Series: s.Hash(), DryRun: opts.dryRun, series: s, res: res}
	if res != nil {
		rep.Noop, rep.Recovery, rep.State = res.Noop, res.Recovery, res.Before
		if res.Recovery != "" {
			p.Warnf("an interrupted write was %s before starting", res.Recovery)
		}
		if res.Plan != nil {
			rep.Patches = res.Plan.Results
			rep.Outcomes = map[string]string{}
			for _, r := range res.Plan.Results {
				rep.Outcomes[r.Name] = r.Outcome()
			}
			for _, c := range res.Plan.Changes {
				rep.Files = append(rep.Files, c.Path)
			}
		}
	}
	var ce *series.ConflictError
	if errors.As(err, &ce) {
		rep.Conflicts = ce.Conflicts
	}
	rep.Intents = intents
	switch {
	case errors.Is(err, errIntentsFailed):
		rep.Error = fmt.Sprintf("%s of the series do not hold on the result; nothing was written (--no-intents writes anyway)", plural(failedIntents(intents), "intent"))
	case err != nil:
		rep.Error = err.Error()
	}
	return rep, err
}

// applyError is how an apply ended, as an error with its exit code and the sentence
// that says why: nil when it succeeded and every intent holds.
func applyError(rep *applyReport, err error) error {
	var ce *series.ConflictError
	switch {
	case errors.Is(err, errIntentsFailed):
		return withCode(ExitCheckFailed, errors.New(rep.Error))
	case errors.As(err, &ce):
		// The report names every conflict; the sentence names the first.
		return withCode(ExitConflict, fmt.Errorf("%s: nothing was written", ce.Error()))
	case err != nil:
		return engineError(err)
	case failedIntents(rep.Intents) > 0 && !rep.DryRun:
		return withCode(ExitCheckFailed, fmt.Errorf("%s of the applied series do not hold (written because of --no-intents)", plural(failedIntents(rep.Intents), "intent")))
	case failedIntents(rep.Intents) > 0:
		return withCode(ExitCheckFailed, fmt.Errorf("%s of the series would not hold on the result", plural(failedIntents(rep.Intents), "intent")))
	}
	return nil
}

// writeApply renders apply's report on stdout and returns the command's exit: an error
// the report already explains is not repeated on stderr.
func writeApply(p *printer, rep *applyReport, err error) error {
	exit := applyError(rep, err)
	if errors.Is(err, errIntentsFailed) {
		if perr := p.Result(rep, func(w io.Writer) {
			for _, r := range rep.planResults() {
				writePatchOutcome(w, p, r)
			}
			writeIntentsText(w, p, rep.Intents)
			fmt.Fprintf(w, "%s: %s\n", p.Paint(red, "refused"), rep.Error)
		}); perr != nil {
			return perr
		}
		return &silentError{code: ExitCheckFailed}
	}
	if perr := p.Result(rep, func(w io.Writer) { writeApplyText(w, p, rep, err) }); perr != nil {
		return perr
	}
	switch {
	case exit == nil:
		return nil
	case err != nil && p.json:
		return &silentError{code: exitCodeOf(exit)}
	case err != nil:
		// The report went to stdout; the error line on stderr names the first conflict.
		return exit
	case !rep.DryRun:
		p.Warnf("%s", exit.Error())
	}
	return &silentError{code: ExitCheckFailed}
}

// errIntentsFailed stops apply before it writes when an intent does not hold.
var errIntentsFailed = errors.New("intents do not hold")

func writeApplyText(w io.Writer, p *printer, rep *applyReport, err error) {
	s := rep.series
	switch {
	case rep.Noop && rep.Operation == "apply":
		fmt.Fprintf(w, "already applied: %s holds the whole series (%s); nothing to do\n", rep.Tree, plural(len(s.Patches), "patch"))
		return
	case rep.Noop:
		fmt.Fprintf(w, "not applied: %s holds none of the series; nothing to do\n", rep.Tree)
		return
	}
	for _, r := range rep.planResults() {
		writePatchOutcome(w, p, r)
	}
	var ce *series.ConflictError
	if errors.As(err, &ce) {
		fmt.Fprintln(w)
		for _, c := range ce.Conflicts {
			fmt.Fprint(w, c.Report())
		}
		fmt.Fprintf(w, "\n%s: nothing was written\n", p.Paint(red, "conflict"))
		return
	}
	if err != nil {
		return // the error itself is printed on stderr
	}
	verb := "applied"
	if rep.Operation == "unapply" {
		verb = "reversed"
	}
	if rep.DryRun {
		fmt.Fprintf(w, "dry run: the series would be %s; %s would change, nothing was written\n", verb, plural(len(rep.Files), "file"))
		writeIntentsText(w, p, rep.Intents)
		return
	}
	fmt.Fprintf(w, "%s %s, %s written\n", verb, plural(len(s.Patches), "patch"), plural(len(rep.Files), "file"))
	writeIntentsText(w, p, rep.Intents)
}

func writePatchOutcome(w io.Writer, p *printer, r series.PatchResult) {
	switch r.Outcome() {
	case "exact":
		fmt.Fprintf(w, "  %s %s\n", pad(p.Paint(green, "exact"), 8), r.Name)
	case "offset":
		var offs []string
		for _, h := range r.Hunks {
			if h.Offset != 0 {
				offs = append(offs, fmt.Sprintf("%s hunk %d/%d %+d", series.QuotePath(h.File), h.Hunk, h.Hunks, h.Offset))
			}
		}
		fmt.Fprintf(w, "  %s %s (offset %d: %s)\n", pad(p.Paint(yellow, "offset"), 8), r.Name, r.MaxOffset(), strings.Join(offs, ", "))
	default:
		note := ""
		if r.AfterConflict {
			note = " (after an earlier conflict)"
		}
		fmt.Fprintf(w, "  %s %s%s\n", pad(p.Paint(red, "conflict"), 8), r.Name, note)
	}
}
