package series

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// PatchState is how much of one patch a tree holds.
type PatchState string

const (
	Applied    PatchState = "applied"
	NotApplied PatchState = "not applied"
	Partial    PatchState = "partial"  // some of its files are patched, others not
	Unknown    PatchState = "modified" // a file it touches matches neither side
	// Interrupted: an apply or unapply did not finish (or a foreign journal sits in the
	// tree); TreeStatus.Interrupted says which command resolves it.
	Interrupted PatchState = "interrupted"
)

// FileStatus is what Inspect found for one touched path.
type FileStatus struct {
	Path string `json:"path"`
	// Version counts how many of the patches touching this path the file holds:
	// 0 is the base, Steps is fully patched, -1 is unknown.
	Version int  `json:"version"`
	Steps   int  `json:"steps"`
	Exists  bool `json:"exists"`
	// Edited: the file carries edits of its own (its blob matches no version the patches
	// record, yet the patches still apply or reverse around the edits).
	Edited bool   `json:"edited,omitempty"`
	Blob   string `json:"blob,omitempty"`
}

// State names the file's state for people.
func (f FileStatus) State() string {
	s := ""
	switch {
	case f.Version < 0:
		return "modified (matches neither the base nor the patched file)"
	case f.Version == 0:
		s = "base"
	case f.Version == f.Steps:
		s = "patched"
	default:
		s = fmt.Sprintf("patched by %d of %d patches", f.Version, f.Steps)
	}
	if f.Edited {
		s += ", with local edits"
	}
	return s
}

// PatchStatus is one patch's state in a tree.
type PatchStatus struct {
	Name  string     `json:"patch"`
	State PatchState `json:"state"`
	Files []string   `json:"files"`
}

// TreeStatus is the whole picture Inspect returns.
type TreeStatus struct {
	Patches []PatchStatus `json:"patches"`
	Files   []FileStatus  `json:"files"`
	// Recovery, when non-empty, says what Recover did before inspecting (only a command
	// that writes recovers).
	Recovery string `json:"recovery,omitempty"`
	// Interrupted is an unfinished write phase that Inspect found and left alone: the
	// files above are as they are on disk, possibly half written.
	Interrupted *Interruption `json:"interrupted,omitempty"`
	// Applied is how many patches of the series, first to last, the tree holds when its
	// files agree on one such count (-1 when they do not).
	Applied int `json:"applied"`
}

// Summary is "applied", "not applied", "partial" or "modified" for the whole series.
func (t *TreeStatus) Summary() PatchState {
	if t.Interrupted.Blocking() {
		return Interrupted
	}
	applied, not := 0, 0
	for _, f := range t.Files {
		switch {
		case f.Version < 0:
			return Unknown
		case f.Version == f.Steps:
			applied++
		case f.Version == 0:
			not++
		default:
			return Partial
		}
	}
	switch {
	case not == len(t.Files):
		return NotApplied
	case applied == len(t.Files):
		return Applied
	}
	return Partial
}

// Edited lists the files with local edits or unknown content.
func (t *TreeStatus) Edited() []FileStatus {
	var out []FileStatus
	for _, f := range t.Files {
		if f.Edited || f.Version < 0 {
			out = append(out, f)
		}
	}
	return out
}

// step is one patch's change to one path.
type step struct {
	patch int // index in the series
	file  *gitdiff.File
	pre   string // blob ID prefix before; "absent" when the path does not exist
	post  string
}

const absent = "absent"

func oidOrAbsent(oid string, missing bool) string {
	if missing || (oid != "" && strings.Trim(oid, "0") == "") {
		return absent
	}
	return oid
}

// chains maps every path the series touches to its steps, in series order.
func chains(s *Series) (map[string][]step, []string) {
	out := map[string][]step{}
	var order []string
	add := func(p string, st step) {
		if _, ok := out[p]; !ok {
			order = append(order, p)
		}
		out[p] = append(out[p], st)
	}
	for i, p := range s.Patches {
		for _, f := range p.Files {
			switch {
			case f.IsNew:
				add(f.NewName, step{i, f, absent, oidOrAbsent(f.NewOIDPrefix, false)})
			case f.IsDelete:
				add(f.OldName, step{i, f, oidOrAbsent(f.OldOIDPrefix, false), absent})
			case f.IsRename || f.IsCopy:
				if f.IsRename {
					add(f.OldName, step{i, f, oidOrAbsent(f.OldOIDPrefix, false), absent})
				}
				add(f.NewName, step{i, f, absent, oidOrAbsent(f.NewOIDPrefix, false)})
			default:
				add(f.NewName, step{i, f, f.OldOIDPrefix, f.NewOIDPrefix})
			}
		}
	}
	return out, order
}

