package stack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
	"github.com/mpspatch/mpspatch/internal/confined"
	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/statekey"
)

// The rebase state is a file mpspatch reads back, so it is hostile input until shown
// otherwise: it lives in the git directory (stateDirName), is read only when it is a
// regular file of bounded size reached without a symbolic link, carries a MAC made with
// the user's state key (domain-separated from the journal and the run stamps), names the
// git directory it belongs to, and every field is checked before any of it is used.
const (
	stateFileName = "state.json"
	// stateVersion is what this mpspatch writes; it reads minStateVersion..stateVersion.
	// Version 1 was plain JSON without a MAC; it is refused.
	//
	// To add a field: give it `omitempty` (a state written before it decodes to the zero
	// value, which must mean "as before"), check it in validate, and bump stateVersion
	// only when an older mpspatch must not act on a state that holds it (an older one
	// refuses a newer version by name, and an unknown field in any case).
	stateVersion    = 2
	minStateVersion = 2
	// stateDomain separates the state's MACs from other uses of the state key. It names
	// the MAC scheme, not the state's version (which the MAC covers).
	stateDomain = "mpspatch rebase state v1"
	stateMagic  = "mpspatch-rebase-state hmac-sha256="
	// maxStateSize bounds the file read back. A state holds a few hundred bytes per
	// patch; maxStatePatches of them fit many times over.
	maxStateSize    = 16 << 20
	maxStatePatches = 10000
	maxStateString  = 4096
	maxStateDetail  = 1 << 20
)

// RebaseState is the saved progress of a rebase: what Continue, Skip and Abort and
// recovery after a crash work from. It is written atomically before every step.
type RebaseState struct {
	Version int `json:"version"`
	// GitDir is the absolute git directory the rebase runs in: a state copied into
	// another repository (or planted there) names another one and is refused.
	GitDir string `json:"git_dir"`
	// Tree is the work tree as the command that wrote the state named it; informational
	// (each command works on the tree it is given).
	Tree     string `json:"tree"`
	Branch   string `json:"branch"`
	OrigHead string `json:"orig_head"`
	Base     string `json:"base"`
	Onto     string `json:"onto"`
	OntoName string `json:"onto_name"`
	// Commits are the old series commits, oldest first; IDs and names match them.
	Commits []string `json:"commits"`
	IDs     []int    `json:"ids"`
	Names   []string `json:"names"`
	// Next is the index of the patch being applied; Head the commit it goes on top of.
	Next int    `json:"next"`
	Head string `json:"head"`
	// Phase: "applying" (mpspatch is working; a crash here is recovered by redoing the
	// step), "stopped" (the author's turn), "finishing" (moving the branch).
	Phase    string         `json:"phase"`
	Stopped  *Stop          `json:"stopped,omitempty"`
	Outcomes []PatchOutcome `json:"outcomes"`
	// Resume holds what the command that started the rebase was asked beyond the
	// rebase itself (RebaseOptions.Remember: re-export into which series directory,
	// update which config file), so that --continue and --skip, run without those
	// flags as docs/authoring.md shows, still do it. Keys are from rememberedKeys.
	Resume map[string]string `json:"resume,omitempty"`
}

// rememberedKeys are the options a rebase state may carry for the resuming command.
var rememberedKeys = map[string]bool{"patches": true, "update_config": true, "no_export": true}

// Phases of a rebase (RebaseState.Phase).
const (
	phaseApplying  = "applying"
	phaseStopped   = "stopped"
	phaseFinishing = "finishing"
)

// ErrBadState is wrapped by every refusal of a rebase state file (*StateError).
var ErrBadState = errors.New("rebase state refused")

// StateError refuses a rebase state file: it names the file, the field, and why.
type StateError struct {
	File   string
	Field  string // JSON name, with an index where it has one ("names[3]"); "" for the file as a whole
	Reason string
}

