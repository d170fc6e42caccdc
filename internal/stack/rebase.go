package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/internal/statekey"
)

// Per-patch outcomes of a rebase.
const (
	OutcomeClean    = "clean"    // applied at its recorded lines
	OutcomeOffset   = "offset"   // applied with every hunk found at an offset
	OutcomeMerged   = "merged"   // applied by a three-way merge against its base blobs
	OutcomeResolved = "resolved" // stopped (conflict or intent) and finished by hand
	OutcomeEmpty    = "empty"    // upstream already has it; dropped
	OutcomeSkipped  = "skipped"  // stopped and skipped by the author
)

// stateDirName is the rebase's directory inside the git directory, next to git's own
// rebase-merge: never in the work tree, so it never shows as a change.
const stateDirName = "mpspatch-rebase"

// ErrNoRebase is returned by Continue, Skip and Abort when no rebase is in progress.
var ErrNoRebase = errors.New("no mpspatch rebase in progress")

// ErrInProgress is returned by Rebase when one is already in progress.
var ErrInProgress = errors.New("an mpspatch rebase is already in progress; --continue, --skip or --abort it")

// PatchOutcome is one series commit's fate in a rebase.
type PatchOutcome struct {
	ID        int    `json:"id"`
	Name      string `json:"patch"`
	Subject   string `json:"subject"`
	Outcome   string `json:"outcome"`
	Offset    int    `json:"offset,omitempty"`
	OldCommit string `json:"old_commit"`
	NewCommit string `json:"new_commit,omitempty"`
	// Upstream names the newest upstream commit that touched the patch's files, for an
	// empty patch: the one that most likely absorbed it.
	Upstream        string `json:"upstream,omitempty"`
	UpstreamSubject string `json:"upstream_subject,omitempty"`
	// Changed says the patch's own diff differs from before (beyond line numbers);
	// RangeDiff is a short excerpt of how.
	Changed   bool   `json:"content_changed,omitempty"`
	RangeDiff string `json:"range_diff,omitempty"`
	// Renamed lists the upstream renames the patch followed ("old → new"): a file it
	// changes was renamed between base and onto, and the patch went to the new name.
	Renamed []string `json:"renamed,omitempty"`
}

// Stop says why a rebase stopped before a patch.
type Stop struct {
	Index   int      `json:"index"`
	Patch   string   `json:"patch"`
	Reason  string   `json:"reason"` // "conflict" or "intent"
	Files   []string `json:"files,omitempty"`
	Intents []string `json:"intents,omitempty"`
	Detail  string   `json:"detail,omitempty"`
}

// RebaseOptions tune Rebase.
type RebaseOptions struct {
	Tree string
	// Base is the commit the series currently starts on; Onto where it goes.
	Base, Onto string
	// Intents judges a patch's Intent: trailers on the tree right after it, and returns
	// the ones that no longer hold; nil checks none.
	Intents func(p *series.Patch, read func(string) ([]byte, error)) []string
	// SkipIntents, on Continue, accepts the resolved patch even if an intent still fails.
	SkipIntents bool
	// SeriesDir, when set, names commits that carry no Series-Id after the entries an
	// earlier export wrote for them (as export matches them); the rebased commits then
	// carry the trailer.
	SeriesDir string
	// Remember is kept in the state (RebaseState.Resume) for the command that resumes
	// the rebase: the caller's own options, such as where to re-export the series.
	Remember map[string]string
	// Progress, when set, is told each patch's outcome as the rebase moves past it: done
	// of total patches. A rebase of a large tree takes a while; the CLI shows these.
	Progress func(done, total int, out PatchOutcome)
}

// ErrUnresolved is wrapped by Continue's refusals while the stop is not resolved.
var ErrUnresolved = errors.New("the stop is not resolved")

// RebaseResult is the outcome of a rebase run (start or continue).
type RebaseResult struct {
	State *RebaseState `json:"state"`
	// Done is set when the branch was moved and the state removed.
	Done bool `json:"done"`
}

// StopError says the rebase stopped for the author; the state is saved.
type StopError struct{ Stop *Stop }

func (e *StopError) Error() string {
	s := e.Stop
	switch s.Reason {
	case "intent":
		return fmt.Sprintf("rebase stopped at %s: it applied, but its intent %s no longer holds; fix the tree, `git add`, then `mpspatch rebase --continue` (or --skip, --abort)", s.Patch, quoteList(s.Intents))
	default:
		files := ""
		if len(s.Files) > 0 {
			files = " in " + strings.Join(s.Files, ", ")
		}
		return fmt.Sprintf("rebase stopped at %s: conflict%s; resolve, `git add`, then `mpspatch rebase --continue` (or --skip, --abort)", s.Patch, files)
	}
}

