package series

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mpspatch/mpspatch/internal/statekey"
)

// StateDir is the directory, at the tree root, where mpspatch keeps its journal. Patches
// may not touch it (CheckPath), and the engine refuses it when it is not a plain directory.
const StateDir = ".mpspatch"

const (
	journalTmp  = StateDir + "/journal.tmp"  // being written; never trusted, never read
	journalFile = StateDir + "/journal.json" // its appearance is the commit point
	// journalDomain separates the journal's MACs from other uses of the state key.
	journalDomain = "mpspatch journal v4"
	// oldLinkPrefix names the hard links to the old files (old.0, old.1, ... by entry).
	oldLinkPrefix = "old."
)

// maxJournalSize bounds the journal mpspatch reads back: a planted journal must not make
// it read without bound. Real journals hold the new content of the files the series
// touches (and the old content of those it could not hard-link), a few MiB for the MPS
// series. The same bound applies to a linked old file read back for a rollback.
const maxJournalSize = 256 << 20

// journalVersion 3 added the old content of every entry (so recovery can roll back as
// well as forward) and the MAC line. Version 4 keeps an old file as a hard link in
// StateDir, named by its entry and authenticated by the blob ID the journal records,
// instead of copying its bytes into the journal.
const journalVersion = 4

const journalMagic = "mpspatch-journal 4 hmac-sha256="

// journal is an undo/redo log: everything needed to finish the write phase from any
// point, or to undo it.
type journal struct {
	Version int            `json:"version"`
	Op      string         `json:"op"`
	Series  string         `json:"series,omitempty"`
	Entries []journalEntry `json:"entries"`
}

type journalEntry struct {
	Path string    `json:"path"`
	Old  fileState `json:"old"`
	New  fileState `json:"new"`
}

// fileState is a path's content and mode on one side of the write phase.
type fileState struct {
	Exists bool        `json:"exists,omitempty"`
	Mode   fs.FileMode `json:"mode,omitempty"`
	Size   int         `json:"size,omitempty"` // bytes of content after the header
	// Linked (old side only): the content is not in the journal but in the hard link
	// StateDir/old.<entry index> to the file as it was, and Blob is its git blob ID. The
	// engine replaces a target by remove+create, never in place, so the linked inode
	// keeps the old bytes; a rollback reads them back only if their blob ID matches.
	Linked  bool   `json:"linked,omitempty"`
	Blob    string `json:"blob,omitempty"`
	Content []byte `json:"-"`
}

// linkName is where entry i's old content is hard-linked. It is derived from the entry's
// index, never read from the journal, so no journal can name another file.
func linkName(i int) string { return StateDir + "/" + oldLinkPrefix + strconv.Itoa(i) }

// journalParts lays the journal out as the pieces it is written in: a MAC line and the
// header as one JSON line, then the raw contents (each entry's old unless linked, then
// new), in entry order. No base64, and the contents are written from the plan's own
// buffers, never joined in memory, so the journal costs what the new files cost.
func journalParts(j journal, key []byte) ([][]byte, error) {
	parts := [][]byte{nil}
	for i := range j.Entries {
		e := &j.Entries[i]
		e.Old.Size, e.New.Size = 0, len(e.New.Content)
		if !e.Old.Linked {
			e.Old.Size = len(e.Old.Content)
			parts = append(parts, e.Old.Content)
		}
		parts = append(parts, e.New.Content)
	}
	head, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	head = append(head, '\n')
	m := statekey.NewMAC(key, journalDomain)
	m.Write(head)
	for _, p := range parts[1:] {
		m.Write(p)
	}
	first := make([]byte, 0, len(journalMagic)+2*sha256.Size+1+len(head))
	first = append(append(first, journalMagic...), hex.EncodeToString(m.Sum(nil))...)
	parts[0] = append(append(first, '\n'), head...)
	return parts, nil
}

// encodeJournal is the journal as one byte slice (tests and tools; Commit writes the parts).
func encodeJournal(j journal, key []byte) ([]byte, error) {
	parts, err := journalParts(j, key)
	if err != nil {
		return nil, err
	}
	return bytes.Join(parts, nil), nil
}

// journalOps are the operations whose journals mpspatch writes. "apply" and "unapply"
// write the whole series; the others write one patch of a command that records a commit
// per patch, and recovery always rolls those back: the patch's commit was never
// made (the journal is gone before the commit is written), and the command redoes the
// step or undoes the whole run.
var journalOps = []string{"apply", "unapply", OpRebase, OpApplyCommit}

