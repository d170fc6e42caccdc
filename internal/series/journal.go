package series

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// StateDir is the directory, at the tree root, where mpspatch keeps its journal.
const StateDir = ".mpspatch"

const (
	journalTmp  = StateDir + "/journal.tmp"  // being written; never trusted
	journalFile = StateDir + "/journal.json" // its appearance is the commit point
)

// journal is a redo log: everything needed to finish the write phase from any point.
type journal struct {
	Version int            `json:"version"`
	Op      string         `json:"op"`
	Series  string         `json:"series,omitempty"`
	Entries []journalEntry `json:"entries"`
}

type journalEntry struct {
	Path    string      `json:"path"`
	Delete  bool        `json:"delete,omitempty"`
	Mode    fs.FileMode `json:"mode,omitempty"`
	Size    int         `json:"size,omitempty"` // bytes of content after the header
	Content []byte      `json:"-"`
}

// encodeJournal writes the header as one JSON line followed by the raw contents, in
// entry order: no base64, so the journal costs what the files cost.
func encodeJournal(j journal) ([]byte, error) {
	total := 0
	for i := range j.Entries {
		j.Entries[i].Size = len(j.Entries[i].Content)
		total += j.Entries[i].Size
	}
	head, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(head)+1+total)
	out = append(append(out, head...), '\n')
	for _, e := range j.Entries {
		out = append(out, e.Content...)
	}
	return out, nil
}

func decodeJournal(data []byte) (journal, error) {
	var j journal
	head, body, ok := bytes.Cut(data, []byte{'\n'})
	if !ok {
		return j, errors.New("no header line")
	}
	if err := json.Unmarshal(head, &j); err != nil {
		return j, err
	}
	if j.Version != 2 {
		return j, fmt.Errorf("version %d, want 2", j.Version)
	}
	for i := range j.Entries {
		n := j.Entries[i].Size
		if n < 0 || n > len(body) {
			return j, fmt.Errorf("entry %s: truncated", j.Entries[i].Path)
		}
		j.Entries[i].Content, body = body[:n], body[n:]
	}
	if len(body) != 0 {
		return j, errors.New("trailing bytes")
	}
	return j, nil
}

// crashHook, when set (only by tests), is called at every step of the write phase so a
// test can kill the process there and check what recovery makes of the tree.
var crashHook func(step string)

func crashpoint(step string) {
	if crashHook != nil {
		crashHook(step)
	}
}

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
}

// Commit writes plan's changes to the tree at root, all or nothing.
//
// Protocol (a redo log): (1) the journal, holding every new content, is written to
// journal.tmp; (2) it is renamed to journal.json — the commit point; (3) each target is
// rewritten in place (removed, then created with its mode) or deleted; (4) the journal is
// removed. A crash before (2) leaves the tree untouched and a stray journal.tmp that
// recovery deletes; a crash after it leaves journal.json, from which recovery rewrites
// every target again (idempotent), so the tree is always wholly before or wholly after.
//
// Targets are replaced by remove+create rather than rename-over, as git apply does:
// ext4 flushes a file's data when another file is renamed over it, which would cost a
// disk write per file.
func Commit(root *os.Root, plan *Plan, op, seriesHash string, opts CommitOptions) error {
	if len(plan.Changes) == 0 {
		return nil
	}
	if Pending(root) {
		return fmt.Errorf("an interrupted write awaits recovery (%s); run `mpspatch status` first", journalFile)
	}
	j := journal{Version: 2, Op: op, Series: seriesHash}
	for _, ch := range plan.Changes {
		e := journalEntry{Path: ch.Path, Delete: !ch.NewExists}
		if ch.NewExists {
			e.Mode, e.Content = ch.NewMode, ch.NewData
		}
		j.Entries = append(j.Entries, e)
	}
	data, err := encodeJournal(j)
	if err != nil {
		return err
	}
	if err := root.MkdirAll(StateDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", StateDir, err)
	}
	if err := writeFile(root, journalTmp, data, 0o644, opts.Fsync); err != nil {
		_ = root.Remove(journalTmp)
		_ = root.Remove(StateDir)
		return fmt.Errorf("write journal: %w (nothing was changed)", err)
	}
	crashpoint("journal written")
	if err := root.Rename(journalTmp, journalFile); err != nil {
		_ = root.Remove(journalTmp)
		_ = root.Remove(StateDir)
		return fmt.Errorf("commit journal: %w (nothing was changed)", err)
	}
	if opts.Fsync {
		syncDir(root, StateDir)
	}
	crashpoint("committed")
	return rollForward(root, j, opts.Fsync)
}

