package stack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/series"
)

// ExportOptions say what to export where.
type ExportOptions struct {
	// Tree is the git work tree holding the series commits.
	Tree string
	// Base is the commit the series starts on (exclusive); Head its last commit
	// (default HEAD).
	Base, Head string
	// Dir is the series directory to write.
	Dir string
	// Check computes everything and writes nothing.
	Check bool
	// BaseIsPin says Base is the configured upstream pin rather than the user's choice:
	// when the clone lacks that commit (a shallow or fresh clone, a fork), Export finds
	// the series' own base instead (see seriesBase).
	BaseIsPin bool
}

// File actions in an ExportResult.
const (
	Unchanged = "unchanged"
	Created   = "created"
	Updated   = "updated"
	Deleted   = "deleted"
)

// FileChange is what export does (or, with Check, would do) to one file.
type FileChange struct {
	Name    string `json:"file"`
	Action  string `json:"action"`
	ID      int    `json:"id,omitempty"`
	Subject string `json:"subject,omitempty"`
	Commit  string `json:"commit,omitempty"`
}

// ExportResult is the outcome of Export.
type ExportResult struct {
	Dir     string       `json:"dir"`
	Base    string       `json:"base"`
	Head    string       `json:"head"`
	Files   []FileChange `json:"files"`
	Retired []int        `json:"retired,omitempty"`
	// Changed is set when any file differs (was written, or would be with Check).
	Changed bool `json:"changed"`
	// BaseFound, when set, says how Base was found because the pinned commit was not
	// in the clone ("parent of abc123, the commit with Series-Id 0001").
	BaseFound string `json:"base_found,omitempty"`
}

// exportedPatch is one commit as a series entry.
type exportedPatch struct {
	commit  string
	id      int
	name    string
	subject string
	mail    []byte
}