func oidMatches(have, want string) bool {
	if want == "" {
		return false
	}
	if want == absent || have == absent {
		return want == have
	}
	return strings.HasPrefix(have, want)
}

// InspectAndCompute is Inspect followed, unless the tree already holds the series or holds
// an interrupted write, by ComputeEach forward: under one shared lock, and reading each
// touched file once for both (`check --tree`). The plan is nil when it was not computed.
func InspectAndCompute(root *os.Root, s *Series, after AfterPatch) (*TreeStatus, *Plan, error) {
	if len(s.Patches) == 0 {
		return nil, nil, ErrEmptySeries
	}
	unlock, err := lockTree(root, false, LockWait)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	in, _, err := look(root)
	if err != nil {
		return nil, nil, err
	}
	tf := newTreeFiles(root)
	ts, err := inspect(tf, s, "")
	if err != nil {
		return nil, nil, err
	}
	ts.Interrupted = in
	if in.Blocking() || ts.Summary() == Applied {
		return ts, nil, nil
	}
	plan, err := computePatches(tf, s.Patches, Forward, after)
	return ts, plan, err
}

// Inspect classifies the tree at root against s: per path, which version of the file is
// there; per patch, applied / not applied / partial / modified. It writes nothing: an
// interrupted write phase is reported in TreeStatus.Interrupted (with the command that
// finishes or undoes it), never replayed, and a foreign journal is never trusted.
func Inspect(root *os.Root, s *Series) (*TreeStatus, error) {
	return InspectLocked(root, s, nil)
}

// InspectLocked is Inspect for a caller that holds the tree's writer lock (Hold), so that
// what it inspects cannot change before it acts on it; with held nil it is Inspect.
func InspectLocked(root *os.Root, s *Series, held *TreeLock) (*TreeStatus, error) {
	if len(s.Patches) == 0 {
		return nil, ErrEmptySeries
	}
	unlock, err := acquire(root, false, held)
	if err != nil {
		return nil, err
	}
	defer unlock()
	in, _, err := look(root)
	if err != nil {
		return nil, err
	}
	ts, err := inspect(newTreeFiles(root), s, "")
	if err != nil {
		return nil, err
	}
	ts.Interrupted = in
	return ts, nil
}

// ErrEmptySeries refuses a series that lists no patches: "applied" and "not applied"
// would both be true of every tree, so apply, unapply, status and check --tree say so
// instead of picking one.
var ErrEmptySeries = errors.New("the series lists no patches; there is nothing to apply, unapply or inspect")

func inspect(tf *treeFiles, s *Series, rec string) (*TreeStatus, error) {
	ts := &TreeStatus{Recovery: rec, Applied: -1}
	ch, order := chains(s)
	if err := tf.readAll(order); err != nil {
		return nil, err
	}
	sets := map[string][]int{}
	for _, p := range order {
		fst, set, err := inspectPath(tf, p, ch[p])
		if err != nil {
			return nil, err
		}
		sets[p] = set
		ts.Files = append(ts.Files, fst)
	}
	// The series in order: the tree holds its first k patches when every file is at the
	// version those k patches make. A file may match several versions (a later patch
	// reverts an earlier hunk, a file is created and deleted again): judging each file
	// alone would call such a file patched on a clean tree. Prefer the whole series, then
	// none of it, then the longest prefix.
	n := len(s.Patches)
	candidates := []int{n, 0}
	for k := n - 1; k > 0; k-- {
		candidates = append(candidates, k)
	}
	for _, k := range candidates {
		if consistent(order, ch, sets, k) {
			ts.Applied = k
			break
		}
	}
	version := map[string]int{}
	for i, p := range order {
		v := -1
		if ts.Applied >= 0 {
			v = versionAt(ch[p], ts.Applied)
		} else if set := sets[p]; len(set) > 0 {
			v = set[len(set)-1]
		}
		ts.Files[i].Version = v
		if v < 0 {
			ts.Files[i].Edited = false
		}
		version[p] = v
	}
	for i, p := range s.Patches {
		ps := PatchStatus{Name: p.Name}
		applied, not, unknown := 0, 0, 0
		seen := map[string]bool{}
		for _, path := range order {
			for k, st := range ch[path] {
				if st.patch != i {
					continue
				}
				if !seen[path] {
					seen[path] = true
					ps.Files = append(ps.Files, path)
				}
				switch v := version[path]; {
				case v < 0:
					unknown++
				case v > k:
					applied++
				default:
					not++
				}
			}
		}
		switch {
		case ts.Applied >= 0 && i < ts.Applied:
			ps.State = Applied
		case ts.Applied >= 0:
			ps.State = NotApplied
		case unknown > 0:
			ps.State = Unknown
		case applied > 0 && not > 0:
			ps.State = Partial
		case applied > 0:
			ps.State = Applied
		default:
			ps.State = NotApplied
		}
		ts.Patches = append(ts.Patches, ps)
	}
	return ts, nil
}