func (e *StateError) Error() string {
	what := e.File
	if e.Field != "" {
		what += ": " + e.Field
	}
	return fmt.Sprintf("rebase state %s: %s; mpspatch does not act on it (--continue, --skip and --abort refuse it too): "+
		"if no rebase of yours is in progress, remove %s, then `git checkout -f` your branch and `git status` to see where the tree is",
		what, e.Reason, filepath.Dir(e.File))
}

func (e *StateError) Is(target error) bool { return target == ErrBadState }

// stateDir returns the git directory of tree and the rebase's state directory in it.
func stateDir(ctx context.Context, g *gitcli.Git, tree string) (gitDir, dir string, err error) {
	gd, err := g.GitDir(ctx, tree)
	if err != nil {
		return "", "", err
	}
	return gd, filepath.Join(gd, stateDirName), nil
}

// InProgress reports the saved state of a rebase in tree, or nil when there is none.
func InProgress(ctx context.Context, g *gitcli.Git, tree string) (*RebaseState, error) {
	gitDir, dir, err := stateDir(ctx, g, tree)
	if err != nil {
		return nil, err
	}
	return loadState(gitDir, dir)
}

// loadState reads, authenticates and checks the state in dir; nil when there is none.
func loadState(gitDir, dir string) (*RebaseState, error) {
	file := filepath.Join(dir, stateFileName)
	if err := checkStateDir(dir, file); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	data, err := readStateFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	key, _, err := statekey.Load()
	switch {
	case errors.Is(err, statekey.ErrNoKey):
		return nil, &StateError{File: file, Field: "mac", Reason: "this user has no state key, so no state of theirs can exist here (a fresh HOME, another machine, or a state that came with the checkout)"}
	case err != nil:
		return nil, fmt.Errorf("rebase state %s: %w", file, err)
	}
	return decodeState(data, key, file, gitDir)
}

// checkStateDir refuses a state directory that is not a plain directory: a symbolic link
// would take the state, and everything written next to it, wherever it points.
func checkStateDir(dir, file string) error {
	fi, err := os.Lstat(dir)
	switch {
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return &StateError{File: file, Reason: dir + " is a symbolic link; mpspatch keeps its rebase state there and refuses to follow it"}
	case !fi.IsDir():
		return &StateError{File: file, Reason: dir + " is not a directory"}
	}
	return nil
}

// readStateFile reads the state: opened without following a symbolic link and without
// waiting for a FIFO's writer (openStateFlags), then refused unless fstat says it is a
// regular file of at most maxStateSize bytes, and read no further than that.
func readStateFile(file string) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|openStateFlags, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		if fi, lerr := os.Lstat(file); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &StateError{File: file, Reason: "is a symbolic link; refusing to follow it"}
		}
		return nil, fmt.Errorf("rebase state %s: %w", file, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("rebase state %s: %w", file, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &StateError{File: file, Reason: "is a symbolic link; refusing to follow it"}
	}
	if !fi.Mode().IsRegular() {
		return nil, &StateError{File: file, Reason: "is " + confined.NotRegular(fi.Mode()).Error()}
	}
	if fi.Size() > maxStateSize {
		return nil, &StateError{File: file, Reason: fmt.Sprintf("holds %d bytes, over the %d MiB a rebase state may hold; refusing to read it", fi.Size(), maxStateSize>>20)}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStateSize+1))
	if err != nil {
		return nil, fmt.Errorf("rebase state %s: %w", file, err)
	}
	if len(data) > maxStateSize {
		return nil, &StateError{File: file, Reason: fmt.Sprintf("grew past the %d MiB a rebase state may hold while it was read", maxStateSize>>20)}
	}
	return data, nil
}