func quoteList(v []string) string {
	q := make([]string, len(v))
	for i, s := range v {
		q[i] = "`" + s + "`"
	}
	return strings.Join(q, ", ")
}

// rebaser carries one run.
type rebaser struct {
	g      *gitcli.Git
	root   *os.Root
	gitDir string // the repository's git directory, which the state names
	dir    string // state directory
	key    []byte // the user's state key, for the state's MAC
	st     *RebaseState
	opts   RebaseOptions
	mails  [][]byte // normalised mails of the old commits, Series-Id removed
	pats   []*series.Patch
	// renames are the upstream renames between Base and Onto, found when a patch first
	// names a file the tree lacks (nil: not looked up yet); renamed[i] the ones patch i
	// followed.
	renames map[string]string
	renamed map[int][]string
	// cw records cleanly applied patches without git add, write-tree and commit-tree
	// per patch; unstaged are the paths it recorded that the index does not hold yet
	// (stageWritten adds them before anything reads the index).
	cw       *commitWriter
	unstaged []string
}

// crashHook lets tests kill the process at named steps (see crash_test.go).
var crashHook func(step string)

func crashpoint(step string) {
	if crashHook != nil {
		crashHook(step)
	}
}

// Rebase starts moving the series commits Base..HEAD of the branch checked out in Tree
// onto Onto. It returns a *StopError when a patch needs the author.
func Rebase(ctx context.Context, g *gitcli.Git, root *os.Root, opts RebaseOptions) (*RebaseResult, error) {
	unlock, err := series.Lock(root)
	if err != nil {
		return nil, fmt.Errorf("rebase: %w", err)
	}
	defer unlock()
	gitDir, dir, err := stateDir(ctx, g, opts.Tree)
	if err != nil {
		return nil, fmt.Errorf("rebase: %w", err)
	}
	if st, err := loadState(gitDir, dir); err != nil {
		return nil, err
	} else if st != nil {
		return nil, fmt.Errorf("rebase: %w", ErrInProgress)
	}
	key, err := statekey.Ensure()
	if err != nil {
		return nil, fmt.Errorf("rebase: %w (nothing was changed)", err)
	}
	branch, err := g.CurrentBranch(ctx, opts.Tree)
	if err != nil {
		return nil, fmt.Errorf("rebase: %w", err)
	}
	if branch == "" {
		return nil, fmt.Errorf("rebase: HEAD of %s is detached; check out the series branch (apply --commit makes %s)", opts.Tree, DefaultBranch)
	}
	// Like git rebase: tracked files must be unchanged; untracked files matter only
	// where a patch writes (checked once the patches are read).
	if entries, err := g.TrackedChanges(ctx, opts.Tree); err != nil {
		return nil, fmt.Errorf("rebase: %w", err)
	} else if len(entries) > 0 {
		return nil, fmt.Errorf("rebase: %s has uncommitted changes (%s%s); commit or stash them first", opts.Tree, entries[0].Path, more(len(entries)-1))
	}
	shas, err := g.RevParseCommits(ctx, opts.Tree, "HEAD", opts.Base, opts.Onto)
	if err != nil {
		return nil, fmt.Errorf("rebase: base %s, --onto %s: %w", opts.Base, opts.Onto, err)
	}
	head, base, onto := shas[0], shas[1], shas[2]
	list, err := g.RevListParents(ctx, opts.Tree, base+".."+head)
	if err != nil {
		return nil, fmt.Errorf("rebase: %w", err)
	}
	var commits []string
	for _, c := range list {
		if len(c) > 2 {
			return nil, fmt.Errorf("rebase: %s..%s holds merge commit %s; a series is a straight line of commits", opts.Base, branch, c[0])
		}
		commits = append(commits, c[0])
	}
	st := &RebaseState{Version: stateVersion, GitDir: gitDir, Tree: opts.Tree, Branch: branch, OrigHead: head, Base: base,
		Onto: onto, OntoName: opts.Onto, Commits: commits, Head: onto, Phase: phaseApplying, Outcomes: []PatchOutcome{},
		Resume: opts.Remember}
	r := &rebaser{g: g, root: root, gitDir: gitDir, dir: dir, key: key, st: st, opts: opts}
	r.cw = newCommitWriter(ctx, g, opts.Tree, dir)
	if err := r.loadPatches(ctx); err != nil {
		return nil, err
	}
	if un, err := g.Untracked(ctx, opts.Tree, allPaths(r.pats)); err != nil {
		return nil, fmt.Errorf("rebase: %w", err)
	} else if len(un) > 0 {
		return nil, fmt.Errorf("rebase: untracked %s%s is in the way of the series (a patch writes it); move it away first", un[0], more(len(un)-1))
	}
	if err := r.save(); err != nil {
		return nil, err
	}
	crashpoint("state saved")
	if err := g.Detach(ctx, opts.Tree, onto, false); err != nil {
		return nil, fmt.Errorf("rebase: %w", err)
	}
	crashpoint("detached")
	return r.loop(ctx)
}

