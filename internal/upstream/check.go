package upstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/mpspatch/mpspatch/internal/series"
)

// Outcome is what one patch does at one REF.
type Outcome string

const (
	Exact    Outcome = "exact"        // applies at the recorded lines
	Offset   Outcome = "offset"       // applies with every hunk moved by at most Cell.Offset lines
	ThreeWay Outcome = "3-way"        // the context moved on, but a three-way merge against the pinned base takes it
	Conflict Outcome = "conflict"     // neither applies nor merges
	Absorbed Outcome = "absorbed"     // the patch's result is already there (its reverse applies)
	Missing  Outcome = "missing-file" // a file the patch changes is not there
)

// Cell is the outcome of one patch at one REF.
type Cell struct {
	Outcome Outcome `json:"outcome"`
	// Offset is the largest hunk offset, for Offset.
	Offset int `json:"offset,omitempty"`
	// File, Hunk and Hunks locate the first failing hunk (Conflict, Missing).
	File  string `json:"file,omitempty"`
	Hunk  int    `json:"hunk,omitempty"`
	Hunks int    `json:"hunks,omitempty"`
	// Reason is the engine's explanation of a conflict.
	Reason string `json:"reason,omitempty"`
}

// String is the cell as the table shows it.
func (c Cell) String() string {
	switch c.Outcome {
	case Offset:
		return fmt.Sprintf("offset %d", c.Offset)
	case ThreeWay:
		return "3-way needed"
	case Missing:
		return "missing file"
	case Conflict:
		if c.Hunk > 0 {
			return fmt.Sprintf("conflict (hunk %d/%d)", c.Hunk, c.Hunks)
		}
		return "conflict (" + c.Reason + ")"
	}
	return string(c.Outcome)
}

// Applies says whether apply would take the patch as it is.
func (c Cell) Applies() bool { return c.Outcome == Exact || c.Outcome == Offset }

// Merger merges the change from base to other into current and says whether it merged
// without conflicts (git merge-file).
type Merger func(ctx context.Context, path string, current, base, other []byte) (merged []byte, clean bool, err error)

// Classify works out each patch's outcome on the tree src, in series order: a patch that
// applies (or merges) is laid over src for the patches after it, as apply would. base
// returns the pinned base tree the patches were written against, for the three-way
// question; it is called only when a patch conflicts, so a run where everything applies
// never fetches the base. base may return a nil source: no base, no merge.
func Classify(ctx context.Context, src series.FileSource, patches []*series.Patch, base func() (series.FileSource, error), merge Merger) ([]Cell, error) {
	cur := newOverlay(src)
	cells := make([]Cell, len(patches))
	for i, p := range patches {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		plan, err := series.ComputeFrom(cur, []*series.Patch{p}, series.Forward)
		var ce *series.ConflictError
		if err != nil && !errors.As(err, &ce) {
			return nil, fmt.Errorf("check %s: %w", p.Name, err)
		}
		if ce == nil {
			cells[i] = Cell{Outcome: Exact}
			if off := plan.Results[0].MaxOffset(); off > 0 {
				cells[i] = Cell{Outcome: Offset, Offset: off}
			}
			cur.apply(plan.Changes)
			continue
		}
		first := ce.Conflicts[0]
		conflict := Cell{Outcome: Conflict, File: first.File, Hunk: first.Hunk, Hunks: first.Hunks, Reason: first.Reason}
		if missing := missingFile(ce); missing != "" {
			cells[i] = Cell{Outcome: Missing, File: missing, Reason: "file does not exist"}
			continue
		}
		if _, err := series.ComputeFrom(cur, []*series.Patch{p}, series.Reverse); err == nil {
			cells[i] = Cell{Outcome: Absorbed}
			continue
		}
		if base == nil || merge == nil {
			cells[i] = conflict
			continue
		}
		baseSrc, err := base()
		if err != nil {
			return nil, err
		}
		if baseSrc == nil {
			cells[i] = conflict
			continue
		}
		merged, ok, err := threeWay(ctx, cur, baseSrc, patches[:i], p, merge)
		if err != nil {
			return nil, fmt.Errorf("check %s: three-way merge: %w", p.Name, err)
		}
		if !ok {
			cells[i] = conflict
			continue
		}
		cells[i] = Cell{Outcome: ThreeWay}
		cur.apply(merged)
	}
	return cells, nil
}

// missingFile names a file the patch changes (not creates) that the tree lacks.
func missingFile(ce *series.ConflictError) string {
	for _, c := range ce.Conflicts {
		if c.Hunk == 0 && c.Reason == "file does not exist" {
			return c.File
		}
	}
	return ""
}