// Export turns the commits Base..Head of Tree into the series directory Dir: one
// normalised mail per commit, stable IDs, the order in `series`, dropped patches retired.
func Export(ctx context.Context, g *gitcli.Git, opts ExportOptions) (*ExportResult, error) {
	head := opts.Head
	if head == "" {
		head = "HEAD"
	}
	if strings.HasPrefix(opts.Base, "-") || strings.HasPrefix(head, "-") {
		return nil, fmt.Errorf("export: revision %q..%q starts with a dash", opts.Base, head)
	}
	var baseFound string
	if opts.BaseIsPin && !g.HasCommit(ctx, opts.Tree, opts.Base) {
		sd, err := readSeriesDir(ctx, opts.Dir)
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		base, how, err := seriesBase(ctx, g, opts.Tree, head, sd)
		if err != nil {
			return nil, fmt.Errorf("export: the pinned upstream commit %s is not in %s, and %w; pass --base REV (the commit the series starts on)", opts.Base, opts.Tree, err)
		}
		opts.Base, baseFound = base, how
	}
	rng := opts.Base + ".." + head
	// Two git processes run at once: rev-list (the commits, their parents for the merge
	// check, and with --boundary the base itself) and format-patch. Each costs mostly its
	// start-up, and export's time is what CI waits for on every push.
	var (
		wg              sync.WaitGroup
		all             [][]string
		mbox            []byte
		errList, errMbx error
	)
	wg.Add(2)
	go func() { defer wg.Done(); all, errList = g.RevListParents(ctx, opts.Tree, rng, true) }()
	go func() { defer wg.Done(); mbox, errMbx = g.FormatPatch(ctx, opts.Tree, rng) }()
	sd, errDir := readSeriesDir(ctx, opts.Dir)
	wg.Wait()
	if errDir != nil {
		return nil, fmt.Errorf("export: %w", errDir)
	}
	for _, err := range []error{errList, errMbx} {
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", rng, err)
		}
	}
	var list [][]string
	var base string
	for _, c := range all {
		if strings.HasPrefix(c[0], "-") {
			base = strings.TrimPrefix(c[0], "-")
			continue
		}
		list = append(list, c)
	}
	headSHA := base
	if n := len(list); n > 0 {
		headSHA = list[n-1][0]
	}
	if base == "" || len(list) > 0 && (len(list[0]) < 2 || list[0][1] != base) {
		// An empty range, or a base that is not the first commit's parent (a merge, or
		// not an ancestor at all): resolve both plainly.
		shas, err := g.RevParseCommits(ctx, opts.Tree, opts.Base, head)
		if err != nil {
			return nil, fmt.Errorf("export: base %s, head %s: %w", opts.Base, head, err)
		}
		base, headSHA = shas[0], shas[1]
	}
	pats, err := exportCommits(list, mbox, rng, sd)
	if err != nil {
		return nil, err
	}
	res := &ExportResult{Dir: opts.Dir, Base: base, Head: headSHA, BaseFound: baseFound}

	want := map[string][]byte{}
	var names []string
	kept := map[int]bool{}
	for _, p := range pats {
		want[p.name] = p.mail
		names = append(names, p.name)
		kept[p.id] = true
	}
	retired := map[int]bool{}
	for id := range sd.retired {
		if !kept[id] {
			retired[id] = true
		}
	}
	for _, n := range sd.names {
		if id, ok := patchID(n); ok && !kept[id] {
			retired[id] = true
		}
	}
	header := sd.header
	if !sd.exists {
		header = defaultHeader
	}
	order := orderFile(header, names, retired)

	for _, p := range pats {
		fc := FileChange{Name: p.name, ID: p.id, Subject: p.subject, Commit: p.commit, Action: Unchanged}
		old, ok := sd.files[p.name]
		switch {
		case !ok:
			fc.Action = Created
		case !bytes.Equal(old, p.mail):
			fc.Action = Updated
		}
		res.Files = append(res.Files, fc)
	}
	var gone []string
	for name := range sd.files {
		if _, ok := want[name]; ok {
			continue
		}
		// Only files the old series listed are export's to delete; a stray file is the
		// author's (series lint names it).
		for _, n := range sd.names {
			if n == name {
				gone = append(gone, name)
			}
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		id, _ := patchID(name)
		res.Files = append(res.Files, FileChange{Name: name, ID: id, Action: Deleted})
	}
	oldOrder, _ := os.ReadFile(filepath.Join(opts.Dir, series.OrderFile))
	orderAction := Unchanged
	switch {
	case !sd.exists:
		orderAction = Created
	case !bytes.Equal(oldOrder, order):
		orderAction = Updated
	}
	res.Files = append(res.Files, FileChange{Name: series.OrderFile, Action: orderAction})
	for id := range retired {
		res.Retired = append(res.Retired, id)
	}
	sort.Ints(res.Retired)
	for _, f := range res.Files {
		if f.Action != Unchanged {
			res.Changed = true
		}
	}
	if opts.Check || !res.Changed {
		return res, nil
	}

	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return res, fmt.Errorf("export: %w", err)
	}
	// Patch files first, then the order file, then deletions: a crash in between leaves
	// at worst an unlisted new file or a listed stale one, both named by lint.
	for _, f := range res.Files {
		if f.Name == series.OrderFile || (f.Action != Created && f.Action != Updated) {
			continue
		}
		if err := atomicfile.WriteBytes(filepath.Join(opts.Dir, f.Name), want[f.Name], atomicfile.Options{}); err != nil {
			return res, fmt.Errorf("export: %w", err)
		}
	}
	if orderAction != Unchanged {
		if err := atomicfile.WriteBytes(filepath.Join(opts.Dir, series.OrderFile), order, atomicfile.Options{}); err != nil {
			return res, fmt.Errorf("export: %w", err)
		}
	}
	for _, name := range gone {
		if err := os.Remove(filepath.Join(opts.Dir, name)); err != nil {
			return res, fmt.Errorf("export: delete %s: %w", name, err)
		}
	}
	return res, nil
}