// loadPatches formats the old commits (the branch is not moved until the end, so they
// stay reachable) and parses them as series patches.
func (r *rebaser) loadPatches(ctx context.Context) error {
	st := r.st
	if len(st.Commits) == 0 {
		return nil
	}
	mbox, err := r.g.FormatPatch(ctx, st.Tree, st.Base+".."+st.OrigHead)
	if err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	mails := splitMbox(mbox)
	if len(mails) != len(st.Commits) {
		return fmt.Errorf("rebase: git format-patch wrote %d mails for %d commits", len(mails), len(st.Commits))
	}
	fresh := len(st.IDs) == 0
	var sd *seriesDir
	claimed := map[int]bool{}
	if fresh && r.opts.SeriesDir != "" {
		var err error
		if sd, err = readSeriesDir(ctx, r.opts.SeriesDir); err != nil {
			return fmt.Errorf("rebase: %w", err)
		}
		for _, m := range mails {
			if parts, err := splitMail(m); err == nil {
				if _, id := stripSeriesID(parts.body); id > 0 {
					claimed[id] = true
				}
			}
		}
	}
	r.mails = mails
	r.pats = make([]*series.Patch, len(mails))
	for i, m := range mails {
		parts, err := splitMail(m)
		if err != nil {
			return fmt.Errorf("rebase: commit %s: %w", st.Commits[i], err)
		}
		var id int
		parts.body, id = stripSeriesID(parts.body)
		r.mails[i] = parts.bytes()
		if fresh {
			mm, _ := parseMailMessage(m)
			if id == 0 && sd != nil {
				id = matchEntry(sd, exportedPatch{subject: mm.Subject, mail: r.mails[i]}, claimed)
			}
			name := fmt.Sprintf("%.12s-%s", st.Commits[i], slugify(mm.Subject))
			if id > 0 {
				name = fmt.Sprintf("%04d-%s", id, slugify(mm.Subject))
				if sd != nil && sd.byID[id] != "" {
					name = strings.TrimSuffix(sd.byID[id], ".patch")
				}
			}
			st.IDs = append(st.IDs, id)
			st.Names = append(st.Names, name)
		}
		// The mail without its Series-Id: commit() adds the trailer back once.
		p := &series.Patch{Name: st.Names[i], ID: st.IDs[i], Raw: r.mails[i]}
		if probs := series.ParsePatch(p); len(probs) > 0 {
			return fmt.Errorf("rebase: commit %s: %s", st.Commits[i], probs[0])
		}
		r.pats[i] = p
	}
	return nil
}