// The step operations: the journal op of `rebase` and of `apply --commit`.
const (
	OpRebase      = "rebase"
	OpApplyCommit = "apply --commit"
)

// errForeign marks a journal that this user's mpspatch did not write.
var errForeign = errors.New("foreign journal")

// decodeJournal authenticates data with key and checks every entry as a patch's paths
// are checked. A journal that fails either is never replayed.
func decodeJournal(data, key []byte) (journal, error) {
	var j journal
	macLine, body, ok := bytes.Cut(data, []byte{'\n'})
	if !ok || !bytes.HasPrefix(macLine, []byte(journalMagic)) {
		return j, fmt.Errorf("%w: not an mpspatch journal of version %d", errForeign, journalVersion)
	}
	mac, err := hex.DecodeString(string(macLine[len(journalMagic):]))
	if err != nil || key == nil || !statekey.Equal(mac, statekey.MAC(key, journalDomain, body)) {
		return j, fmt.Errorf("%w: its MAC does not verify with this user's state key", errForeign)
	}
	head, rest, ok := bytes.Cut(body, []byte{'\n'})
	if !ok {
		return j, errors.New("no header line")
	}
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return j, err
	}
	if j.Version != journalVersion {
		return j, fmt.Errorf("version %d, want %d", j.Version, journalVersion)
	}
	if !slices.Contains(journalOps, j.Op) {
		return j, fmt.Errorf("op %q, want one of %s", j.Op, strings.Join(journalOps, ", "))
	}
	seen := map[string]bool{}
	for i := range j.Entries {
		e := &j.Entries[i]
		if err := checkEntry(*e); err != nil {
			return j, fmt.Errorf("entry %d: %w", i+1, err)
		}
		if seen[e.Path] {
			return j, fmt.Errorf("entry %d: %s appears twice", i+1, QuotePath(e.Path))
		}
		seen[e.Path] = true
		for _, s := range []*fileState{&e.Old, &e.New} {
			if s.Linked {
				continue // checkEntry: no content follows
			}
			if s.Size < 0 || s.Size > len(rest) {
				return j, fmt.Errorf("entry %s: truncated", QuotePath(e.Path))
			}
			s.Content, rest = rest[:s.Size], rest[s.Size:]
		}
	}
	if len(rest) != 0 {
		return j, errors.New("trailing bytes")
	}
	return j, nil
}

// checkEntry holds a journal entry to the rules a patch obeys: a safe path, and modes
// that mpspatch writes (0644 or 0755 for new content; the permission bits a file had
// for old content, never setuid, setgid or sticky).
func checkEntry(e journalEntry) error {
	if err := CheckPath(e.Path); err != nil {
		return err
	}
	if err := checkNameLengths(e.Path); err != nil {
		return fmt.Errorf("%s: %w", QuotePath(e.Path), err)
	}
	if e.New.Exists && e.New.Mode != 0o644 && e.New.Mode != 0o755 {
		return fmt.Errorf("%s: new mode %o, want 644 or 755", QuotePath(e.Path), e.New.Mode)
	}
	if e.Old.Mode&^0o777 != 0 {
		return fmt.Errorf("%s: old mode %o has bits other than permissions", QuotePath(e.Path), e.Old.Mode)
	}
	for _, s := range []fileState{e.Old, e.New} {
		if !s.Exists && s.Size != 0 {
			return fmt.Errorf("%s: content for a file that does not exist", QuotePath(e.Path))
		}
	}
	switch {
	case e.New.Linked || e.New.Blob != "":
		return fmt.Errorf("%s: new content must be in the journal", QuotePath(e.Path))
	case e.Old.Linked && (!e.Old.Exists || e.Old.Size != 0 || !isBlobID(e.Old.Blob)):
		return fmt.Errorf("%s: a linked old file needs its blob ID and no content", QuotePath(e.Path))
	case !e.Old.Linked && e.Old.Blob != "":
		return fmt.Errorf("%s: blob ID without a linked old file", QuotePath(e.Path))
	}
	return nil
}

