package series

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// Direction says whether a plan applies the series or reverses it.
type Direction int

const (
	Forward Direction = iota // apply, first patch first
	Reverse                  // unapply, last patch first, each diff reversed
)

func (d Direction) verb() string {
	if d == Reverse {
		return "unapply"
	}
	return "apply"
}

// HunkResult says where one hunk landed.
type HunkResult struct {
	File   string `json:"file"`
	Hunk   int    `json:"hunk"` // 1-based
	Hunks  int    `json:"hunks"`
	Line   int    `json:"line"`
	Offset int    `json:"offset"`
}

// PatchResult is the outcome of one patch within a plan.
type PatchResult struct {
	Patch     *Patch       `json:"-"`
	Name      string       `json:"patch"`
	Hunks     []HunkResult `json:"hunks,omitempty"`
	Conflicts []*Conflict  `json:"conflicts,omitempty"`
	// AfterConflict is set when an earlier patch conflicted, so this result was computed
	// on a tree that lacks that patch's failed files and may be wrong for that reason.
	AfterConflict bool `json:"after_conflict,omitempty"`
}

// Outcome summarises the result: "exact", "offset" or "conflict".
func (r PatchResult) Outcome() string {
	if len(r.Conflicts) > 0 {
		return "conflict"
	}
	for _, h := range r.Hunks {
		if h.Offset != 0 {
			return "offset"
		}
	}
	return "exact"
}

// MaxOffset is the largest absolute hunk offset in the result.
func (r PatchResult) MaxOffset() int {
	m := 0
	for _, h := range r.Hunks {
		o := h.Offset
		if o < 0 {
			o = -o
		}
		if o > m {
			m = o
		}
	}
	return m
}

// Change is the net effect of a plan on one path.
type Change struct {
	Path      string
	OldExists bool
	OldData   []byte
	OldMode   fs.FileMode
	NewExists bool
	NewData   []byte
	NewMode   fs.FileMode

	oldBlob string // git blob ID of OldData when the tree read computed it
}

// Plan is the whole effect of applying or reversing a series, computed in memory.
type Plan struct {
	Direction Direction
	Results   []PatchResult
	Changes   []Change

	touched []string        // every path the plan read, in first-touch order
	exists  map[string]bool // whether each exists after the plan
}

// Conflicted says whether any patch failed.
func (p *Plan) Conflicted() bool {
	for _, r := range p.Results {
		if len(r.Conflicts) > 0 {
			return true
		}
	}
	return false
}

// ConflictError is returned when a plan has conflicts; nothing was written.
type ConflictError struct {
	Direction Direction
	Conflicts []*Conflict
}

func (e *ConflictError) Error() string {
	if len(e.Conflicts) == 0 {
		return "conflict"
	}
	msg := e.Conflicts[0].Error()
	if n := len(e.Conflicts) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg
}

// Conflict is one hunk or file that does not apply.
type Conflict struct {
	Verb   string `json:"-"`
	Patch  string `json:"patch"`
	File   string `json:"file"`
	Hunk   int    `json:"hunk,omitempty"` // 1-based; 0 for file-level problems
	Hunks  int    `json:"hunks,omitempty"`
	Header string `json:"header,omitempty"`
	Reason string `json:"reason"`

	Expected   []string `json:"expected,omitempty"`
	Found      []string `json:"found,omitempty"`
	FoundLine  int      `json:"found_line,omitempty"`
	Matched    int      `json:"matched,omitempty"`
	SearchFrom int      `json:"search_from,omitempty"`
	SearchTo   int      `json:"search_to,omitempty"`
	Anchor     string   `json:"anchor,omitempty"`
}

func (c *Conflict) Error() string {
	if c.Hunk == 0 {
		return fmt.Sprintf("%s %s: %s: %s", c.Verb, c.Patch, QuotePath(c.File), c.Reason)
	}
	return fmt.Sprintf("%s %s: %s hunk %d/%d: %s", c.Verb, c.Patch, QuotePath(c.File), c.Hunk, c.Hunks, c.Reason)
}

// Report renders the conflict for a person: which hunk, what it expected, what the file
// holds at the closest candidate position, and the offsets searched.
func (c *Conflict) Report() string {
	var b strings.Builder
	b.WriteString(c.Error())
	b.WriteString("\n")
	if c.Hunk == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "  hunk: %s\n", visible(strings.TrimSpace(c.Header)))
	switch {
	case c.Anchor != "":
		fmt.Fprintf(&b, "  searched: only the %s of the file (the hunk has no context on that side)\n", c.Anchor)
	case c.SearchFrom == 0 && c.SearchTo == 0:
		b.WriteString("  searched: nowhere (the file is shorter than the hunk)\n")
	default:
		fmt.Fprintf(&b, "  searched: offsets %+d..%+d (every position in the file)\n", c.SearchFrom, c.SearchTo)
	}
	if c.FoundLine > 0 {
		fmt.Fprintf(&b, "  closest: line %d, %d of %d lines match\n", c.FoundLine, c.Matched, len(c.Expected))
	}
	fmt.Fprintf(&b, "    --- expected (patch)\n    +++ found (line %d)\n", c.FoundLine)
	b.WriteString(diffWindow(c.Expected, c.Found))
	return b.String()
}