// resume opens the saved state for Continue, Skip or Abort.
func resume(ctx context.Context, g *gitcli.Git, root *os.Root, opts RebaseOptions) (*rebaser, error) {
	gitDir, dir, err := stateDir(ctx, g, opts.Tree)
	if err != nil {
		return nil, err
	}
	st, err := loadState(gitDir, dir)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, ErrNoRebase
	}
	// The state verified with the key, so the key exists.
	key, _, err := statekey.Load()
	if err != nil {
		return nil, err
	}
	st.Tree = opts.Tree
	r := &rebaser{g: g, root: root, gitDir: gitDir, dir: dir, key: key, st: st, opts: opts}
	r.cw = newCommitWriter(ctx, g, opts.Tree, dir)
	if err := r.loadPatches(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Continue finishes the stopped patch (the author's staged resolution becomes its
// commit) and goes on; after a crash it redoes the interrupted step.
func Continue(ctx context.Context, g *gitcli.Git, root *os.Root, opts RebaseOptions) (*RebaseResult, error) {
	unlock, err := series.Lock(root)
	if err != nil {
		return nil, fmt.Errorf("rebase --continue: %w", err)
	}
	defer unlock()
	r, err := resume(ctx, g, root, opts)
	if err != nil {
		return nil, fmt.Errorf("rebase --continue: %w", err)
	}
	switch r.st.Phase {
	case phaseApplying:
		if err := r.discardStep(ctx); err != nil {
			return nil, err
		}
	case phaseStopped:
		if err := r.commitResolution(ctx); err != nil {
			return nil, err
		}
	case phaseFinishing:
		if err := r.restoreIndex(ctx); err != nil {
			return nil, err
		}
	}
	return r.loop(ctx)
}

// Skip drops the stopped patch and goes on.
func Skip(ctx context.Context, g *gitcli.Git, root *os.Root, opts RebaseOptions) (*RebaseResult, error) {
	unlock, err := series.Lock(root)
	if err != nil {
		return nil, fmt.Errorf("rebase --skip: %w", err)
	}
	defer unlock()
	r, err := resume(ctx, g, root, opts)
	if err != nil {
		return nil, fmt.Errorf("rebase --skip: %w", err)
	}
	if r.st.Phase == phaseFinishing {
		if err := r.restoreIndex(ctx); err != nil {
			return nil, err
		}
		return r.loop(ctx)
	}
	if err := r.discardStep(ctx); err != nil {
		return nil, err
	}
	i := r.st.Next
	r.st.Outcomes = append(r.st.Outcomes, r.outcome(i, OutcomeSkipped))
	r.st.Next++
	r.st.Phase, r.st.Stopped = phaseApplying, nil
	if err := r.save(); err != nil {
		return nil, err
	}
	return r.loop(ctx)
}

// Abort puts tree, branch and index back as they were before the rebase began.
func Abort(ctx context.Context, g *gitcli.Git, root *os.Root, opts RebaseOptions) (*RebaseState, error) {
	unlock, err := series.Lock(root)
	if err != nil {
		return nil, fmt.Errorf("rebase --abort: %w", err)
	}
	defer unlock()
	r, err := resume(ctx, g, root, opts)
	if err != nil {
		return nil, fmt.Errorf("rebase --abort: %w", err)
	}
	st := r.st
	if _, err := series.Recover(root, series.Forward); err != nil {
		return nil, fmt.Errorf("rebase --abort: %w", err)
	}
	// The branch moves only when finishing; put it back in case that had begun.
	if err := g.SetBranch(ctx, st.Tree, st.Branch, st.OrigHead, "", "mpspatch rebase --abort"); err != nil {
		return nil, fmt.Errorf("rebase --abort: %w", err)
	}
	if err := g.Switch(ctx, st.Tree, st.Branch, true); err != nil {
		return nil, fmt.Errorf("rebase --abort: %w", err)
	}
	if err := g.ResetHard(ctx, st.Tree, st.OrigHead); err != nil {
		return nil, fmt.Errorf("rebase --abort: %w", err)
	}
	if err := r.cleanNewFiles(ctx, allPaths(r.pats)); err != nil {
		return nil, fmt.Errorf("rebase --abort: %w", err)
	}
	if err := os.RemoveAll(r.dir); err != nil {
		return nil, fmt.Errorf("rebase --abort: %w", err)
	}
	return st, nil
}

// discardStep throws away whatever the current step left (a crash mid-write, or the
// author's unfinished resolution) and returns the tree to the step's starting commit.
func (r *rebaser) discardStep(ctx context.Context) error {
	st := r.st
	if _, err := series.Recover(r.root, series.Forward); err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	// Detached and forced: also right when a crash came before the first detach, with
	// the branch still checked out (a reset there would move the branch).
	if err := r.g.Detach(ctx, st.Tree, st.Head, true); err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	r.unstaged = nil // the index holds st.Head now
	if st.Next < len(r.pats) {
		if err := r.cleanNewFiles(ctx, r.pats[st.Next].Paths()); err != nil {
			return err
		}
	}
	return nil
}

// cleanNewFiles removes files among paths that HEAD does not track: files a patch
// created. The rebase refuses to start while an untracked file sits on a path of the
// series, so no such file is the author's.
func (r *rebaser) cleanNewFiles(ctx context.Context, paths []string) error {
	untracked, err := r.g.Untracked(ctx, r.st.Tree, paths)
	if err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	for _, p := range untracked {
		if err := r.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rebase: remove %s: %w", p, err)
		}
	}
	return nil
}

func allPaths(pats []*series.Patch) []string {
	var out []string
	for _, p := range pats {
		out = append(out, p.Paths()...)
	}
	return out
}

// commitResolution records the author's staged resolution of the stopped patch.
func (r *rebaser) commitResolution(ctx context.Context) error {
	st := r.st
	i := st.Next
	unmerged, err := r.g.Unmerged(ctx, st.Tree)
	if err != nil {
		return fmt.Errorf("rebase --continue: %w", err)
	}
	if len(unmerged) > 0 {
		return fmt.Errorf("rebase --continue: %w: %s still in conflict (%s); resolve and `git add` them", ErrUnresolved, plural(len(unmerged), "file"), strings.Join(unmerged, ", "))
	}
	entries, err := r.g.TrackedChanges(ctx, st.Tree)
	if err != nil {
		return fmt.Errorf("rebase --continue: %w", err)
	}
	for _, e := range entries {
		if e.XY[1] != ' ' {
			return fmt.Errorf("rebase --continue: %w: %s is changed but not staged; `git add` it (or `git checkout` it) first", ErrUnresolved, e.Path)
		}
	}
	staged, err := r.g.IndexDiffers(ctx, st.Tree, st.Head)
	if err != nil {
		return fmt.Errorf("rebase --continue: %w", err)
	}
	if !staged {
		return fmt.Errorf("rebase --continue: %w: nothing staged for %s; `mpspatch rebase --skip` drops it", ErrUnresolved, st.Names[i])
	}
	if r.opts.Intents != nil && !r.opts.SkipIntents {
		if broken := r.opts.Intents(r.pats[i], r.read); len(broken) > 0 {
			st.Stopped = &Stop{Index: i, Patch: st.Names[i], Reason: "intent", Intents: broken}
			if err := r.save(); err != nil {
				return err
			}
			return &StopError{Stop: st.Stopped}
		}
	}
	sha, err := r.commit(ctx, i)
	if err != nil {
		return err
	}
	out := r.outcome(i, OutcomeResolved)
	out.NewCommit = sha
	return r.advance(out)
}

func (r *rebaser) read(p string) ([]byte, error) { return r.root.ReadFile(p) }

func (r *rebaser) outcome(i int, what string) PatchOutcome {
	return PatchOutcome{ID: r.st.IDs[i], Name: r.st.Names[i], Subject: r.pats[i].Title, Outcome: what, OldCommit: r.st.Commits[i], Renamed: r.renamed[i]}
}

// followRenames points patch i at the new names of files upstream renamed between Base
// and Onto, as git's merge follows a rename: when a file the patch changes or deletes is
// missing from the tree and rename detection between Base and Onto names its new path
// (which the tree has), the patch's headers are rewritten to that path. The rewritten
// mail is what the step applies (exact, offset or three-way) and what gets committed.
// Recomputed from the commits on every run, so a resumed rebase follows the same renames.
func (r *rebaser) followRenames(ctx context.Context, i int) error {
	p := r.pats[i]
	var missing []string
	for _, f := range p.Files {
		if f.IsNew || f.OldName == "" {
			continue
		}
		if _, err := r.root.Lstat(f.OldName); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, f.OldName)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if r.renames == nil {
		rn, err := r.g.Renames(ctx, r.st.Tree, r.st.Base, r.st.Onto)
		if err != nil {
			return err
		}
		r.renames = rn
	}
	moves := map[string]string{}
	var followed []string
	for _, old := range missing {
		nw, ok := r.renames[old]
		if !ok {
			continue
		}
		if _, err := r.root.Lstat(nw); err != nil {
			continue
		}
		moves[old] = nw
		followed = append(followed, old+" → "+nw)
	}
	if len(moves) == 0 {
		return nil
	}
	mail := renamePaths(r.mails[i], moves)
	np := &series.Patch{Name: p.Name, ID: p.ID, Raw: mail}
	if probs := series.ParsePatch(np); len(probs) > 0 {
		return fmt.Errorf("follow upstream renames %s: %s", strings.Join(followed, ", "), probs[0])
	}
	r.mails[i], r.pats[i] = mail, np
	if r.renamed == nil {
		r.renamed = map[int][]string{}
	}
	r.renamed[i] = followed
	return nil
}

// renamePaths rewrites the file headers of a mail's diff (diff --git, ---/+++, rename
// and copy lines, quoted as git quotes them) and the paths its Intent: trailers end with,
// so that every path in moves names its new place; hunks are left as they are. Each header is matched whole, so a path holding a
// space, or one that is a prefix of another ("x.c", "x.cc"), is rewritten exactly.
func renamePaths(mail []byte, moves map[string]string) []byte {
	lines := strings.SplitAfter(string(mail), "\n")
	inHeader, seenDiff := false, false
	for k, l := range lines {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			inHeader, seenDiff = true, true
		case strings.HasPrefix(l, "@@ ") || strings.HasPrefix(l, "GIT binary patch"):
			inHeader = false
		}
		if !inHeader {
			if !seenDiff && strings.HasPrefix(l, "Intent:") {
				// An intent names the file it holds in; it follows the file.
				body, nl := strings.CutSuffix(l, "\n")
				for old, nw := range moves {
					if rest, ok := strings.CutSuffix(body, " in "+old); ok {
						body = rest + " in " + nw
					}
				}
				if nl {
					body += "\n"
				}
				lines[k] = body
			}
			continue
		}
		body, nl := strings.CutSuffix(l, "\n")
		for old, nw := range moves {
			qa, qb := series.QuotePath("a/"+old), series.QuotePath("b/"+old)
			na, nb := series.QuotePath("a/"+nw), series.QuotePath("b/"+nw)
			if rest, ok := strings.CutPrefix(body, "diff --git "); ok {
				if strings.HasPrefix(rest, qa+" ") {
					rest = na + rest[len(qa):]
				}
				if strings.HasSuffix(rest, " "+qb) {
					rest = rest[:len(rest)-len(qb)] + nb
				}
				body = "diff --git " + rest
				continue
			}
			for _, h := range [][3]string{{"--- ", qa, na}, {"+++ ", qb, nb}, {"rename from ", series.QuotePath(old), series.QuotePath(nw)},
				{"rename to ", series.QuotePath(old), series.QuotePath(nw)}, {"copy from ", series.QuotePath(old), series.QuotePath(nw)},
				{"copy to ", series.QuotePath(old), series.QuotePath(nw)}} {
				// git ends a ---/+++ path that holds a space with a tab.
				if rest, ok := strings.CutPrefix(body, h[0]); ok && strings.TrimSuffix(rest, "\t") == h[1] {
					body = h[0] + h[2] + rest[len(h[1]):]
				}
			}
		}
		if nl {
			body += "\n"
		}
		lines[k] = body
	}
	return []byte(strings.Join(lines, ""))
}