func isBlobID(s string) bool {
	if len(s) != 2*sha1.Size {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// crashHook, when set (only by tests), is called at every step of the write phase so a
// test can kill the process there and check what recovery makes of the tree.
var crashHook func(step string)

func crashpoint(step string) {
	if crashHook != nil {
		crashHook(step)
	}
}

// linkFault, when set (only by tests), makes the hard link of a path's old file fail, as
// on a filesystem without hard links, so a test can see its bytes kept in the journal.
var linkFault func(path string) error

// writeFault, when set (only by tests), makes the write of a path fail, so a test can see
// the journal roll back when the forward path cannot complete.
var writeFault func(path string) error

// BlobID is git's object ID for a blob with this content (`git hash-object`).
func BlobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// CommitOptions tune the write phase.
type CommitOptions struct {
	// Fsync makes the journal and the written files durable against power loss and OS
	// crashes. A killed process needs none of it: the page cache outlives the process,
	// and the journal alone decides the outcome.
	Fsync bool
	// Crashpoint, when set, is told each step of the write phase as it is reached, so a
	// test of a command built on Commit can kill the process inside the write phase.
	Crashpoint func(step string)
}

// stepHook is where a write phase reports its steps: the package's test hook and the
// caller's Crashpoint.
type stepHook func(step string)

func (h stepHook) at(step string) {
	crashpoint(step)
	if h != nil {
		h(step)
	}
}

// Commit writes plan's changes to the tree at root, all or nothing. The caller holds the
// tree's lock and has recovered any interrupted write.
//
// Protocol (an undo/redo log): (0) every old file is hard-linked into StateDir (linkOld);
// (1) the journal, holding every new content and the blob IDs of the linked old files, is
// written to journal.tmp; (2) it is renamed to journal.json — the commit point; (3) each
// target is rewritten (removed, then created with its mode) or deleted, deletions first;
// (4) the journal is removed, then the links. A crash before (2) leaves the tree
// untouched and a stray journal.tmp and links that the next write deletes; a crash after
// it leaves journal.json, from which recovery rewrites every target again (idempotent), so
// the tree is always wholly before or wholly after. When a write fails (a full disk, a file
// made read-only meanwhile), the entries already written are restored from the old
// contents, in reverse order, and the tree is as before.
//
// Targets are replaced by remove+create rather than rename-over, as git apply does:
// ext4 flushes a file's data when another file is renamed over it, which would cost a
// disk write per file.
func Commit(root *os.Root, plan *Plan, op, seriesHash string, opts CommitOptions) error {
	if len(plan.Changes) == 0 {
		return nil
	}
	if err := checkStateDir(root); err != nil {
		return err
	}
	if Pending(root) {
		return fmt.Errorf("an interrupted write awaits recovery (%s); run `mpspatch status`", journalFile)
	}
	key, err := statekey.Ensure()
	if err != nil {
		return fmt.Errorf("%w (nothing was changed)", err)
	}
	j := journal{Version: journalVersion, Op: op, Series: seriesHash, Entries: journalEntries(plan.Changes)}
	if err := root.Mkdir(StateDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", StateDir, err)
	}
	undo := func() {
		_ = root.Remove(journalTmp)
		removeLinks(root, j.Entries)
		_ = root.Remove(StateDir)
	}
	hook := stepHook(opts.Crashpoint)
	linkOld(root, j.Entries, opts.Fsync)
	hook.at("linked old files")
	parts, err := journalParts(j, key)
	if err != nil {
		undo()
		return err
	}
	if err := createFile(root, journalTmp, parts, 0o600, opts.Fsync); err != nil {
		undo()
		return fmt.Errorf("write journal: %w (nothing was changed)", err)
	}
	hook.at("journal written")
	if err := root.Rename(journalTmp, journalFile); err != nil {
		undo()
		return fmt.Errorf("commit journal: %w (nothing was changed)", err)
	}
	if opts.Fsync {
		syncDir(root, StateDir)
	}
	hook.at("committed")
	return replay(root, j, true, false, opts.Fsync, hook)
}

// journalEntries orders the plan's changes for writing: deletions first, deepest first,
// so that a directory emptied by a deletion is gone before a file of its name is
// created, then everything else in plan order.
func journalEntries(changes []Change) []journalEntry {
	var dels, rest []journalEntry
	for _, ch := range changes {
		e := journalEntry{Path: ch.Path}
		if ch.OldExists {
			e.Old = fileState{Exists: true, Mode: ch.OldMode.Perm(), Content: ch.OldData, Blob: ch.oldBlob}
		}
		if ch.NewExists {
			e.New = fileState{Exists: true, Mode: ch.NewMode, Content: ch.NewData}
			rest = append(rest, e)
		} else {
			dels = append(dels, e)
		}
	}
	sort.SliceStable(dels, func(a, b int) bool {
		return strings.Count(dels[a].Path, "/") > strings.Count(dels[b].Path, "/")
	})
	return append(dels, rest...)
}

// linkOld hard-links each old file the journal would otherwise copy into StateDir, before
// the commit point, and marks its entry linked. A file that cannot be linked (a
// filesystem without hard links, a target on another mount inside the tree) keeps its
// content in the journal, as before version 4. The link shares the target's inode, which
// the write phase never modifies: it removes the target and creates a new file.
func linkOld(root *os.Root, entries []journalEntry, fsync bool) {
	l, err := newOldLinker(root)
	if err != nil {
		return // every old file stays in the journal
	}
	defer l.close()
	for i := range entries {
		e := &entries[i]
		if !e.Old.Exists {
			continue
		}
		if e.Old.Blob == "" {
			e.Old.Blob = BlobID(e.Old.Content)
		}
		name := oldLinkPrefix + strconv.Itoa(i)
		var err error
		if linkFault != nil {
			err = linkFault(e.Path)
		}
		if err == nil {
			err = l.link(e.Path, name)
		}
		if errors.Is(err, fs.ErrExist) {
			// Left by a crash after an earlier journal was removed: it is ours and stale.
			_ = root.Remove(linkName(i))
			err = l.link(e.Path, name)
		}
		if err != nil {
			e.Old.Blob = ""
			continue
		}
		e.Old.Linked, e.Old.Content = true, nil
	}
	if fsync {
		syncDir(root, StateDir)
	}
}

// removeLinks removes the old files an entry list linked.
func removeLinks(root *os.Root, entries []journalEntry) {
	state, err := root.OpenRoot(StateDir)
	if err != nil {
		return
	}
	defer state.Close()
	for i, e := range entries {
		if e.Old.Linked {
			_ = state.Remove(oldLinkPrefix + strconv.Itoa(i))
		}
	}
}

// removeStateDir removes old-file links that no committed journal refers to (a crash
// before the commit point, or after the journal was removed), then StateDir if empty.
// Only commands that write call it, holding the tree's lock; it never follows a link.
func removeStateDir(root *os.Root) {
	if root.Remove(StateDir) == nil {
		return
	}
	d, err := root.Open(StateDir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if strings.HasPrefix(n, oldLinkPrefix) {
			_ = root.Remove(StateDir + "/" + n)
		}
	}
	_ = root.Remove(StateDir)
}

// readLinked reads entry i's linked old content and checks it against the blob ID the
// authenticated journal records: the link sits in the tree, which is not trusted.
func readLinked(root *os.Root, i int, e journalEntry) ([]byte, error) {
	name := linkName(i)
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, fmt.Errorf("old content of %s: %w", QuotePath(e.Path), err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxJournalSize {
		return nil, fmt.Errorf("old content of %s: %s is not a regular file of bounded size", QuotePath(e.Path), name)
	}
	f, err := root.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("old content of %s: %w", QuotePath(e.Path), err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJournalSize+1))
	if err != nil {
		return nil, fmt.Errorf("old content of %s: %w", QuotePath(e.Path), err)
	}
	if BlobID(data) != e.Old.Blob {
		return nil, fmt.Errorf("old content of %s: %s no longer holds the file the journal recorded (blob %s); refusing to restore it",
			QuotePath(e.Path), name, e.Old.Blob)
	}
	return data, nil
}

// checkStateDir refuses a .mpspatch that is not a plain directory: a symbolic link
// planted in a checkout would take the journal wherever it points.
func checkStateDir(root *os.Root) error {
	fi, err := root.Lstat(StateDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", StateDir, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return &JournalError{Interruption: Interruption{Journal: StateDir, Foreign: true,
			Reason: StateDir + " is a symbolic link; mpspatch keeps its journal there and refuses to follow it"}}
	case !fi.IsDir():
		return &JournalError{Interruption: Interruption{Journal: StateDir, Foreign: true,
			Reason: StateDir + " is not a directory"}}
	}
	return nil
}

