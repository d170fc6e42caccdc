package confined

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// UnsafeError refuses a path that a write must not go through: a symbolic link, something
// that is not a directory, or git's own directory. It is bad input (a planted or broken
// tree), never a transient failure.
type UnsafeError struct {
	Path   string // the offending path, as the user would type it
	Reason string
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("%s: %s; mpspatch refuses to write through it (remove it and run again)", e.Path, e.Reason)
}

// GitDir, when set, says whether a path component names git's own directory. The
// default compares with ".git" ignoring case; internal/cli installs the series engine's
// check, which also knows the spellings case-insensitive and HFS+ filesystems fold to it.
var GitDir = func(name string) bool { return strings.EqualFold(name, ".git") }

// Dir is a directory inside a tree, reached without following a symbolic link.
type Dir struct {
	root *os.Root
	path string // for messages: the tree's path joined with the relative one
}

// Path is the directory's path for messages and reports.
func (d *Dir) Path() string { return d.path }

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// Open reaches rel (slash-separated, relative) below tree, whose path for messages is
// treePath. With create, missing directories are made (mode 0755); without, a missing
// one is fs.ErrNotExist. rel "." is the tree itself.
func Open(tree *os.Root, treePath, rel string, create bool) (*Dir, error) {
	if err := checkRel(treePath, rel); err != nil {
		return nil, err
	}
	cur, err := tree.OpenRoot(".")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", treePath, err)
	}
	d := &Dir{root: cur, path: treePath}
	if rel == "." {
		return d, nil
	}
	for _, c := range strings.Split(rel, "/") {
		next, err := d.sub(c, create)
		d.Close()
		if err != nil {
			return nil, err
		}
		d = next
	}
	return d, nil
}

// Check walks rel below tree as Open does but creates nothing: it reports the first
// component that is a link, not a directory, or .git, and stops quietly at the first
// one that does not exist. Callers check every path before they write to any.
func Check(tree *os.Root, treePath, rel string) error {
	d, err := Open(tree, treePath, rel, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return d.Close()
}

func checkRel(treePath, rel string) error {
	if rel == "." {
		return nil
	}
	if rel == "" || strings.HasPrefix(rel, "/") || path.Clean(rel) != rel || strings.Contains(rel, `\`) {
		return &UnsafeError{Path: filepath.Join(treePath, filepath.FromSlash(rel)), Reason: "not a clean path relative to the tree"}
	}
	for _, c := range strings.Split(rel, "/") {
		switch {
		case c == "..":
			return &UnsafeError{Path: filepath.Join(treePath, filepath.FromSlash(rel)), Reason: "it leaves the tree"}
		case GitDir(c):
			return &UnsafeError{Path: filepath.Join(treePath, filepath.FromSlash(rel)), Reason: "it is under .git, git's own directory"}
		}
	}
	return nil
}

// sub opens (or creates) the directory name inside d, refusing a link or a non-directory.
func (d *Dir) sub(name string, create bool) (*Dir, error) {
	p := filepath.Join(d.path, name)
	fi, err := d.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := d.root.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create %s: %w", p, err)
		}
		fi, err = d.root.Lstat(name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err := dirOnly(d.root, name, p, fi); err != nil {
		return nil, err
	}
	r, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	// The directory opened must be the one looked at: a link swapped in between would
	// take the open elsewhere.
	if ofi, err := r.Stat("."); err != nil || !os.SameFile(fi, ofi) {
		r.Close()
		return nil, &UnsafeError{Path: p, Reason: "it changed while it was being opened"}
	}
	return &Dir{root: r, path: p}, nil
}

func dirOnly(root *os.Root, name, p string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		reason := "it is a symbolic link"
		if target, err := root.Readlink(name); err == nil {
			reason += " (to " + target + ")"
		}
		return &UnsafeError{Path: p, Reason: reason}
	case !fi.IsDir():
		return &UnsafeError{Path: p, Reason: "it is not a directory"}
	}
	return nil
}

// Sub reaches rel below d, as Open does below a tree.
func (d *Dir) Sub(rel string, create bool) (*Dir, error) { return Open(d.root, d.path, rel, create) }

// WriteFile replaces name in d with data, whole: a temporary file in d, then a rename, so
// a reader or a crash sees the old file or the new one, and a link at name is replaced,
// not followed.
func (d *Dir) WriteFile(name string, data []byte, perm fs.FileMode) error {
	p := filepath.Join(d.path, name)
	if err := checkName(name); err != nil {
		return &UnsafeError{Path: p, Reason: err.Error()}
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:]) // crypto/rand.Read does not fail
	tmp := "." + name + ".tmp-" + hex.EncodeToString(suffix[:])
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = d.root.Rename(tmp, name)
	}
	if werr != nil {
		_ = d.root.Remove(tmp)
		return fmt.Errorf("write %s: %w", p, werr)
	}
	return nil
}

// Create makes a new file for writing (and reading back), named name or, when that
// exists, name with -2, -3, ... before its extension: it never opens an existing file,
// so a link planted at the name is not followed. It returns the file and its path.
func (d *Dir) Create(name string) (*os.File, string, error) {
	if err := checkName(name); err != nil {
		return nil, "", &UnsafeError{Path: filepath.Join(d.path, name), Reason: err.Error()}
	}
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 1; ; i++ {
		n := name
		if i > 1 {
			n = fmt.Sprintf("%s-%d%s", stem, i, ext)
		}
		f, err := d.root.OpenFile(n, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) && i < 100 {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("create %s: %w", filepath.Join(d.path, n), err)
		}
		return f, filepath.Join(d.path, n), nil
	}
}

// Remove removes name from d (a link is removed, not what it points to); a name that
// does not exist is not an error.
func (d *Dir) Remove(name string) error {
	if err := d.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", filepath.Join(d.path, name), err)
	}
	return nil
}

// ErrNotRegular refuses to read something that is not a regular file (a link, a FIFO
// that would block the reader, a device).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge refuses a file over the reader's bound.
var ErrTooLarge = errors.New("larger than mpspatch reads")

// ReadFile reads name from d when it is a regular file of at most limit bytes.
func (d *Dir) ReadFile(name string, limit int64) ([]byte, error) {
	p := filepath.Join(d.path, name)
	fi, err := d.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", p, ErrNotRegular)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %w (%d bytes, at most %d)", p, ErrTooLarge, fi.Size(), limit)
	}
	f, err := d.root.OpenFile(name, os.O_RDONLY|nonBlocking, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		return nil, fmt.Errorf("%s: %w (it changed while it was being opened)", p, ErrNotRegular)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w (at most %d bytes)", p, ErrTooLarge, limit)
	}
	return data, nil
}

// CheckNoLinks walks d and refuses the first symbolic link or special file (FIFO,
// socket, device) in it, at any depth: a directory where other programs write files by
// name (verify's reports) must hold nothing that would send a write elsewhere.
func (d *Dir) CheckNoLinks() error {
	return fs.WalkDir(d.root.FS(), ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(d.path, filepath.FromSlash(p)), err)
		}
		full := filepath.Join(d.path, filepath.FromSlash(p))
		switch t := e.Type(); {
		case t&fs.ModeSymlink != 0:
			reason := "it is a symbolic link"
			if target, err := d.root.Readlink(p); err == nil {
				reason += " (to " + target + ")"
			}
			return &UnsafeError{Path: full, Reason: reason}
		case !t.IsDir() && !t.IsRegular():
			return &UnsafeError{Path: full, Reason: "it is not a regular file or directory"}
		}
		return nil
	})
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.IndexByte(name, 0) >= 0 {
		return errors.New("not a plain file name")
	}
	return nil
}