// encodeState lays the state out as a MAC line, then the state as indented JSON. The
// MAC covers every byte after the MAC line.
func encodeState(st *RebaseState, key []byte) ([]byte, error) {
	body, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, err
	}
	body = append(body, '\n')
	mac := statekey.MAC(key, stateDomain, body)
	out := make([]byte, 0, len(stateMagic)+2*sha256.Size+1+len(body))
	out = append(append(append(out, stateMagic...), hex.EncodeToString(mac)...), '\n')
	return append(out, body...), nil
}

// decodeState authenticates data with key, decodes it strictly, and checks every field
// and that the state belongs to gitDir. file names the state in errors.
func decodeState(data, key []byte, file, gitDir string) (*RebaseState, error) {
	macLine, body, ok := bytes.Cut(data, []byte{'\n'})
	if !ok || !bytes.HasPrefix(macLine, []byte(stateMagic)) {
		return nil, &StateError{File: file, Field: "mac", Reason: "no MAC line; not a rebase state this mpspatch wrote (an mpspatch older than state version 2, or not mpspatch's)"}
	}
	mac, err := hex.DecodeString(string(macLine[len(stateMagic):]))
	if err != nil || len(key) == 0 || !statekey.Equal(mac, statekey.MAC(key, stateDomain, body)) {
		return nil, &StateError{File: file, Field: "mac", Reason: "the MAC does not verify with this user's state key: it was not written by this user's mpspatch, or was changed since"}
	}
	var st RebaseState
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, &StateError{File: file, Reason: "not a rebase state: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &StateError{File: file, Reason: "trailing data after the state"}
	}
	if err := st.validate(gitDir); err != nil {
		err.File = file
		return nil, err
	}
	return &st, nil
}

