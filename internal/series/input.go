package series

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/mpspatch/mpspatch/internal/confined"
)

// Every patch that enters mpspatch from disk — a series directory, a directory written by
// git format-patch, an mbox, a single patch file — is read here, with the same checks:
//
//   - opened without blocking (O_NONBLOCK), so that a FIFO is refused instead of waiting
//     for a writer that never comes;
//   - judged by fstat on the descriptor it was opened as, so that nothing swapped in
//     between a check and the open is read: only a regular file passes (no FIFO, device
//     or socket; a link to /dev/zero would never end);
//   - bounded in size before a byte is read, and read with that bound (a huge sparse file
//     costs nothing);
//   - inside a directory, never through a symbolic link: a link to a patch elsewhere
//     would be read and applied as if it were the directory's own.
//
// The errors name the file and say what was expected.

// MaxImportSize bounds an mbox, and the sum of the patches of a directory that git
// format-patch wrote: several times the whole MPS series.
const MaxImportSize = 64 << 20

// InputError is a patch input that was refused or could not be read.
type InputError struct {
	Path string
	Err  error
}

func (e *InputError) Error() string { return QuotePath(e.Path) + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// PatchDir is a directory patches are read from: a series directory or one that git
// format-patch wrote. It is an fs.FS, so Load reads a series through it; every file is
// a name directly in the directory.
type PatchDir struct {
	root *os.Root
	name string
}

// OpenPatchDir opens dir. dir itself may be reached through a symbolic link (it is the
// path the user named); nothing inside it is.
func OpenPatchDir(dir string) (*PatchDir, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, &InputError{Path: dir, Err: errOrUnwrapped(err)}
	}
	return &PatchDir{root: root, name: dir}, nil
}

// Close releases the directory.
func (d *PatchDir) Close() error { return d.root.Close() }

// Name is the directory as it was named to OpenPatchDir.
func (d *PatchDir) Name() string { return d.name }

// path names a file of the directory in a message.
func (d *PatchDir) path(name string) string {
	return strings.TrimSuffix(d.name, "/") + "/" + name
}

// Open implements fs.FS for Load: "." is the directory, anything else a regular file
// directly in it, opened as ReadFile opens it.
func (d *PatchDir) Open(name string) (fs.File, error) {
	if name == "." {
		return d.root.Open(".")
	}
	f, err := d.open(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f, nil
}

// ReadDir implements fs.ReadDirFS: the entries of the directory ("." only), by name.
func (d *PatchDir) ReadDir(name string) ([]fs.DirEntry, error) {
	if name != "." {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("patch directories are flat; want \".\"")}
	}
	f, err := d.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// Has says whether the directory holds an entry called name, of whatever kind (a link
// counts, unfollowed).
func (d *PatchDir) Has(name string) (bool, error) {
	_, err := d.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, &InputError{Path: d.path(name), Err: errOrUnwrapped(err)}
	}
	return true, nil
}

// ReadFile reads name, a regular file directly in the directory, of at most limit bytes.
func (d *PatchDir) ReadFile(name string, limit int64) ([]byte, error) {
	f, err := d.open(name)
	if err != nil {
		return nil, &InputError{Path: d.path(name), Err: err}
	}
	defer f.Close()
	data, err := readOpened(f, limit)
	if err != nil {
		return nil, &InputError{Path: d.path(name), Err: err}
	}
	return data, nil
}

// open opens name without blocking and without following a link, and refuses anything
// but a regular file. os.Root follows a link that stays inside the directory, so the
// entry is lstat-ed first and the opened file must be the one lstat saw: a link swapped
// in between is caught by the comparison.
func (d *PatchDir) open(name string) (*os.File, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return nil, fmt.Errorf("%s: want the name of a file directly in the directory", QuotePath(name))
	}
	lfi, err := d.root.Lstat(name)
	if err != nil {
		return nil, errOrUnwrapped(err)
	}
	if lfi.Mode()&fs.ModeSymlink != 0 {
		return nil, errors.New("a symbolic link, not a regular file; patches are read only from regular files in the directory, never through a link (copy the file in instead)")
	}
	if !lfi.Mode().IsRegular() {
		return nil, confined.NotRegular(lfi.Mode())
	}
	f, err := d.root.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, errOrUnwrapped(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, confined.NotRegular(fi.Mode())
	}
	if !os.SameFile(lfi, fi) {
		f.Close()
		return nil, errors.New("replaced while it was being opened; refusing to read it")
	}
	return f, nil
}

// ReadPatchFile reads the file at path (an mbox, or one patch) as PatchDir.ReadFile reads
// a file of a directory: without blocking, a regular file only, at most limit bytes. path
// is the one the user named, so a symbolic link in it is followed, as a shell would; what
// it reaches must still be a regular file.
func ReadPatchFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, &InputError{Path: path, Err: errOrUnwrapped(err)}
	}
	defer f.Close()
	data, err := readOpened(f, limit)
	if err != nil {
		return nil, &InputError{Path: path, Err: err}
	}
	return data, nil
}

// readOpened reads f, which must be a regular file of at most limit bytes. The size is
// the descriptor's own (fstat), and the read is bounded too, for a file that grows
// meanwhile.
func readOpened(f *os.File, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, confined.NotRegular(fi.Mode())
	}
	if fi.Size() > limit {
		return nil, tooLarge(limit)
	}
	return readSized(f, fi.Size(), limit)
}

// readSized reads what is left of r, which stat says holds size bytes, refusing more
// than limit. Sized from the stat: one read for the file and one for EOF, where growing
// from bytes.Buffer's 512 bytes took four reads and three copies for a 1.5 KB patch.
func readSized(r io.Reader, size, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(size) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, tooLarge(limit)
	}
	return buf.Bytes(), nil
}

func tooLarge(limit int64) error {
	return fmt.Errorf("larger than %d MiB; refusing to read it", limit>>20)
}