// Recover finishes or undoes a write phase interrupted by a crash. It reports what it
// did: "rolled forward", "rolled back" or "" when there was nothing to do.
func Recover(root *os.Root) (string, error) {
	data, err := root.ReadFile(journalFile)
	switch {
	case err == nil:
		j, err := decodeJournal(data)
		if err != nil {
			return "", fmt.Errorf("journal %s is unreadable (%v); inspect the touched files and remove it by hand", journalFile, err)
		}
		if err := rollForward(root, j, false); err != nil {
			return "", err
		}
		return "rolled forward", nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("read journal: %w", err)
	}
	if _, err := root.Lstat(journalTmp); err == nil {
		// The crash came before the commit point: the tree was never touched.
		if err := root.Remove(journalTmp); err != nil {
			return "", fmt.Errorf("roll back: %w", err)
		}
		_ = root.Remove(StateDir)
		return "rolled back", nil
	}
	// A crash right after the journal was removed leaves the directory behind, empty.
	_ = root.Remove(StateDir)
	return "", nil
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

func rollForward(root *os.Root, j journal, fsync bool) error {
	dirs := newDirRoots(root)
	defer dirs.close()
	for _, e := range j.Entries {
		dirName, base := path.Dir(e.Path), path.Base(e.Path)
		dir, err := dirs.get(dirName)
		switch {
		case errors.Is(err, fs.ErrNotExist) && e.Delete:
			continue // already gone, directory and all
		case errors.Is(err, fs.ErrNotExist):
			if err := root.MkdirAll(dirName, 0o755); err != nil {
				return fmt.Errorf("create directory for %s: %w (journal kept at %s)", e.Path, err, journalFile)
			}
			dir, err = dirs.get(dirName)
		}
		if err != nil {
			return fmt.Errorf("open directory of %s: %w (journal kept at %s)", e.Path, err, journalFile)
		}
		// Remove, then create: truncating or renaming over a file makes ext4 flush it.
		if err := dir.Remove(base); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("replace %s: %w (journal kept at %s)", e.Path, err, journalFile)
		}
		if e.Delete {
			dirs.forget(dirName)
			removeEmptyParents(root, e.Path)
			crashpoint("deleted " + e.Path)
			continue
		}
		crashpoint("removed " + e.Path)
		if err := writeFile(dir, base, e.Content, e.Mode, fsync); err != nil {
			return fmt.Errorf("write %s: %w (journal kept at %s)", e.Path, err, journalFile)
		}
		crashpoint("wrote " + e.Path)
	}
	if fsync {
		syncDirs(root, j)
	}
	if err := root.Remove(journalFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove journal: %w", err)
	}
	crashpoint("journal removed")
	_ = root.Remove(StateDir) // only when empty: build logs may live there too
	return nil
}

func removeEmptyParents(root *os.Root, p string) {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if root.Remove(d) != nil {
			return
		}
	}
}

// writeFile creates (or truncates) name with data and mode, syncing it when asked.
func writeFile(root *os.Root, name string, data []byte, mode fs.FileMode, fsync bool) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	// The umask may have narrowed the mode; the patch's mode is what the file must have.
	if mode&0o022 != 0 || mode&0o111 != 0 {
		if err := f.Chmod(mode); err != nil {
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