// versionAt is the version of a path after the first k patches of the series.
func versionAt(steps []step, k int) int {
	v := 0
	for _, st := range steps {
		if st.patch < k {
			v++
		}
	}
	return v
}

func consistent(order []string, ch map[string][]step, sets map[string][]int, k int) bool {
	for _, p := range order {
		want := versionAt(ch[p], k)
		ok := false
		for _, v := range sets[p] {
			if v == want {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// inspectPath finds every version of p the file on disk can be: by the blob IDs the
// patches record (exact), else by whether the chain of hunks applies or reverses around
// what is there (then the file carries edits of its own). The versions come sorted.
func inspectPath(tf *treeFiles, p string, steps []step) (FileStatus, []int, error) {
	fst := FileStatus{Path: p, Steps: len(steps), Version: -1}
	f, err := tf.read(p)
	if err != nil {
		return fst, nil, err
	}
	data, have, exec := f.data, absent, false
	if f.exists {
		fst.Exists = true
		have, exec = f.blob, f.mode&0o100 != 0
		fst.Blob = have
	}
	// A checkout with core.autocrlf holds CRLF where the patches recorded LF blobs: a file
	// that matches once its CRLFs are LFs is the same version, not an edited one.
	haveLF := have
	if f.exists && bytes.Contains(data, []byte("\r\n")) {
		haveLF = BlobID(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")))
	}
	vs := versions(steps)
	known := true
	for _, v := range vs {
		if v.oid == "" {
			known = false
		}
	}
	var set []int
	for k, v := range vs {
		if (oidMatches(have, v.oid) || oidMatches(haveLF, v.oid)) && (v.mode == 0 || have == absent || (v.mode&0o100 != 0) == exec) {
			set = append(set, k)
		}
	}
	if len(set) > 0 {
		return fst, set, nil
	}
	// Then by content: does the whole chain apply, or reverse, around what is there?
	modeOK := func(v version) bool { return v.mode == 0 || !fst.Exists || (v.mode&0o100 != 0) == exec }
	if fst.Exists && modeOK(vs[0]) && chainApplies(data, steps, false) {
		set = append(set, 0)
		fst.Edited = known
	}
	if modeOK(vs[len(vs)-1]) && chainApplies(data, steps, true) {
		set = append(set, len(steps))
		fst.Edited = fst.Edited || (known && fst.Exists)
	}
	return fst, set, nil
}

// version is what a path looks like after k of its steps: blob ID prefix and mode, each
// empty/zero where the patches do not say.
type version struct {
	oid  string
	mode fs.FileMode
}

// versions lists the n+1 versions of a path with n steps. A mode-only change records no
// blob IDs, but the content is the same on both sides, so IDs are carried across it.
func versions(steps []step) []version {
	vs := make([]version, len(steps)+1)
	vs[0] = version{oid: steps[0].pre, mode: steps[0].file.OldMode}
	for k, st := range steps {
		vs[k+1] = version{oid: st.post, mode: st.file.NewMode}
		if st.pre == absent {
			vs[k].mode = 0
		}
	}
	for pass := 0; pass < 2; pass++ {
		for k, st := range steps {
			if !contentUnchanged(st.file) {
				continue
			}
			if vs[k+1].oid == "" {
				vs[k+1].oid = vs[k].oid
			}
			if vs[k].oid == "" {
				vs[k].oid = vs[k+1].oid
			}
		}
	}
	return vs
}

func contentUnchanged(f *gitdiff.File) bool {
	return len(f.TextFragments) == 0 && f.BinaryFragment == nil && !f.IsNew && !f.IsDelete && !f.IsRename && !f.IsCopy
}

// chainApplies says whether the text hunks of steps apply to data in order (or, reversed,
// undo it), looking at this path alone.
func chainApplies(data []byte, steps []step, reverse bool) bool {
	cur := data
	for i := range steps {
		st := steps[i]
		if reverse {
			st = steps[len(steps)-1-i]
		}
		f := st.file
		if reverse {
			f = reverseFile(f)
		}
		if f.IsBinary {
			return false
		}
		if len(f.TextFragments) == 0 {
			continue
		}
		out, _, fail := applyFragments(cur, f.TextFragments)
		if fail != nil {
			return false
		}
		cur = out
	}
	return true
}