// message is patch i's mail and the commit message it gets: its own, with its Series-Id.
func (r *rebaser) message(i int) (mailMessage, string, error) {
	mm, err := parseMailMessage(r.pats[i].Raw)
	if err != nil {
		return mailMessage{}, "", fmt.Errorf("rebase %s: %w", r.st.Names[i], err)
	}
	msg := mm.Message
	if r.st.IDs[i] > 0 {
		msg = addSeriesID(msg, r.st.IDs[i])
	}
	return mm, msg, nil
}

// commit records the index as patch i's commit, with its original message, author,
// date and Series-Id.
func (r *rebaser) commit(ctx context.Context, i int) (string, error) {
	mm, msg, err := r.message(i)
	if err != nil {
		return "", err
	}
	crashpoint("before commit")
	// HEAD stays where it is until the rebase stops or ends (the state's Head is the
	// truth meanwhile): one git process less per patch.
	sha, err := commitIndex(ctx, r.g, r.st.Tree, r.st.Head, mm, msg, "mpspatch rebase: "+r.st.Names[i], false)
	if err != nil {
		return "", fmt.Errorf("rebase %s: %w", r.st.Names[i], err)
	}
	crashpoint("committed")
	return sha, nil
}

// advance records patch Next's outcome and moves to the next patch.
func (r *rebaser) advance(out PatchOutcome) error {
	st := r.st
	st.Outcomes = append(st.Outcomes, out)
	if out.NewCommit != "" {
		st.Head = out.NewCommit
	}
	st.Next++
	st.Phase, st.Stopped = phaseApplying, nil
	if err := r.save(); err != nil {
		return err
	}
	crashpoint("advanced")
	if r.opts.Progress != nil {
		r.opts.Progress(st.Next, len(r.pats), out)
	}
	return nil
}