// image is a file's content as the plan goes along.
type image struct {
	exists bool
	data   []byte
	mode   fs.FileMode // permission bits

	origExists bool
	origData   []byte
	origMode   fs.FileMode
	origBlob   string // set when the tree read hashed the file (Inspect does)

	// owned: data was built by this computer for this image alone (not the file as read,
	// not shared with another image by a copy or rename), so once a later patch replaces
	// it, its storage can hold the content after the patch after that: spare. A series of
	// many patches to one file then costs two buffers, not one per patch, which keeps the
	// heap (and its page faults and collections) the size of the files touched.
	owned bool
	spare []byte
}

// Compute works out the effect of s on the tree at root without writing anything. On
// conflicts it returns the plan (with every patch's result) and a *ConflictError.
func Compute(root *os.Root, s *Series, dir Direction) (*Plan, error) {
	return ComputePatches(root, s.Patches, dir)
}

// ComputePatches is Compute for a list of patches (a prefix of a series, for example).
func ComputePatches(root *os.Root, patches []*Patch, dir Direction) (*Plan, error) {
	return computePatches(newTreeFiles(root), patches, dir, nil)
}

// AfterPatch is called by InspectAndCompute after each patch that applied cleanly, with a reader
// of the tree as the patches so far leave it (in memory; nothing is written). A file the
// patches deleted reads as fs.ErrNotExist. The bytes read are the engine's own buffers,
// valid until the callback returns: a later patch may write over them.
type AfterPatch func(p *Patch, read func(path string) ([]byte, error))

func computePatches(tf *treeFiles, patches []*Patch, dir Direction, after AfterPatch) (*Plan, error) {
	c := &computer{tree: tf, images: map[string]*image{}, dir: dir}
	plan := &Plan{Direction: dir}
	order := make([]*Patch, len(patches))
	copy(order, patches)
	if dir == Reverse {
		for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
			order[i], order[j] = order[j], order[i]
		}
	}
	var all []*Conflict
	for _, p := range order {
		r := c.applyPatch(p)
		r.AfterConflict = len(all) > 0
		if !r.AfterConflict {
			// Later conflicts may only echo this one; their results still say so.
			all = append(all, r.Conflicts...)
		}
		plan.Results = append(plan.Results, r)
		if after != nil && len(all) == 0 && c.fatal == nil {
			after(p, c.readCurrent)
		}
	}
	if c.fatal != nil {
		return nil, c.fatal
	}
	plan.touched, plan.exists = c.order, map[string]bool{}
	for _, path := range c.order {
		im := c.images[path]
		plan.exists[path] = im.exists
		if im.exists == im.origExists && (!im.exists || im.mode&0o100 == im.origMode&0o100) && bytes.Equal(im.data, im.origData) {
			continue
		}
		plan.Changes = append(plan.Changes, Change{
			Path: path, OldExists: im.origExists, OldData: im.origData, OldMode: im.origMode,
			NewExists: im.exists, NewData: im.data, NewMode: im.mode, oldBlob: im.origBlob,
		})
	}
	if len(all) == 0 {
		all = collisions(plan)
	}
	if len(all) > 0 {
		return plan, &ConflictError{Direction: dir, Conflicts: all}
	}
	return plan, nil
}

