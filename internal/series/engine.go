package series

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Options tune Apply and Unapply.
type Options struct {
	// DryRun computes everything and writes nothing.
	DryRun bool
	// IgnoreBase accepts touched files whose content differs from the base the patches
	// record (a newer upstream, or local edits) as long as every hunk still locates. The
	// differences are kept: hunks are placed around them, never over them.
	IgnoreBase bool
	// Fsync makes the write phase durable against power loss, not only against a killed
	// process (see CommitOptions).
	Fsync bool
	// BeforeCommit, when set, sees the computed plan before anything is written; an error
	// from it stops the run with nothing written. The CLI checks patch intents here.
	BeforeCommit func(*Plan) error
	// Held is the tree's writer lock when the caller already holds it (Hold): Apply and
	// Unapply then take no lock of their own. A lock on another directory is refused.
	Held *TreeLock
}

// Result is what Apply or Unapply did.
type Result struct {
	// Noop is set when the tree already was in the requested state.
	Noop bool
	// Recovery says what recovery of an interrupted write did first, if anything.
	Recovery string
	Before   *TreeStatus
	Plan     *Plan
}

// StateError reports a tree that is neither wholly before nor wholly after the series,
// or whose touched files carry edits of their own. Nothing was written.
type StateError struct {
	Verb   string
	Status *TreeStatus
	Hint   string
}

func (e *StateError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s; refusing to write", e.Verb, e.cause())
	for _, f := range e.Status.Files {
		fmt.Fprintf(&b, "\n  %-60s %s", QuotePath(f.Path), f.State())
	}
	if e.Hint != "" {
		b.WriteString("\n")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// cause names why the tree was refused, by what its files hold, rather than by the
// summary state alone ("the tree is modified" tells no one what to do).
func (e *StateError) cause() string {
	var neither, edited, partial, patched, base []string
	for _, f := range e.Status.Files {
		switch {
		case f.Version < 0:
			neither = append(neither, f.Path)
		case f.Edited:
			edited = append(edited, f.Path)
		case f.Version == f.Steps:
			patched = append(patched, f.Path)
		case f.Version == 0:
			base = append(base, f.Path)
		default:
			partial = append(partial, f.Path)
		}
	}
	switch {
	case len(neither) > 0:
		return fmt.Sprintf("%s from both the base and the patched content: %s", filesVerb(len(neither), "differs", "differ"), listPaths(neither))
	case len(partial) > 0:
		return fmt.Sprintf("%s only some of the patches that touch %s: %s", filesVerb(len(partial), "holds", "hold"), pronoun(len(partial)), listPaths(partial))
	case len(patched) > 0 && len(base) > 0:
		return fmt.Sprintf("the tree is partly patched: %s already patched, %s at the base: %s",
			filesVerb(len(patched), "is", "are"), filesVerb(len(base), "is", "are"), listPaths(patched))
	case len(edited) > 0:
		return fmt.Sprintf("%s local edits on top of the recorded content: %s", filesVerb(len(edited), "carries", "carry"), listPaths(edited))
	}
	return "the tree is " + string(e.Status.Summary())
}

// filesVerb says "1 file differs", "3 files differ".
func filesVerb(n int, one, many string) string {
	if n == 1 {
		return "1 file " + one
	}
	return fmt.Sprintf("%d files %s", n, many)
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// listPaths names up to three paths, then how many more.
func listPaths(paths []string) string {
	if len(paths) <= 3 {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:3], ", "), len(paths)-3)
}

const ignoreBaseHint = `Files marked "with local edits" differ from the base the patches were written for
(a different upstream commit, or your own changes). --ignore-base applies around the
differences when every hunk still locates; nothing is overwritten.`

// LockWait is how long a command waits for another mpspatch working on the same tree
// before it gives up with ErrBusy.
var LockWait = 5 * time.Second

// Apply applies the whole series to the tree at root, all or nothing.
func Apply(root *os.Root, s *Series, opts Options) (*Result, error) {
	return run(root, s, Forward, opts)
}

// Unapply reverses the whole series in the tree at root, all or nothing.
func Unapply(root *os.Root, s *Series, opts Options) (*Result, error) {
	return run(root, s, Reverse, opts)
}

func run(root *os.Root, s *Series, dir Direction, opts Options) (*Result, error) {
	if len(s.Patches) == 0 {
		return nil, fmt.Errorf("%s: %w", dir.verb(), ErrEmptySeries)
	}
	// One writer per tree; a dry run only reads, and writes nothing, not even a lock file.
	unlock, err := acquire(root, !opts.DryRun, opts.Held)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir.verb(), err)
	}
	defer unlock()
	rec := ""
	if opts.DryRun {
		in, _, err := look(root)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir.verb(), err)
		}
		if in.Blocking() {
			return nil, fmt.Errorf("%s --dry-run: %w", dir.verb(), &JournalError{Interruption: *in})
		}
	} else if rec, err = Recover(root, dir); err != nil {
		return nil, fmt.Errorf("%s: %w", dir.verb(), err)
	}
	tf := newTreeFiles(root)
	st, err := inspect(tf, s, rec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir.verb(), err)
	}
	res := &Result{Recovery: st.Recovery, Before: st}
	done, start := len(s.Patches), 0
	if dir == Reverse {
		done, start = 0, len(s.Patches)
	}
	edited := 0
	for _, f := range st.Files {
		if f.Edited {
			edited++
		}
	}
	switch {
	case st.Applied == done:
		res.Noop = true
		return res, nil
	case st.Applied >= 0 && st.Applied != start:
		return res, &StateError{Verb: dir.verb(), Status: st}
	case st.Applied < 0 && !anyUnknown(st):
		return res, &StateError{Verb: dir.verb(), Status: st}
	case edited > 0 && !opts.IgnoreBase:
		return res, &StateError{Verb: dir.verb(), Status: st, Hint: ignoreBaseHint}
	}
	// Files that match neither side: let Compute say exactly which hunk does not locate.
	plan, err := computePatches(tf, s.Patches, dir, nil)
	res.Plan = plan
	if err != nil {
		return res, err
	}
	if opts.BeforeCommit != nil {
		if err := opts.BeforeCommit(plan); err != nil {
			return res, err
		}
	}
	if opts.DryRun {
		return res, nil
	}
	if err := Commit(root, plan, dir.verb(), s.Hash(), CommitOptions{Fsync: opts.Fsync}); err != nil {
		return res, fmt.Errorf("%s: %w", dir.verb(), err)
	}
	return res, nil
}

// anyUnknown says whether some file matches no version at all.
func anyUnknown(st *TreeStatus) bool {
	for _, f := range st.Files {
		if f.Version < 0 {
			return true
		}
	}
	return false
}