// loop applies the remaining patches, then moves the branch.
func (r *rebaser) loop(ctx context.Context) (*RebaseResult, error) {
	st := r.st
	defer r.cw.close()
	for st.Next < len(r.pats) {
		if err := ctx.Err(); err != nil {
			return &RebaseResult{State: st}, err
		}
		if err := r.step(ctx); err != nil {
			return &RebaseResult{State: st}, err
		}
	}
	if st.Phase != phaseFinishing {
		st.Phase = phaseFinishing
		if err := r.save(); err != nil {
			return nil, err
		}
	}
	crashpoint("finishing")
	if err := r.annotate(ctx); err != nil {
		return &RebaseResult{State: st}, err
	}
	if err := r.stageWritten(ctx); err != nil {
		return &RebaseResult{State: st}, err
	}
	cur, err := r.g.BranchCommit(ctx, st.Tree, st.Branch)
	if err != nil {
		return &RebaseResult{State: st}, fmt.Errorf("rebase: %w", err)
	}
	if cur != st.Head {
		if err := r.g.SetBranch(ctx, st.Tree, st.Branch, st.Head, st.OrigHead, "mpspatch rebase --onto "+st.OntoName); err != nil {
			return &RebaseResult{State: st}, fmt.Errorf("rebase: %w", err)
		}
	}
	crashpoint("branch moved")
	// Index and work tree hold the branch's new commit already: pointing HEAD at the
	// branch is all a checkout would do, without reading and stat-ing the whole index.
	if err := r.g.AttachHead(ctx, st.Tree, st.Branch, "mpspatch rebase --onto "+st.OntoName); err != nil {
		return &RebaseResult{State: st}, fmt.Errorf("rebase: %w", err)
	}
	if err := os.RemoveAll(r.dir); err != nil {
		return &RebaseResult{State: st}, fmt.Errorf("rebase: remove state: %w", err)
	}
	return &RebaseResult{State: st, Done: true}, nil
}