// collisions finds what would make the write phase fail halfway, so that it is refused
// before anything is written: a path that must be a file and a directory at once (`x`
// and `x/y`), two paths that name one file on a case-insensitive filesystem (APFS and
// HFS+ as macOS formats them), and names longer than filesystems allow. A path whose
// directory is a file in the tree, or that is a directory in the tree, is refused when
// the tree is read (UnsafePathError); paths in mpspatch's own state directory, where its
// temporary files live, are refused by CheckPath.
func collisions(plan *Plan) []*Conflict {
	var out []*Conflict
	add := func(path, format string, args ...any) {
		out = append(out, &Conflict{Verb: plan.Direction.verb(), Patch: patchTouching(plan, path), File: path, Reason: fmt.Sprintf(format, args...)})
	}
	files := map[string]bool{}    // paths that exist after the write phase
	folded := map[string]string{} // lowercase path -> path
	created := map[string]bool{}
	for _, ch := range plan.Changes {
		if err := checkNameLengths(ch.Path); err != nil {
			add(ch.Path, "%v", err)
		}
		created[ch.Path] = ch.NewExists && !ch.OldExists
	}
	// Unchanged files the plan read stay too; Changes lists only what differs.
	for _, p := range plan.touched {
		if plan.exists[p] {
			files[p] = true
		}
	}
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if files[d] {
				add(p, "the series needs %s to be a file and a directory at once", QuotePath(d))
			}
		}
		k := strings.ToLower(p)
		// Only a file the series creates can collide: a tree may hold both spellings already.
		if other, ok := folded[k]; ok && (created[p] || created[other]) {
			add(p, "%s and %s name the same file on a case-insensitive filesystem (macOS)", QuotePath(other), QuotePath(p))
		}
		folded[k] = p
	}
	return out
}

// patchTouching names the last patch that touches path, for a collision's report.
func patchTouching(plan *Plan, p string) string {
	name := ""
	for _, r := range plan.Results {
		for _, f := range r.Patch.Files {
			if f.OldName == p || f.NewName == p {
				name = r.Name
			}
		}
	}
	return name
}

type computer struct {
	tree   *treeFiles
	dir    Direction
	images map[string]*image
	order  []string // paths in first-touch order, for deterministic writes
	fatal  error    // an I/O or safety error: not a conflict, stops everything
	frags  fragScratch
}

// load returns the image of path, reading it from the tree on first use.
// readCurrent reads a file as the patches applied so far leave it. A file no patch
// touched is read from the tree without becoming part of the plan.
func (c *computer) readCurrent(p string) ([]byte, error) {
	exists, data := false, []byte(nil)
	if im, ok := c.images[p]; ok {
		exists, data = im.exists, im.data
	} else {
		f, err := c.tree.read(p)
		if err != nil {
			return nil, err
		}
		exists, data = f.exists, f.data
	}
	if !exists {
		return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}
	return data, nil
}

func (c *computer) load(path string) (*image, error) {
	if im, ok := c.images[path]; ok {
		return im, nil
	}
	f, err := c.tree.read(path)
	if err != nil {
		return nil, err
	}
	im := &image{exists: f.exists, data: f.data, mode: f.mode}
	im.origExists, im.origData, im.origMode, im.origBlob = im.exists, im.data, im.mode, f.blob
	c.images[path] = im
	c.order = append(c.order, path)
	return im, nil
}

func (c *computer) applyPatch(p *Patch) PatchResult {
	r := PatchResult{Patch: p, Name: p.Name}
	files := p.Files
	if c.dir == Reverse {
		files = make([]*gitdiff.File, len(p.Files))
		for i, f := range p.Files {
			files[len(p.Files)-1-i] = reverseFile(f)
		}
	}
	for _, f := range files {
		hunks, conflict := c.applyFile(p, f)
		r.Hunks = append(r.Hunks, hunks...)
		if conflict != nil {
			r.Conflicts = append(r.Conflicts, conflict)
		}
		if c.fatal != nil {
			return r
		}
	}
	return r
}

func (c *computer) conflict(p *Patch, path, format string, args ...any) *Conflict {
	return &Conflict{Verb: c.dir.verb(), Patch: p.Name, File: path, Reason: fmt.Sprintf(format, args...)}
}

