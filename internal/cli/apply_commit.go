package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/internal/stack"
)

// applyCommitReport is the --json shape of apply --commit.
type applyCommitReport struct {
	Operation string                 `json:"operation"`
	Tree      string                 `json:"tree"`
	Series    string                 `json:"series"`
	Branch    string                 `json:"branch"`
	Base      string                 `json:"base"`
	Head      string                 `json:"head,omitempty"`
	Commits   []stack.CommittedPatch `json:"commits,omitempty"`
	Conflicts []*series.Conflict     `json:"conflicts,omitempty"`
	Intents   []intentReport         `json:"intents,omitempty"`
	Error     string                 `json:"error,omitempty"`
}

func runApplyCommit(ctx context.Context, d *deps, opts *applyOptions, s *series.Series, root *os.Root) error {
	if err := requireCheckout(ctx, opts.tree, "apply --commit"); err != nil {
		return err
	}
	p := d.printer()
	p.Progressf("apply --commit: series %s, %s, tree %s, branch %s", s.Source, plural(len(s.Patches), "patch"), opts.tree, opts.branch)
	var intents []intentReport
	check := func(plan *series.Plan) error {
		read := overlayReader(root, plan)
		for _, pt := range s.Patches {
			intents = append(intents, evaluatePatchIntents(pt, read)...)
		}
		if failedIntents(intents) > 0 && !opts.noIntents {
			return errIntentsFailed
		}
		return nil
	}
	res, err := stack.ApplyCommits(ctx, authorGit(), root, s, stack.ApplyCommitsOptions{
		Tree: opts.tree, Branch: opts.branch, Force: opts.force, Check: check})
	rep := applyCommitReport{Operation: "apply --commit", Tree: opts.tree, Series: s.Hash(), Branch: opts.branch, Intents: intents}
	if res != nil {
		rep.Base, rep.Head, rep.Commits = res.Base, res.Head, res.Patches
	}
	var ce *series.ConflictError
	if errors.As(err, &ce) {
		rep.Conflicts = ce.Conflicts
	}
	if err != nil {
		rep.Error = err.Error()
	}
	if perr := p.Result(rep, func(w io.Writer) {
		for _, c := range rep.Commits {
			writePatchOutcome(w, p, c.PatchResult)
		}
		for _, c := range rep.Conflicts {
			fmt.Fprint(w, c.Report())
		}
		writeIntentsText(w, p, rep.Intents)
		if err == nil {
			fmt.Fprintf(w, "committed %s on %s (%s..%s)\n", plural(len(rep.Commits), "patch"), rep.Branch, shortSHA(rep.Base), shortSHA(rep.Head))
		}
	}); perr != nil {
		return perr
	}
	switch {
	case err == nil:
		if failedIntents(intents) > 0 {
			return &silentError{code: ExitCheckFailed}
		}
		return nil
	case errors.Is(err, errIntentsFailed):
		return withCode(ExitCheckFailed, fmt.Errorf("apply --commit: %s do not hold on the result; nothing was written (--no-intents writes anyway)", plural(failedIntents(intents), "intent")))
	case errors.Is(err, stack.ErrBranchExists):
		return withCode(ExitUsage, err)
	case ce != nil:
		return withCode(ExitConflict, fmt.Errorf("%s: nothing was written", ce.Error()))
	}
	return gitError(engineError(err))
}
