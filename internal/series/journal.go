package series

import (
	"crypto/rand"
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
	pendingFile = StateDir + "/journal.pending" // written first: temp files that may exist
	journalFile = StateDir + "/journal.json"    // its appearance is the commit point
)

// journal is the on-disk record of one write phase.
type journal struct {
	Version int            `json:"version"`
	Op      string         `json:"op"`
	Series  string         `json:"series,omitempty"`
	Entries []journalEntry `json:"entries"`
	Dirs    []string       `json:"dirs,omitempty"` // directories created for new files
}

type journalEntry struct {
	Path   string      `json:"path"`
	Tmp    string      `json:"tmp,omitempty"` // staged content; empty for a deletion
	Delete bool        `json:"delete,omitempty"`
	Mode   fs.FileMode `json:"mode,omitempty"`
	Blob   string      `json:"blob,omitempty"` // git blob ID of the new content
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

// Commit writes plan's changes to the tree at root, all or nothing.
//
// Protocol: (1) journal.pending lists the temp files about to be staged; (2) every new
// content is written to a temp file beside its target and synced; (3) journal.json is
// renamed into place: from here on the change is decided; (4) temp files are renamed over
// their targets and deletions done; (5) the journal is removed. Recover finishes (4) and (5)
// after a crash past (3), and removes the temp files after a crash before it, so the tree
// is always wholly before or wholly after.
func Commit(root *os.Root, plan *Plan, op, seriesHash string) error {
	if len(plan.Changes) == 0 {
		return nil
	}
	if err := root.MkdirAll(StateDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", StateDir, err)
	}
	if Pending(root) {
		return fmt.Errorf("an interrupted write awaits recovery (%s); run `mpspatch status` first", StateDir)
	}
	j := journal{Version: 1, Op: op, Series: seriesHash}
	tag := randomTag()
	for _, ch := range plan.Changes {
		e := journalEntry{Path: ch.Path}
		if ch.NewExists {
			e.Tmp = path.Join(path.Dir(ch.Path), "."+path.Base(ch.Path)+".mpspatch-"+tag)
			e.Mode = ch.NewMode
			e.Blob = BlobID(ch.NewData)
		} else {
			e.Delete = true
		}
		j.Entries = append(j.Entries, e)
		if ch.NewExists {
			for d := path.Dir(ch.Path); d != "."; d = path.Dir(d) {
				if _, err := root.Lstat(d); errors.Is(err, fs.ErrNotExist) {
					j.Dirs = append(j.Dirs, d)
				}
			}
		}
	}
	if err := writeJSONSynced(root, pendingFile, j); err != nil {
		return err
	}
	crashpoint("pending")

	for i, ch := range plan.Changes {
		e := j.Entries[i]
		if e.Delete {
			continue
		}
		if err := root.MkdirAll(path.Dir(ch.Path), 0o755); err != nil {
			return rollback(root, j, fmt.Errorf("create directory for %s: %w", ch.Path, err))
		}
		if err := writeSynced(root, e.Tmp, ch.NewData, e.Mode); err != nil {
			return rollback(root, j, fmt.Errorf("stage %s: %w", ch.Path, err))
		}
		crashpoint("staged " + ch.Path)
	}
	syncDirs(root, j)

	// The commit point: once journal.json exists, recovery rolls forward.
	if err := writeJSONSynced(root, journalFile+".tmp", j); err != nil {
		return rollback(root, j, err)
	}
	if err := root.Rename(journalFile+".tmp", journalFile); err != nil {
		return rollback(root, j, fmt.Errorf("commit journal: %w", err))
	}
	syncDir(root, StateDir)
	crashpoint("committed")
	return rollForward(root, j)
}

// Recover finishes or undoes a write phase interrupted by a crash. It reports whether
// there was anything to do: "rolled forward", "rolled back" or "".
func Recover(root *os.Root) (string, error) {
	if data, err := root.ReadFile(journalFile); err == nil {
		var j journal
		if err := json.Unmarshal(data, &j); err != nil {
			return "", fmt.Errorf("journal %s is unreadable (%v); the tree may be half-written: inspect it and remove the journal by hand", journalFile, err)
		}
		if err := rollForward(root, j); err != nil {
			return "", err
		}
		return "rolled forward", nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read journal: %w", err)
	}
	_ = root.Remove(journalFile + ".tmp")
	data, err := root.ReadFile(pendingFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read journal: %w", err)
	}
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		// A torn pending file means the crash came before any temp file was written.
		_ = root.Remove(pendingFile)
		return "rolled back", nil
	}
	if err := rollback(root, j, nil); err != nil {
		return "", err
	}
	return "rolled back", nil
}

// Pending says whether an interrupted write phase awaits recovery.
func Pending(root *os.Root) bool {
	for _, f := range []string{journalFile, pendingFile} {
		if _, err := root.Lstat(f); err == nil {
			return true
		}
	}
	return false
}

func rollForward(root *os.Root, j journal) error {
	for _, e := range j.Entries {
		if e.Delete {
			if err := root.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("delete %s: %w", e.Path, err)
			}
			removeEmptyParents(root, e.Path)
			crashpoint("deleted " + e.Path)
			continue
		}
		err := root.Rename(e.Tmp, e.Path)
		if errors.Is(err, fs.ErrNotExist) {
			// Renamed before the crash: the target must hold the new content.
			data, rerr := root.ReadFile(e.Path)
			if rerr != nil || BlobID(data) != e.Blob {
				return fmt.Errorf("journal: %s is neither staged nor written; the tree needs a look by hand (journal kept at %s)", e.Path, journalFile)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", e.Path, err)
		}
		crashpoint("renamed " + e.Path)
	}
	syncDirs(root, j)
	if err := root.Remove(journalFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove journal: %w", err)
	}
	crashpoint("journal removed")
	_ = root.Remove(pendingFile)
	_ = root.Remove(StateDir) // only when empty
	return nil
}

// rollback removes staged temp files and created directories; cause, when non-nil, is
// returned wrapped so the caller sees why the write phase stopped.
func rollback(root *os.Root, j journal, cause error) error {
	for _, e := range j.Entries {
		if e.Tmp != "" {
			if err := root.Remove(e.Tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("roll back: remove %s: %w", e.Tmp, err)
			}
		}
	}
	for i := len(j.Dirs) - 1; i >= 0; i-- {
		_ = root.Remove(j.Dirs[i]) // only removes it when empty
	}
	if err := root.Remove(pendingFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("roll back: %w", err)
	}
	_ = root.Remove(StateDir)
	if cause != nil {
		return fmt.Errorf("%w (nothing was changed)", cause)
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

func writeJSONSynced(root *os.Root, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeSynced(root, name, append(data, '\n'), 0o644)
}

// writeSynced writes data to name (created or truncated) and fsyncs it.
func writeSynced(root *os.Root, name string, data []byte, mode fs.FileMode) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	// The umask may have narrowed the mode; the patch's mode is what the file must have.
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
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

func randomTag() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