// validate checks every field against what a rebase writes, and that the state belongs to
// gitDir. Passing it, every index is in range, every object ID well formed, the branch a
// name git accepts as one (so never an option), and the outcomes consistent with Next
// and Head.
func (st *RebaseState) validate(gitDir string) *StateError {
	bad := func(field, format string, args ...any) *StateError {
		return &StateError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if st.Version < minStateVersion || st.Version > stateVersion {
		return bad("version", "%d, want %d (written by another mpspatch; finish or abort the rebase with that one)", st.Version, stateVersion)
	}
	if filepath.Clean(st.GitDir) != filepath.Clean(gitDir) || !filepath.IsAbs(st.GitDir) {
		return bad("git_dir", "the state was written for the repository at %q, not this one (%s); a copied state is never obeyed", st.GitDir, gitDir)
	}
	if len(st.Tree) > maxStateString {
		return bad("tree", "longer than %d bytes", maxStateString)
	}
	for k, v := range st.Resume {
		switch {
		case !rememberedKeys[k]:
			return bad("resume", "unknown option %q", k)
		case len(v) > maxStateString || strings.ContainsAny(v, "\x00\n\r"):
			return bad("resume."+k, "longer than %d bytes, or holds a NUL or line break", maxStateString)
		}
	}
	if len(st.Branch) > maxStateString {
		return bad("branch", "longer than %d bytes", maxStateString)
	}
	if err := gitcli.CheckBranchName(st.Branch); err != nil {
		return bad("branch", "%v", err)
	}
	idLen := len(st.OrigHead)
	for _, f := range []struct{ name, v string }{{"orig_head", st.OrigHead}, {"base", st.Base}, {"onto", st.Onto}, {"head", st.Head}} {
		if err := checkObjectID(f.v, idLen); err != "" {
			return bad(f.name, "%s", err)
		}
	}
	if st.OntoName == "" {
		return bad("onto_name", "empty")
	}
	if err := checkText(st.OntoName); err != "" {
		return bad("onto_name", "%s", err)
	}
	n := len(st.Commits)
	switch {
	case n > maxStatePatches:
		return bad("commits", "%d commits, more than the %d a rebase may hold", n, maxStatePatches)
	case len(st.IDs) != n:
		return bad("ids", "%d IDs for %d commits", len(st.IDs), n)
	case len(st.Names) != n:
		return bad("names", "%d names for %d commits", len(st.Names), n)
	}
	seen := make(map[string]bool, n)
	for i, c := range st.Commits {
		if err := checkObjectID(c, idLen); err != "" {
			return bad(fmt.Sprintf("commits[%d]", i), "%s", err)
		}
		if seen[c] {
			return bad(fmt.Sprintf("commits[%d]", i), "%s appears twice", c)
		}
		seen[c] = true
		if id := st.IDs[i]; id < 0 || id > 9999 {
			return bad(fmt.Sprintf("ids[%d]", i), "%d, want 0 (none) to 9999", id)
		}
		if err := checkPatchName(st.Names[i]); err != "" {
			return bad(fmt.Sprintf("names[%d]", i), "%s", err)
		}
	}
	if st.Next < 0 || st.Next > n {
		return bad("next", "%d, want 0 to %d (the number of commits)", st.Next, n)
	}
	switch st.Phase {
	case phaseApplying:
	case phaseStopped:
		if st.Next == n {
			return bad("phase", "stopped after the last patch")
		}
	case phaseFinishing:
		if st.Next != n {
			return bad("phase", "finishing at patch %d of %d", st.Next, n)
		}
	default:
		return bad("phase", "%q, want %s, %s or %s", st.Phase, phaseApplying, phaseStopped, phaseFinishing)
	}
	if (st.Phase == phaseStopped) != (st.Stopped != nil) {
		return bad("stopped", "present only when the phase is %q", phaseStopped)
	}
	if s := st.Stopped; s != nil {
		switch {
		case s.Index != st.Next:
			return bad("stopped.index", "%d, want next (%d)", s.Index, st.Next)
		case s.Patch != st.Names[st.Next]:
			return bad("stopped.patch", "%q, want %q (names[%d])", s.Patch, st.Names[st.Next], st.Next)
		case s.Reason != "conflict" && s.Reason != "intent":
			return bad("stopped.reason", "%q, want conflict or intent", s.Reason)
		case len(s.Files) > maxStatePatches || len(s.Intents) > maxStatePatches:
			return bad("stopped", "more than %d files or intents", maxStatePatches)
		}
		if len(s.Detail) > maxStateDetail {
			return bad("stopped.detail", "longer than %d bytes", maxStateDetail)
		}
		for k, f := range s.Files {
			if f == "" || len(f) > maxStateString {
				return bad(fmt.Sprintf("stopped.files[%d]", k), "empty or longer than %d bytes", maxStateString)
			}
		}
		for k, in := range s.Intents {
			if in == "" || len(in) > maxStateString {
				return bad(fmt.Sprintf("stopped.intents[%d]", k), "empty or longer than %d bytes", maxStateString)
			}
		}
	}
	if len(st.Outcomes) != st.Next {
		return bad("outcomes", "%d outcomes, want one per patch before next (%d)", len(st.Outcomes), st.Next)
	}
	head := st.Onto
	for k, o := range st.Outcomes {
		field := func(f string) string { return fmt.Sprintf("outcomes[%d].%s", k, f) }
		switch {
		case o.OldCommit != st.Commits[k]:
			return bad(field("old_commit"), "%q, want commits[%d] (%s)", o.OldCommit, k, st.Commits[k])
		case o.ID != st.IDs[k]:
			return bad(field("id"), "%d, want ids[%d] (%d)", o.ID, k, st.IDs[k])
		case o.Name != st.Names[k]:
			return bad(field("patch"), "%q, want names[%d]", o.Name, k)
		case o.Offset < -1<<30 || o.Offset > 1<<30:
			return bad(field("offset"), "%d is out of range", o.Offset)
		case o.Changed || o.RangeDiff != "":
			return bad(field("content_changed"), "set before the rebase finished")
		}
		if len(o.Subject) > maxStateString {
			return bad(field("subject"), "longer than %d bytes", maxStateString)
		}
		switch o.Outcome {
		case OutcomeClean, OutcomeOffset, OutcomeMerged, OutcomeResolved:
			if err := checkObjectID(o.NewCommit, idLen); err != "" {
				return bad(field("new_commit"), "%s", err)
			}
			head = o.NewCommit
		case OutcomeEmpty, OutcomeSkipped:
			if o.NewCommit != "" {
				return bad(field("new_commit"), "set for a patch that is %s", o.Outcome)
			}
		default:
			return bad(field("outcome"), "%q is not an outcome", o.Outcome)
		}
		if o.Upstream != "" {
			if err := checkObjectID(o.Upstream, idLen); err != "" {
				return bad(field("upstream"), "%s", err)
			}
		}
		if len(o.UpstreamSubject) > maxStateString {
			return bad(field("upstream_subject"), "longer than %d bytes", maxStateString)
		}
		if len(o.Renamed) > maxStatePatches {
			return bad(field("renamed"), "more than %d renames", maxStatePatches)
		}
		for _, rn := range o.Renamed {
			if rn == "" || len(rn) > 2*maxStateString {
				return bad(field("renamed"), "a rename that is empty or longer than %d bytes", 2*maxStateString)
			}
		}
	}
	if st.Head != head {
		return bad("head", "%s, want the last rebased commit (%s)", st.Head, head)
	}
	return nil
}

// checkObjectID accepts a full lowercase object ID (SHA-1 or SHA-256) of length want
// (0: either).
func checkObjectID(s string, want int) string {
	if len(s) != 40 && len(s) != 64 {
		return fmt.Sprintf("%q is not a full object ID (40 or 64 hex digits)", clipText(s))
	}
	if want != 0 && len(s) != want {
		return fmt.Sprintf("%q is not as long as orig_head's object ID", s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Sprintf("%q is not a full object ID (lowercase hex)", s)
		}
	}
	return ""
}

// checkPatchName accepts the names a rebase gives its patches: a file name without the
// .patch suffix, one path component of printable text.
func checkPatchName(s string) string {
	switch {
	case s == "" || s == "." || s == "..":
		return fmt.Sprintf("%q is not a patch name", s)
	case len(s) > 255:
		return "longer than 255 bytes"
	case strings.ContainsAny(s, "/\\"):
		return fmt.Sprintf("%q holds a path separator", s)
	}
	return checkText(s)
}

// checkText accepts bounded, valid UTF-8 without control characters: for the strings a
// rebase passes to git (in a reflog message) or makes itself. Text that only comes from
// mails and git's output (subjects, file names, details) is bounded, not judged: a state
// mpspatch wrote must always read back.
func checkText(s string) string {
	if len(s) > maxStateString {
		return "too long"
	}
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Sprintf("holds the control character %U", r)
		}
	}
	return ""
}

func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// save writes the state atomically, with its MAC, into the state directory (created as a
// plain directory when missing; a symbolic link there is refused).
func (r *rebaser) save() error {
	file := filepath.Join(r.dir, stateFileName)
	if err := checkStateDir(r.dir, file); errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(r.dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("save rebase state: %w", err)
		}
		if err := checkStateDir(r.dir, file); err != nil {
			return fmt.Errorf("save rebase state: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("save rebase state: %w", err)
	}
	r.st.Version, r.st.GitDir = stateVersion, r.gitDir
	// The reader's checks, applied before writing: a state that could not be read back
	// would leave a rebase nobody can continue or abort.
	if err := r.st.validate(r.gitDir); err != nil {
		err.File = file
		return fmt.Errorf("save rebase state: %w", err)
	}
	data, err := encodeState(r.st, r.key)
	if err != nil {
		return fmt.Errorf("save rebase state: %w", err)
	}
	if err := atomicfile.WriteBytes(file, data, atomicfile.Options{Mode: 0o600}); err != nil {
		return fmt.Errorf("save rebase state: %w", err)
	}
	return nil
}