// step applies patch Next: exact or offset with the series engine, else the patch is
// checked for being already upstream, else a three-way merge, else a stop.
func (r *rebaser) step(ctx context.Context) error {
	st := r.st
	i := st.Next
	if err := r.followRenames(ctx, i); err != nil {
		return fmt.Errorf("rebase %s: %w", st.Names[i], err)
	}
	p := r.pats[i]
	crashpoint("step")
	plan, err := series.ComputePatches(r.root, []*series.Patch{p}, series.Forward)
	var ce *series.ConflictError
	switch {
	case err == nil:
		// The write phase's own steps are crash points too: a rebase killed there leaves
		// a journal that --continue and --abort roll back.
		opts := series.CommitOptions{Crashpoint: func(s string) { crashpoint("write: " + s) }}
		if err := series.Commit(r.root, plan, series.OpRebase, "", opts); err != nil {
			return fmt.Errorf("rebase %s: %w", st.Names[i], err)
		}
		crashpoint("written")
		r.unstaged = append(r.unstaged, changedPaths(plan)...)
		out := r.outcome(i, OutcomeClean)
		if res := plan.Results[0]; res.Outcome() == "offset" {
			out.Outcome, out.Offset = OutcomeOffset, res.MaxOffset()
		}
		return r.finishStep(ctx, out, plan)
	case errors.As(err, &ce):
	default:
		return fmt.Errorf("rebase %s: %w", st.Names[i], err)
	}
	// Already upstream? Then the reverse of the patch applies to the new tree.
	if _, rerr := series.ComputePatches(r.root, []*series.Patch{p}, series.Reverse); rerr == nil {
		return r.empty(ctx, i)
	}
	// Three-way: git apply --3way merges each file against the patch's base blob (from
	// its index line; a partial clone fetches it on demand), in an index that must hold
	// st.Head.
	if err := r.stageWritten(ctx); err != nil {
		return err
	}
	aerr := r.g.Apply(ctx, st.Tree, r.mails[i], gitcli.ApplyOptions{Index: true, ThreeWay: true})
	if aerr == nil {
		staged, err := r.g.IndexDiffers(ctx, st.Tree, st.Head)
		if err != nil {
			return err
		}
		if !staged {
			return r.empty(ctx, i)
		}
		return r.finishStep(ctx, r.outcome(i, OutcomeMerged), nil)
	}
	unmerged, err := r.g.Unmerged(ctx, st.Tree)
	if err != nil {
		return err
	}
	stop := &Stop{Index: i, Patch: st.Names[i], Reason: "conflict", Files: unmerged}
	if len(unmerged) == 0 {
		// git could not even merge (a base blob is missing): nothing was written. The
		// engine's report says which hunk failed; the patch is kept for `git apply --reject`.
		stop.Detail = ce.Error()
		_ = atomicfile.WriteBytes(filepath.Join(r.dir, "patch"), r.mails[i], atomicfile.Options{})
		for _, c := range ce.Conflicts {
			stop.Files = append(stop.Files, c.File)
		}
	}
	st.Phase, st.Stopped = phaseStopped, stop
	return r.stop(ctx)
}

// stop saves the state and hands the tree to the author, HEAD at the last rebased commit
// so that git status and git diff --cached show the stopped patch alone.
func (r *rebaser) stop(ctx context.Context) error {
	if err := r.stageWritten(ctx); err != nil {
		return err
	}
	if err := r.save(); err != nil {
		return err
	}
	if err := r.g.SetHead(ctx, r.st.Tree, r.st.Head, "mpspatch rebase: stopped at "+r.st.Stopped.Patch); err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	return &StopError{Stop: r.st.Stopped}
}

