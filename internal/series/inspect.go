package series

import (
	"bytes"
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
	// Recovery, when non-empty, says what Recover did before inspecting.
	Recovery string `json:"recovery,omitempty"`
}

// Summary is "applied", "not applied", "partial" or "modified" for the whole series.
func (t *TreeStatus) Summary() PatchState {
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

// Inspect classifies the tree at root against s: per path, which version of the file is
// there; per patch, applied / not applied / partial / modified. It recovers an interrupted
// write first, so it never reports a half-written tree.
func Inspect(root *os.Root, s *Series) (*TreeStatus, error) {
	rec, err := Recover(root)
	if err != nil {
		return nil, err
	}
	return inspect(newTreeFiles(root), s, rec)
}

func inspect(tf *treeFiles, s *Series, rec string) (*TreeStatus, error) {
	ts := &TreeStatus{Recovery: rec}
	ch, order := chains(s)
	if err := tf.readAll(order); err != nil {
		return nil, err
	}
	version := map[string]int{}
	for _, p := range order {
		fst, err := inspectPath(tf, p, ch[p])
		if err != nil {
			return nil, err
		}
		version[p] = fst.Version
		ts.Files = append(ts.Files, fst)
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

func inspectPath(tf *treeFiles, p string, steps []step) (FileStatus, error) {
	fst := FileStatus{Path: p, Steps: len(steps), Version: -1}
	f, err := tf.read(p)
	if err != nil {
		return fst, err
	}
	data, have, exec := f.data, absent, false
	if f.exists {
		fst.Exists = true
		have, exec = f.blob, f.mode&0o100 != 0
		fst.Blob = have
	}
	// First the blob IDs (and modes) the patches record: exact and cheap. The highest
	// version that matches wins, so a tree that holds the series reads as applied.
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
	for k := len(vs) - 1; k >= 0; k-- {
		v := vs[k]
		if (oidMatches(have, v.oid) || oidMatches(haveLF, v.oid)) && (v.mode == 0 || have == absent || (v.mode&0o100 != 0) == exec) {
			fst.Version = k
			return fst, nil
		}
	}
	// Then by content: does the whole chain apply, or reverse, around what is there?
	modeOK := func(v version) bool { return v.mode == 0 || !fst.Exists || (v.mode&0o100 != 0) == exec }
	if fst.Exists && modeOK(vs[0]) && chainApplies(data, steps, false) {
		fst.Version, fst.Edited = 0, known
		return fst, nil
	}
	if modeOK(vs[len(vs)-1]) && chainApplies(data, steps, true) {
		fst.Version, fst.Edited = len(steps), known && fst.Exists
		return fst, nil
	}
	return fst, nil
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