// threeWay merges patch p, as it changes the base (with the patches before it applied),
// into cur file by file. It reports false when the patch does not apply to its own base
// or any file merges with conflicts.
func threeWay(ctx context.Context, cur *overlay, baseSrc series.FileSource, before []*series.Patch, p *series.Patch, merge Merger) ([]series.Change, bool, error) {
	pre := newOverlay(baseSrc)
	if len(before) > 0 {
		plan, err := series.ComputeFrom(baseSrc, before, series.Forward)
		if err != nil {
			return nil, false, nil // the series does not apply to its own base: no merge base
		}
		pre.apply(plan.Changes)
	}
	plan, err := series.ComputeFrom(pre, []*series.Patch{p}, series.Forward)
	if err != nil {
		return nil, false, nil
	}
	var out []series.Change
	for _, ch := range plan.Changes {
		have, err := cur.ReadFile(ch.Path)
		if err != nil {
			return nil, false, err
		}
		base := ch.OldData
		if r := renamedOrCopied(p, ch); r != nil {
			// A rename or copy: git apply --3way merges the content change at the new
			// path against the file at the OLD path in REF (the preimage it names), and
			// a rename then deletes the old path whatever REF holds there.
			if !ch.NewExists {
				out = append(out, series.Change{Path: ch.Path, OldExists: have.Exists, OldData: have.Data, OldMode: have.Mode})
				continue
			}
			if have.Exists {
				// REF already has a file at the new path. git would write the merge over
				// it, losing REF's file without a word; here that is a conflict.
				return nil, false, nil
			}
			ours, err := cur.ReadFile(r.OldName)
			if err != nil {
				return nil, false, err
			}
			orig, err := pre.ReadFile(r.OldName)
			if err != nil {
				return nil, false, err
			}
			if !ours.Exists || !orig.Exists {
				return nil, false, nil
			}
			merged, clean, err := merge(ctx, ch.Path, ours.Data, orig.Data, ch.NewData)
			if err != nil {
				return nil, false, err
			}
			if !clean {
				return nil, false, nil
			}
			out = append(out, series.Change{Path: ch.Path, NewExists: true, NewData: merged, NewMode: ch.NewMode})
			continue
		}
		if !ch.OldExists || !ch.NewExists || !have.Exists {
			// A file created or deleted has no preimage to merge from. git apply --3way
			// (what a rebase runs) falls back to applying that file's diff directly, and
			// merges a created file that REF has already against an empty base; so does
			// this, or a patch that also adds a file could never be taken by a merge.
			f := createdOrDeleted(p, ch)
			switch {
			case f == nil:
				return nil, false, nil // a path a rename or copy shares with another file diff: not merged here
			case f.IsNew && have.Exists:
				base = nil
			default:
				direct, err := series.ComputeFrom(cur, []*series.Patch{{Name: p.Name, Files: []*gitdiff.File{f}}}, series.Forward)
				if err != nil {
					return nil, false, nil
				}
				out = append(out, direct.Changes...)
				continue
			}
		}
		merged, clean, err := merge(ctx, ch.Path, have.Data, base, ch.NewData)
		if err != nil {
			return nil, false, err
		}
		if !clean {
			return nil, false, nil
		}
		out = append(out, series.Change{Path: ch.Path, OldExists: true, OldData: have.Data, OldMode: have.Mode,
			NewExists: true, NewData: merged, NewMode: ch.NewMode})
	}
	return out, true, nil
}

// renamedOrCopied is the file diff of p that renames or copies a file to ch.Path (ch
// creates it), or renames one away from ch.Path (ch deletes it); nil otherwise. A path
// another file diff of p also creates, deletes or changes in place is left to the
// generic rules.
func renamedOrCopied(p *series.Patch, ch series.Change) *gitdiff.File {
	var found *gitdiff.File
	for _, f := range p.Files {
		switch {
		case (f.IsRename || f.IsCopy) && ch.NewExists && !ch.OldExists && f.NewName == ch.Path:
			found = f
		case f.IsRename && ch.OldExists && !ch.NewExists && f.OldName == ch.Path:
			found = f
		case f.OldName == ch.Path || f.NewName == ch.Path:
			if !(f.IsCopy && f.OldName == ch.Path) {
				return nil
			}
		}
	}
	return found
}

// createdOrDeleted is the file diff of p that creates or deletes ch.Path, or nil when
// ch comes from a rename or copy.
func createdOrDeleted(p *series.Patch, ch series.Change) *gitdiff.File {
	for _, f := range p.Files {
		if (f.IsNew && !ch.OldExists && f.NewName == ch.Path) || (f.IsDelete && !ch.NewExists && f.OldName == ch.Path) {
			return f
		}
	}
	return nil
}

// overlay is a tree with the changes of the patches checked so far laid over it.
type overlay struct {
	base series.FileSource
	m    map[string]series.File
}

func newOverlay(base series.FileSource) *overlay {
	return &overlay{base: base, m: map[string]series.File{}}
}

func (o *overlay) ReadFile(p string) (series.File, error) {
	if f, ok := o.m[p]; ok {
		return f, nil
	}
	return o.base.ReadFile(p)
}

func (o *overlay) apply(changes []series.Change) {
	for _, c := range changes {
		o.m[c.Path] = series.File{Exists: c.NewExists, Data: c.NewData, Mode: c.NewMode}
	}
}