// applyFile applies one file diff to the images. A conflict leaves the images untouched.
func (c *computer) applyFile(p *Patch, f *gitdiff.File) ([]HunkResult, *Conflict) {
	srcPath, dstPath := f.OldName, f.NewName
	if f.IsNew {
		srcPath = ""
	}
	if f.IsDelete {
		dstPath = ""
	}
	var src, dst *image
	var err error
	if srcPath != "" {
		if src, err = c.load(srcPath); err != nil {
			c.fatal = fmt.Errorf("%s %s: %w", c.dir.verb(), p.Name, err)
			return nil, nil
		}
		if !src.exists {
			return nil, c.conflict(p, srcPath, "file does not exist")
		}
	}
	if dstPath != "" {
		if dst, err = c.load(dstPath); err != nil {
			c.fatal = fmt.Errorf("%s %s: %w", c.dir.verb(), p.Name, err)
			return nil, nil
		}
		if dst.exists && dst != src {
			return nil, c.conflict(p, dstPath, "file already exists")
		}
	}
	name := dstPath
	if name == "" {
		name = srcPath
	}
	var in []byte
	if src != nil {
		in = src.data
	}

	var out []byte
	var hunks []HunkResult
	built := false // out is a new buffer of this computer's, shared with nothing
	switch {
	case f.IsBinary:
		var buf bytes.Buffer
		if err := gitdiff.Apply(&buf, bytes.NewReader(in), f); err != nil {
			return nil, c.conflict(p, name, "binary patch does not apply: %v", err)
		}
		out = buf.Bytes()
	case len(f.TextFragments) > 0:
		var buf []byte
		if src != nil && src == dst {
			// Taken, not shared: from here on the spare may hold the new content, and
			// only the old content may become the spare again (below).
			buf, src.spare = src.spare, nil
		}
		res, places, fail := c.frags.apply(in, f.TextFragments, buf)
		if fail != nil {
			if src != nil && src == dst {
				src.spare = buf // nothing was kept of it
			}
			frag := f.TextFragments[fail.index]
			reason := "context mismatch"
			if fail.foundLine > 0 {
				reason = fmt.Sprintf("context mismatch at line %d", fail.foundLine)
			}
			cf := c.conflict(p, name, "%s", reason)
			cf.Hunk, cf.Hunks, cf.Header = fail.index+1, len(f.TextFragments), frag.Header()
			cf.Expected, cf.Found, cf.FoundLine, cf.Matched = fail.expected, fail.found, fail.foundLine, fail.matched
			cf.SearchFrom, cf.SearchTo, cf.Anchor = fail.searchFrom, fail.searchTo, fail.anchored
			return nil, cf
		}
		out, built = res, true
		for i, pl := range places {
			hunks = append(hunks, HunkResult{File: name, Hunk: i + 1, Hunks: len(f.TextFragments), Line: pl.Line, Offset: pl.Offset})
		}
	default:
		out = in // mode change or rename only
	}

	if f.IsDelete {
		if len(out) != 0 {
			return nil, c.conflict(p, srcPath, "the file holds more than the patch deletes")
		}
		src.exists, src.data, src.owned = false, nil, false
		return hunks, nil
	}
	mode := fs.FileMode(0o644)
	if src != nil {
		mode = gitMode(src.mode)
	}
	if f.NewMode != 0 {
		mode = gitMode(f.NewMode)
	}
	owned := built
	switch {
	case src == nil:
	case src == dst:
		switch {
		case !built:
			owned = src.owned // out is in (a mode change): the same buffer, owned as before
		case src.owned:
			src.spare = in // replaced below; nothing else refers to it
		}
	case f.IsCopy:
		src.owned = false // out may be in: two images would share it
	default:
		// A rename: the old path goes away, and its buffer goes with the content.
		owned = built || src.owned
		src.exists, src.data, src.owned = false, nil, false
	}
	dst.exists, dst.data, dst.mode, dst.owned = true, out, mode, owned
	return hunks, nil
}

// gitMode is the mode git gives a regular file: 0755 when any execute bit is set, else
// 0644. A patch's `new file mode 100777`, `100666`, setuid bits or `100000` never reach
// the disk verbatim; the umask applies on top when the file is created.
func gitMode(m fs.FileMode) fs.FileMode {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// reverseFile returns the diff that undoes f.
func reverseFile(f *gitdiff.File) *gitdiff.File {
	r := *f
	r.OldName, r.NewName = f.NewName, f.OldName
	r.OldMode, r.NewMode = f.NewMode, f.OldMode
	r.OldOIDPrefix, r.NewOIDPrefix = f.NewOIDPrefix, f.OldOIDPrefix
	r.IsNew, r.IsDelete = f.IsDelete, f.IsNew
	if f.IsCopy {
		// Undoing a copy deletes the copy.
		r.IsCopy, r.IsDelete, r.OldName, r.NewName = false, true, f.NewName, ""
	}
	r.BinaryFragment, r.ReverseBinaryFragment = f.ReverseBinaryFragment, f.BinaryFragment
	r.TextFragments = make([]*gitdiff.TextFragment, len(f.TextFragments))
	for i, fr := range f.TextFragments {
		n := *fr
		n.OldPosition, n.NewPosition = fr.NewPosition, fr.OldPosition
		n.OldLines, n.NewLines = fr.NewLines, fr.OldLines
		n.LinesAdded, n.LinesDeleted = fr.LinesDeleted, fr.LinesAdded
		n.Lines = make([]gitdiff.Line, len(fr.Lines))
		for j, l := range fr.Lines {
			switch l.Op {
			case gitdiff.OpAdd:
				l.Op = gitdiff.OpDelete
			case gitdiff.OpDelete:
				l.Op = gitdiff.OpAdd
			}
			n.Lines[j] = l
		}
		r.TextFragments[i] = &n
	}
	return &r
}
