package upstream

import (
	"context"
	"fmt"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/series"
)

// CheckOptions say what Check checks.
type CheckOptions struct {
	URL  string
	Refs []string
	// Base is the pinned commit the series was written against (the three-way merge
	// base); empty skips the three-way question (conflicts stay conflicts).
	Base   string
	Series *series.Series
	// Progress, when set, receives a line for each step that goes to the network.
	Progress func(string)
}

// Column is one REF of the report.
type Column struct {
	ResolvedRef
	Cells []Cell `json:"cells"`
}

// Report is the answer: for each REF, each patch's outcome.
type Report struct {
	URL     string   `json:"url"`
	Base    string   `json:"base,omitempty"`
	Patches []string `json:"patches"`
	Columns []Column `json:"refs"`
	Stats   Stats    `json:"stats"`
	// Warnings say what could not be asked (the pinned base missing from --url's
	// repository, so conflicts were not tried as three-way merges), and what was repaired
	// on the way (a damaged cache, discarded and fetched again).
	Warnings []string `json:"warnings,omitempty"`
}

// AllApply says whether every patch applies as it is at every REF.
func (r *Report) AllApply() bool {
	for _, c := range r.Columns {
		for _, cell := range c.Cells {
			if !cell.Applies() {
				return false
			}
		}
	}
	return true
}

// Check answers, for each REF, whether each patch of the series applies there, fetching
// into the cache only what the series touches.
func (c *Cache) Check(ctx context.Context, opts CheckOptions) (*Report, error) {
	if len(opts.Refs) == 0 {
		return nil, fmt.Errorf("check upstream: no ref given")
	}
	repo, err := c.Open(ctx, opts.URL)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	refs, err := repo.Resolve(ctx, opts.Refs)
	if err != nil {
		return nil, err
	}
	var commits []string
	for _, r := range refs {
		commits = append(commits, r.Commit)
	}
	if err := repo.EnsureCommits(ctx, commits, opts.Progress); err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range opts.Series.Patches {
		paths = append(paths, p.Paths()...)
	}
	var warnings []string
	warn := func(w string) { warnings = append(warnings, w) }
	snaps, err := repo.healingSnapshots(ctx, commits, paths, opts.Progress, warn)
	if err != nil {
		return nil, err
	}
	var baseSnap series.FileSource
	for i, c := range commits {
		if c == opts.Base {
			baseSnap = snaps[i]
		}
	}
	baseTried := false
	// The base is fetched on the first conflict only. A base the repository does not
	// have (a --url mirror without that commit) is no reason to fail the check: the
	// conflicts stay conflicts, and a warning says the three-way question was not asked.
	base := func() (series.FileSource, error) {
		if baseSnap != nil || baseTried {
			return baseSnap, nil
		}
		baseTried = true
		var progress func(string)
		if opts.Progress != nil {
			progress = func(line string) { opts.Progress(line + ", the pinned base, for three-way merges") }
		}
		if err := repo.EnsureCommits(ctx, []string{opts.Base}, progress); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			warnings = append(warnings, fmt.Sprintf("three-way merges not tried: fetch the pinned base %s: %v", short(opts.Base), err))
			return nil, nil
		}
		s, err := repo.healingSnapshots(ctx, []string{opts.Base}, paths, opts.Progress, warn)
		if err != nil {
			return nil, fmt.Errorf("read the pinned base for three-way merges: %w", err)
		}
		baseSnap = s[0]
		return s[0], nil
	}
	if opts.Base == "" {
		base = nil
	}
	g := repo.git
	merge := func(ctx context.Context, path string, current, base, other []byte) ([]byte, bool, error) {
		res, err := g.MergeFile(ctx, gitcli.MergeInput{Label: "upstream", Data: current},
			gitcli.MergeInput{Label: "base", Data: base}, gitcli.MergeInput{Label: "patched", Data: other})
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
		return res.Merged, res.Conflicts == 0, nil
	}
	rep := &Report{URL: repo.URL, Base: opts.Base}
	for _, p := range opts.Series.Patches {
		rep.Patches = append(rep.Patches, p.Name)
	}
	for i, r := range refs {
		cells, err := Classify(ctx, snaps[i], opts.Series.Patches, base, merge)
		if err != nil {
			return nil, fmt.Errorf("check %s (%s): %w", r.Ref, short(r.Commit), err)
		}
		rep.Columns = append(rep.Columns, Column{ResolvedRef: r, Cells: cells})
	}
	rep.Stats = repo.Stats()
	rep.Warnings = warnings
	return rep, nil
}