// exportCommits gives every commit of the range (list: rev-list --parents; mbox: its
// format-patch) its ID and file name.
func exportCommits(list [][]string, mbox []byte, rng string, sd *seriesDir) ([]exportedPatch, error) {
	var commits []string
	for _, c := range list {
		if len(c) > 2 {
			return nil, fmt.Errorf("export %s: commit %s is a merge; a series is a straight line of commits (rebase it first)", rng, c[0])
		}
		commits = append(commits, c[0])
	}
	if len(commits) == 0 {
		return nil, nil
	}
	mails := splitMbox(mbox)
	if len(mails) != len(commits) {
		return nil, fmt.Errorf("export %s: git format-patch wrote %d mails for %d commits (a commit message holding a `From <sha>` line?)", rng, len(mails), len(commits))
	}
	next := sd.maxID()
	used := map[int]bool{}
	pats := make([]exportedPatch, len(mails))
	for i, m := range mails {
		parts, err := splitMail(m)
		if err != nil {
			return nil, fmt.Errorf("export: commit %s: %w", commits[i], err)
		}
		var id int
		parts.body, id = stripSeriesID(parts.body)
		next = max(next, id)
		mm, err := parseMailMessage(m)
		if err != nil {
			return nil, fmt.Errorf("export: commit %s: %w", commits[i], err)
		}
		pats[i] = exportedPatch{commit: commits[i], id: id, subject: mm.Subject, mail: parts.bytes()}
	}
	for i := range pats {
		if pats[i].id != 0 {
			used[pats[i].id] = true
		}
	}
	// A commit without a trailer that an earlier export already wrote (the author
	// committed it after apply --commit) keeps that entry: matched by its diff, moves
	// and blob IDs aside, else by its subject.
	claimed := map[int]bool{}
	for id := range used {
		claimed[id] = true
	}
	for i := range pats {
		if pats[i].id == 0 {
			pats[i].id = matchEntry(sd, pats[i], claimed)
		}
	}
	used = map[int]bool{}
	for i := range pats {
		p := &pats[i]
		if p.id == 0 || used[p.id] {
			// A new commit, or the second of two carrying one ID (a split commit): the
			// next ID nobody ever had.
			next++
			p.id = next
		}
		used[p.id] = true
		if name, ok := sd.byID[p.id]; ok {
			p.name = name
		} else {
			p.name = fmt.Sprintf("%04d-%s.patch", p.id, slugify(p.subject))
		}
	}
	return pats, nil
}

// matchEntry finds the listed entry, not yet claimed, whose patch is p's: the same diff
// (line numbers and blob IDs aside), else the same subject. It returns 0 for none.
func matchEntry(sd *seriesDir, p exportedPatch, claimed map[int]bool) int {
	want := strings.Join(normalisedDiff(p.mail), "\n")
	bySubject := 0
	for _, name := range sd.names {
		id, ok := patchID(name)
		data, have := sd.files[name]
		if !ok || !have || claimed[id] {
			continue
		}
		if strings.Join(normalisedDiff(data), "\n") == want {
			claimed[id] = true
			return id
		}
		if mm, err := parseMailMessage(data); err == nil && mm.Subject == p.subject && bySubject == 0 {
			bySubject = id
		}
	}
	if bySubject != 0 {
		claimed[bySubject] = true
	}
	return bySubject
}

// seriesBaseDepth bounds how far back seriesBase looks: a series is tens of commits.
const seriesBaseDepth = 5000

// seriesBase finds where the series on head starts when the pinned upstream commit is
// not in the clone: the first parent of the commit carrying the Series-Id of the
// series file's first entry, or, with no series file, of the oldest commit in the run of
// Series-Id commits nearest head (commits without one above the run are new patches).
func seriesBase(ctx context.Context, g *gitcli.Git, tree, head string, sd *seriesDir) (base, how string, err error) {
	msgs, err := g.FirstParentMessages(ctx, tree, head, seriesBaseDepth)
	if err != nil {
		return "", "", err
	}
	first := 0
	if len(sd.names) > 0 {
		first, _ = patchID(sd.names[0])
	}
	oldest := -1
	for i, m := range msgs {
		_, id := stripSeriesID([]byte(m.Message))
		if first != 0 {
			if id == first {
				oldest = i
				break
			}
			continue
		}
		if id != 0 {
			oldest = i
		} else if oldest >= 0 {
			break
		}
	}
	if oldest < 0 {
		if first != 0 {
			return "", "", fmt.Errorf("no commit in the last %d on %s carries Series-Id %04d (the series' first patch)", seriesBaseDepth, head, first)
		}
		return "", "", fmt.Errorf("no commit in the last %d on %s carries a Series-Id trailer", seriesBaseDepth, head)
	}
	c := msgs[oldest]
	if len(c.Parents) == 0 {
		return "", "", fmt.Errorf("commit %s, the series' first, has no parent", c.SHA)
	}
	_, id := stripSeriesID([]byte(c.Message))
	return c.Parents[0], fmt.Sprintf("parent of %s, the commit with Series-Id %04d", c.SHA[:12], id), nil
}