// Interruption is a write phase that did not finish, as a look at the tree finds it.
type Interruption struct {
	// Op is the journal's operation ("apply", "unapply", "rebase", "apply --commit")
	// when the journal is mpspatch's own.
	Op      string `json:"op,omitempty"`
	Journal string `json:"journal"`
	// Committed: the crash came after the commit point, so the tree may be half written.
	// A journal that is not committed (journal.tmp) means the tree was never touched.
	Committed bool `json:"committed"`
	// Foreign: the journal is not one this user's mpspatch wrote (planted in a checkout,
	// copied from elsewhere, or written under another HOME). It is never replayed.
	Foreign bool   `json:"foreign,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Blocking says whether the interruption stops every command until it is resolved.
func (i *Interruption) Blocking() bool { return i != nil && (i.Committed || i.Foreign) }

// Hint says, for a person, what happened and which command finishes or undoes it.
func (i *Interruption) Hint() string {
	switch {
	case i.Foreign:
		return fmt.Sprintf("%s was not written by mpspatch for this user (%s), so it is never replayed. "+
			"If it came with the checkout or a patch, delete %s/ and check the tree with `git status`; "+
			"if an mpspatch of yours was interrupted under another HOME or key, restore the touched files from git.",
			i.Journal, i.Reason, StateDir)
	case i.Committed && i.Op == OpRebase:
		return fmt.Sprintf("a rebase was interrupted while writing a patch (%s); the tree may be half written. "+
			"`mpspatch rebase --continue` rolls the patch back and redoes it; `mpspatch rebase --abort` undoes the whole rebase.", i.Journal)
	case i.Committed && i.Op == OpApplyCommit:
		return fmt.Sprintf("an apply --commit was interrupted while writing a patch (%s); the tree may be half written. "+
			"`mpspatch apply` or `mpspatch unapply` rolls that patch back first, leaving the tree at the branch's last commit; "+
			"then check out the commit you started from and run `mpspatch apply --commit --force` again.", i.Journal)
	case i.Committed && i.Op == "apply":
		return fmt.Sprintf("an apply was interrupted after its commit point (%s); the tree may be half written. "+
			"`mpspatch apply` finishes it; `mpspatch unapply` undoes it.", i.Journal)
	case i.Committed:
		return fmt.Sprintf("an unapply was interrupted after its commit point (%s); the tree may be half written. "+
			"`mpspatch unapply` finishes it; `mpspatch apply` undoes it.", i.Journal)
	}
	return fmt.Sprintf("an apply or unapply was interrupted before its commit point (%s); the tree was not changed, "+
		"and the next apply or unapply removes the stray journal.", i.Journal)
}

// JournalError stops a command because of an interrupted or foreign write phase.
// Nothing was written.
type JournalError struct {
	Interruption Interruption
}

func (e *JournalError) Error() string { return e.Interruption.Hint() }

// ErrBusy says another mpspatch holds the tree's lock.
var ErrBusy = errors.New("another mpspatch is working on this tree; try again when it has finished")

// look finds an interrupted write phase without writing anything.
func look(root *os.Root) (*Interruption, *journal, error) {
	if err := checkStateDir(root); err != nil {
		var je *JournalError
		if errors.As(err, &je) {
			return &je.Interruption, nil, nil
		}
		return nil, nil, err
	}
	data, err := readJournal(root)
	switch {
	case err == nil:
		key, _, kerr := statekey.Load()
		if kerr != nil && !errors.Is(kerr, statekey.ErrNoKey) {
			return nil, nil, kerr
		}
		j, derr := decodeJournal(data, key)
		switch {
		case key == nil:
			return &Interruption{Journal: journalFile, Committed: true, Foreign: true,
				Reason: "this user has no state key yet: a fresh HOME, another machine, or a journal that came with the checkout"}, nil, nil
		case errors.Is(derr, errForeign):
			return &Interruption{Journal: journalFile, Committed: true, Foreign: true, Reason: strings.TrimPrefix(derr.Error(), errForeign.Error()+": ")}, nil, nil
		case derr != nil:
			// Ours, yet its entries break the rules a patch obeys: refuse it too.
			return &Interruption{Journal: journalFile, Committed: true, Foreign: true, Reason: "invalid: " + derr.Error()}, nil, nil
		}
		return &Interruption{Op: j.Op, Journal: journalFile, Committed: true}, &j, nil
	case errors.Is(err, fs.ErrNotExist):
	default:
		var je *JournalError
		if errors.As(err, &je) {
			return &je.Interruption, nil, nil
		}
		return nil, nil, err
	}
	if fi, err := root.Lstat(journalTmp); err == nil {
		if !fi.Mode().IsRegular() {
			// mpspatch only ever writes a regular file there: this one was planted.
			return &Interruption{Journal: journalTmp, Foreign: true, Reason: "not a regular file"}, nil, nil
		}
		return &Interruption{Journal: journalTmp}, nil, nil
	}
	return nil, nil, nil
}

// readJournal reads journal.json, bounded, refusing anything but a regular file.
func readJournal(root *os.Root) ([]byte, error) {
	fi, err := root.Lstat(journalFile)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &JournalError{Interruption: Interruption{Journal: journalFile, Committed: true, Foreign: true, Reason: "not a regular file"}}
	}
	if fi.Size() > maxJournalSize {
		return nil, &JournalError{Interruption: Interruption{Journal: journalFile, Committed: true, Foreign: true,
			Reason: fmt.Sprintf("%d bytes, over the %d MiB a journal may hold", fi.Size(), maxJournalSize>>20)}}
	}
	f, err := root.OpenFile(journalFile, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJournalSize+1))
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	return data, nil
}

// Recover finishes or undoes a write phase interrupted by a crash, for a command that
// writes in direction dir and holds the tree's lock: a journal of the same operation is
// rolled forward, one of the opposite operation is rolled back (the command would undo
// it anyway), and a journal whose forward path cannot complete is rolled back. It reports
// what it did: "rolled forward", "rolled back" or "" when there was nothing to do. A
// foreign journal is refused with a *JournalError and never replayed.
func Recover(root *os.Root, dir Direction) (string, error) {
	in, j, err := look(root)
	switch {
	case err != nil:
		return "", err
	case in == nil:
		// A crash right after the journal was removed leaves the directory behind, empty
		// or with the old files' links.
		removeStateDir(root)
		return "", nil
	case in.Foreign:
		return "", &JournalError{Interruption: *in}
	case !in.Committed:
		// The crash came before the commit point: the tree was never touched.
		if err := root.Remove(journalTmp); err != nil {
			return "", fmt.Errorf("remove %s: %w", journalTmp, err)
		}
		removeStateDir(root)
		return "rolled back", nil
	}
	// A step journal (rebase, apply --commit) is never the direction's own op: it is
	// rolled back whoever recovers it (see journalOps).
	forward := j.Op == dir.verb()
	if err := replay(root, *j, forward, true, false, nil); err != nil {
		return "", err
	}
	if forward {
		return "rolled forward", nil
	}
	return "rolled back", nil
}

// Pending says whether an interrupted write phase awaits recovery.
func Pending(root *os.Root) bool {
	for _, f := range []string{journalFile, journalTmp} {
		if _, err := root.Lstat(f); err == nil {
			return true
		}
	}
	return false
}

// replay writes the journal's new states (forward) or its old states (back), then
// removes the journal. When a forward write fails, the entries written so far are rolled
// back and the error says so; only when that fails too is the journal kept.
func replay(root *os.Root, j journal, forward, recovering, fsync bool, hook stepHook) error {
	w := &writer{root: root, dirs: newDirRoots(root), dirOK: map[string]bool{}, check: recovering, fsync: fsync, hook: hook}
	defer w.dirs.close()
	if !forward {
		if err := w.rollBack(j.Entries); err != nil {
			return fmt.Errorf("%w (journal kept at %s)", err, journalFile)
		}
		return w.finish(j)
	}
	for i, e := range j.Entries {
		if err := w.put(e.Path, e.New); err != nil {
			if rerr := w.rollBack(j.Entries[:i+1]); rerr != nil {
				return fmt.Errorf("%w; rolling back failed too: %v (journal kept at %s)", err, rerr, journalFile)
			}
			if ferr := w.finish(j); ferr != nil {
				return fmt.Errorf("%w; rolled back, but %v", err, ferr)
			}
			return fmt.Errorf("%w; rolled back: the tree is as before", err)
		}
	}
	return w.finish(j)
}

type writer struct {
	root  *os.Root
	dirs  *dirRoots
	dirOK map[string]bool
	check bool // recovering: check every directory on a path for symbolic links
	fsync bool
	hook  stepHook
}

// rollBack restores the old state of entries (a prefix of the journal's), last first.
func (w *writer) rollBack(entries []journalEntry) error {
	for i := len(entries) - 1; i >= 0; i-- {
		st := entries[i].Old
		if st.Linked {
			data, err := readLinked(w.root, i, entries[i])
			if err != nil {
				return err
			}
			st.Content = data
		}
		if err := w.put(entries[i].Path, st); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) finish(j journal) error {
	if w.fsync {
		syncDirs(w.root, j)
	}
	if err := w.root.Remove(journalFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove journal: %w", err)
	}
	w.hook.at("journal removed")
	removeLinks(w.root, j.Entries)
	_ = w.root.Remove(StateDir) // only when empty: build logs may live there too
	return nil
}

// put makes p hold st: removed, then created with its content and mode, or deleted.
func (w *writer) put(p string, st fileState) error {
	dirName, base := path.Dir(p), path.Base(p)
	if w.check {
		if err := w.checkDirs(p); err != nil {
			return err
		}
	}
	dir, err := w.dirs.get(dirName)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !st.Exists:
		return nil // already gone, directory and all
	case errors.Is(err, fs.ErrNotExist):
		if err := w.root.MkdirAll(dirName, 0o755); err != nil {
			return fmt.Errorf("create directory for %s: %w", QuotePath(p), err)
		}
		dir, err = w.dirs.get(dirName)
	}
	if err != nil {
		return fmt.Errorf("open directory of %s: %w", QuotePath(p), err)
	}
	if w.check {
		if fi, err := dir.Lstat(base); err == nil && fi.IsDir() {
			return unsafePathf("%s: is a directory in the tree; refusing to replace it", QuotePath(p))
		}
	}
	// Remove, then create: truncating or renaming over a file makes ext4 flush it.
	if err := dir.Remove(base); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replace %s: %w", QuotePath(p), err)
	}
	if !st.Exists {
		w.dirs.forget(dirName)
		removeEmptyParents(w.root, p)
		w.hook.at("deleted " + p)
		return nil
	}
	w.hook.at("removed " + p)
	if writeFault != nil {
		if err := writeFault(p); err != nil {
			return fmt.Errorf("write %s: %w", QuotePath(p), err)
		}
	}
	if err := createFile(dir, base, [][]byte{st.Content}, st.Mode, w.fsync); err != nil {
		return fmt.Errorf("write %s: %w", QuotePath(p), err)
	}
	w.hook.at("wrote " + p)
	return nil
}

// checkDirs refuses, during recovery, a path whose directories are symbolic links or not
// directories: the tree may have changed since the journal was written.
func (w *writer) checkDirs(p string) error {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		if w.dirOK[prefix] {
			continue
		}
		fi, err := w.root.Lstat(prefix)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", QuotePath(p), err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return unsafePathf("%s: %s is a symbolic link in the tree; refusing to write through it", QuotePath(p), QuotePath(prefix))
		}
		if !fi.IsDir() {
			return unsafePathf("%s: %s is not a directory", QuotePath(p), QuotePath(prefix))
		}
		w.dirOK[prefix] = true
	}
	return nil
}

func removeEmptyParents(root *os.Root, p string) {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if root.Remove(d) != nil {
			return
		}
	}
}

// createFile creates name, which must not exist (O_EXCL: a symbolic link planted there
// meanwhile is not followed), with data and mode. New content has mode 0644 or 0755 and
// the umask applies, as with git; old content restored by a rollback gets its exact
// permission bits back.
func createFile(root *os.Root, name string, parts [][]byte, mode fs.FileMode, fsync bool) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm())
	if err != nil {
		return err
	}
	for _, data := range parts {
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
	}
	if mode != 0o644 && mode != 0o755 {
		if err := f.Chmod(mode.Perm()); err != nil {
			f.Close()
			return err
		}
	}
	if fsync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func syncDirs(root *os.Root, j journal) {
	seen := map[string]bool{}
	for _, e := range j.Entries {
		d := path.Dir(e.Path)
		if !seen[d] {
			seen[d] = true
			syncDir(root, d)
		}
	}
}

// syncDir makes a rename in dir durable. Errors are ignored: some filesystems cannot
// sync directories, and the data itself was synced already.
func syncDir(root *os.Root, dir string) {
	f, err := root.Open(dir)
	if err != nil {
		return
	}
	_ = f.Sync()
	f.Close()
}