// finishStep judges the result's intents, then commits it: plan, when set, is what the
// engine wrote (the commit writer records it), else the index holds the result.
func (r *rebaser) finishStep(ctx context.Context, out PatchOutcome, plan *series.Plan) error {
	st := r.st
	i := st.Next
	if r.opts.Intents != nil {
		if broken := r.opts.Intents(r.pats[i], r.read); len(broken) > 0 {
			st.Phase = phaseStopped
			st.Stopped = &Stop{Index: i, Patch: st.Names[i], Reason: "intent", Intents: broken}
			return r.stop(ctx)
		}
	}
	sha, err := r.commitWritten(ctx, i, plan)
	if err != nil {
		return err
	}
	out.NewCommit = sha
	return r.advance(out)
}

// commitWritten records patch i's step as its commit: through the commit writer where it
// can (no git process of its own for the step), else through the index.
func (r *rebaser) commitWritten(ctx context.Context, i int, plan *series.Plan) (string, error) {
	if plan != nil {
		mm, msg, err := r.message(i)
		if err != nil {
			return "", err
		}
		crashpoint("before commit")
		sha, err := r.cw.record(ctx, r.root, plan, r.st.Head, mm, msg)
		switch {
		case err == nil:
			crashpoint("commit written")
			crashpoint("committed")
			return sha, nil
		case !errors.Is(err, errDecline):
			return "", fmt.Errorf("rebase %s: %w", r.st.Names[i], err)
		}
	}
	if err := r.stageWritten(ctx); err != nil {
		return "", err
	}
	return r.commit(ctx, i)
}

// stageWritten adds to the index what the commit writer recorded without it, so that
// the index holds st.Head (and the step's own files) again.
func (r *rebaser) stageWritten(ctx context.Context) error {
	if len(r.unstaged) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var paths []string
	for _, p := range r.unstaged {
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	if err := r.g.Add(ctx, r.st.Tree, paths); err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	r.unstaged = nil
	return nil
}

// restoreIndex, when a rebase resumes in its last phase, sets index and work tree to the
// rebased head: the run that was interrupted may not have staged what its commit writer
// recorded.
func (r *rebaser) restoreIndex(ctx context.Context) error {
	if err := r.g.Detach(ctx, r.st.Tree, r.st.Head, true); err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	return nil
}

// empty records patch i as absorbed upstream and leaves the tree as it was.
func (r *rebaser) empty(ctx context.Context, i int) error {
	st := r.st
	if err := r.discardStep(ctx); err != nil {
		return err
	}
	out := r.outcome(i, OutcomeEmpty)
	sha, subj, err := r.g.LastCommitTouching(ctx, st.Tree, st.Base+".."+st.Onto, r.pats[i].Paths())
	if err == nil {
		out.Upstream, out.UpstreamSubject = sha, subj
	}
	return r.advance(out)
}

// annotate compares every rebased patch's diff with the old one (line numbers and blob
// IDs aside) and keeps a short range-diff style excerpt where they differ.
func (r *rebaser) annotate(ctx context.Context) error {
	st := r.st
	if st.Head == st.Onto {
		return nil
	}
	mbox, err := r.g.FormatPatch(ctx, st.Tree, st.Onto+".."+st.Head)
	if err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	fresh := map[string][]byte{}
	var commits []string
	for _, o := range st.Outcomes {
		if o.NewCommit != "" {
			commits = append(commits, o.NewCommit)
		}
	}
	mails := splitMbox(mbox)
	if len(mails) != len(commits) {
		return fmt.Errorf("rebase: git format-patch wrote %d mails for %d commits", len(mails), len(commits))
	}
	for k, c := range commits {
		fresh[c] = mails[k]
	}
	for k := range st.Outcomes {
		o := &st.Outcomes[k]
		nm, ok := fresh[o.NewCommit]
		if !ok {
			continue
		}
		idx := -1
		for j, c := range st.Commits {
			if c == o.OldCommit {
				idx = j
			}
		}
		if idx < 0 {
			continue
		}
		if rd := rangeDiff(r.mails[idx], nm); rd != "" {
			o.Changed, o.RangeDiff = true, rd
		}
	}
	return nil
}

// normalisedDiff is a mail's diff without what a move alone changes: blob IDs, hunk
// line numbers, the diffstat.
func normalisedDiff(mail []byte) []string {
	i := bytes.Index(mail, []byte("\ndiff --git "))
	if i < 0 {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(mail[i+1:]), "\n") {
		switch {
		case strings.HasPrefix(l, "index "):
			continue
		case strings.HasPrefix(l, "@@ "):
			l = "@@"
		}
		out = append(out, l)
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
