package stack

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/series"
)

// DefaultBranch is the branch apply --commit creates.
const DefaultBranch = "mpspatch/series"

// ErrBranchExists is returned by ApplyCommits when the branch exists and Force is off.
var ErrBranchExists = errors.New("branch already exists")

// ApplyCommitsOptions tune ApplyCommits.
type ApplyCommitsOptions struct {
	Tree   string
	Branch string // default DefaultBranch
	Force  bool   // replace an existing branch
	// Check sees the whole computed plan before anything is written (the CLI judges
	// intents there); an error from it stops with nothing written.
	Check func(*series.Plan) error
}

// CommittedPatch is one series entry turned into a commit.
type CommittedPatch struct {
	series.PatchResult
	ID     int    `json:"id"`
	Commit string `json:"commit"`
}

// ApplyCommitsResult is what ApplyCommits did.
type ApplyCommitsResult struct {
	Branch  string           `json:"branch"`
	Base    string           `json:"base"`
	Head    string           `json:"head"`
	Patches []CommittedPatch `json:"patches"`
	Plan    *series.Plan     `json:"-"`
}

// ApplyCommits applies s to the git work tree at opts.Tree as one commit per patch on a
// new branch started at HEAD. Each commit carries the mail's author, date and message
// plus a Series-Id trailer; the files are written by the series engine, so the final tree
// is byte-identical to `mpspatch apply`. The whole series is computed first: a conflict
// writes nothing. A failure half way returns the tree and HEAD to where they were.
func ApplyCommits(ctx context.Context, g *gitcli.Git, root *os.Root, s *series.Series, opts ApplyCommitsOptions) (*ApplyCommitsResult, error) {
	branch := opts.Branch
	if branch == "" {
		branch = DefaultBranch
	}
	if clean, entries, err := g.IsClean(ctx, opts.Tree); err != nil {
		return nil, fmt.Errorf("apply --commit: %w", err)
	} else if !clean {
		return nil, fmt.Errorf("apply --commit: %s has uncommitted changes (%s%s); commit or stash them first", opts.Tree, entries[0].Path, more(len(entries)-1))
	}
	base, err := g.RevParse(ctx, opts.Tree, "HEAD")
	if err != nil {
		return nil, fmt.Errorf("apply --commit: %w", err)
	}
	if old, err := g.BranchCommit(ctx, opts.Tree, branch); err != nil {
		return nil, fmt.Errorf("apply --commit: %w", err)
	} else if old != "" && !opts.Force {
		return nil, fmt.Errorf("apply --commit: %s (at %.12s): %w; --force replaces it", branch, old, ErrBranchExists)
	}
	res := &ApplyCommitsResult{Branch: branch, Base: base}
	unlock, err := series.Lock(root)
	if err != nil {
		return res, fmt.Errorf("apply --commit: %w", err)
	}
	defer unlock()
	if _, err := series.Recover(root, series.Forward); err != nil {
		return res, fmt.Errorf("apply --commit: %w", err)
	}
	plan, err := series.Compute(root, s, series.Forward)
	res.Plan = plan
	if err != nil {
		return res, err
	}
	if opts.Check != nil {
		if err := opts.Check(plan); err != nil {
			return res, err
		}
	}
	prevBranch, err := g.CurrentBranch(ctx, opts.Tree)
	if err != nil {
		return res, fmt.Errorf("apply --commit: %w", err)
	}
	oldBranch, _ := g.BranchCommit(ctx, opts.Tree, branch)
	if err := g.SetBranch(ctx, opts.Tree, branch, base, "", "mpspatch apply --commit: start"); err != nil {
		return res, fmt.Errorf("apply --commit: %w", err)
	}
	undo := func() {
		// Best effort back to the start: HEAD, tree and the branch as they were.
		_ = g.ResetHard(ctx, opts.Tree, base)
		if prevBranch != "" && prevBranch != branch {
			_ = g.Switch(ctx, opts.Tree, prevBranch, true)
		} else {
			_ = g.Detach(ctx, opts.Tree, base, true)
		}
		if oldBranch != "" {
			_ = g.SetBranch(ctx, opts.Tree, branch, oldBranch, "", "mpspatch apply --commit: undo")
		}
	}
	if err := g.Switch(ctx, opts.Tree, branch, false); err != nil {
		undo()
		return res, fmt.Errorf("apply --commit: %w", err)
	}
	head := base
	for _, p := range s.Patches {
		c, err := commitPatch(ctx, g, root, opts.Tree, head, p, s.Hash())
		if err != nil {
			undo()
			return res, fmt.Errorf("apply --commit %s: %w", p.Name, err)
		}
		res.Patches = append(res.Patches, c)
		head = c.Commit
	}
	res.Head = head
	return res, nil
}

// commitPatch applies one patch with the engine and records it as a commit.
func commitPatch(ctx context.Context, g *gitcli.Git, root *os.Root, tree, parent string, p *series.Patch, hash string) (CommittedPatch, error) {
	plan, err := series.ComputePatches(root, []*series.Patch{p}, series.Forward)
	if err != nil {
		return CommittedPatch{}, err
	}
	if err := series.Commit(root, plan, "apply --commit", hash, series.CommitOptions{}); err != nil {
		return CommittedPatch{}, err
	}
	mm, err := parseMailMessage(p.Raw)
	if err != nil {
		return CommittedPatch{}, err
	}
	if err := g.Add(ctx, tree, changedPaths(plan)); err != nil {
		return CommittedPatch{}, err
	}
	sha, err := commitIndex(ctx, g, tree, parent, mm, addSeriesID(mm.Message, p.ID), "mpspatch apply --commit: "+p.Name, true)
	if err != nil {
		return CommittedPatch{}, err
	}
	return CommittedPatch{PatchResult: plan.Results[0], ID: p.ID, Commit: sha}, nil
}

func changedPaths(plan *series.Plan) []string {
	var out []string
	for _, c := range plan.Changes {
		out = append(out, c.Path)
	}
	return out
}

func more(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" and %d more", n)
}

// commitIndex records the index as a commit on parent with the mail's author and date
// and, with moveHead, moves HEAD there. It is `git commit` without the index refresh and
// rewrite, which on a tree of tens of thousands of files cost more than everything else a
// patch needs.
func commitIndex(ctx context.Context, g *gitcli.Git, tree, parent string, mm mailMessage, msg, reason string, moveHead bool) (string, error) {
	tid, err := g.WriteTree(ctx, tree)
	if err != nil {
		return "", err
	}
	sha, err := g.CommitTree(ctx, tree, gitcli.CommitTreeOptions{Tree: tid, Parent: parent, Message: msg,
		AuthorName: mm.Name, AuthorEmail: mm.Email, AuthorDate: mm.Date})
	if err != nil {
		return "", err
	}
	crashpoint("commit written")
	if !moveHead {
		return sha, nil
	}
	if err := g.MoveHead(ctx, tree, sha, parent, reason); err != nil {
		return "", err
	}
	return sha, nil
}
