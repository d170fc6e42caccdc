package series

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strings"
	"sync"
)

// treeFiles reads the series' files from a tree once: Inspect and Compute in one run
// share it, and the directories on a path are checked for symbolic links once each.
type treeFiles struct {
	root  *os.Root
	src   FileSource // set instead of root for trees that are not directories (ComputeFrom)
	dirs  *dirRoots
	dirOK map[string]bool
	files map[string]treeFile
}

type treeFile struct {
	exists bool
	data   []byte
	mode   fs.FileMode // permission bits
	blob   string      // git blob ID, set by readAll
}

// readAll reads every path and computes the blob IDs, hashing on all CPUs: hashing is
// most of what inspecting a tree costs.
func (t *treeFiles) readAll(paths []string) error {
	todo := make([]string, 0, len(paths))
	for _, p := range paths {
		f, err := t.read(p)
		if err != nil {
			return err
		}
		if f.exists && f.blob == "" {
			todo = append(todo, p)
		}
	}
	blobs := make([]string, len(todo))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				blobs[i] = BlobID(t.files[todo[i]].data)
			}
		}()
	}
	for i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, p := range todo {
		f := t.files[p]
		f.blob = blobs[i]
		t.files[p] = f
	}
	return nil
}

func newTreeFiles(root *os.Root) *treeFiles {
	return &treeFiles{root: root, dirs: newDirRoots(root), dirOK: map[string]bool{}, files: map[string]treeFile{}}
}

// read returns path's content after checking that it is a safe, symlink-free, regular
// file (or absent).
func (t *treeFiles) read(p string) (treeFile, error) {
	if f, ok := t.files[p]; ok {
		return f, nil
	}
	if t.src != nil {
		return t.readSource(p)
	}
	if err := CheckPath(p); err != nil {
		return treeFile{}, &UnsafePathError{Msg: err.Error()}
	}
	if err := t.checkDirs(p); err != nil {
		return treeFile{}, err
	}
	var f treeFile
	dir, err := t.dirs.get(path.Dir(p))
	if errors.Is(err, fs.ErrNotExist) {
		t.files[p] = f
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("%s: %w", p, err)
	}
	base := path.Base(p)
	fi, err := dir.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.files[p] = f
		return f, nil
	case err != nil:
		return f, fmt.Errorf("%s: %w", p, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return f, unsafePathf("%s: is a symbolic link in the tree; refusing to patch through it", QuotePath(p))
	case !fi.Mode().IsRegular():
		return f, unsafePathf("%s: not a regular file", QuotePath(p))
	}
	data, err := dir.ReadFile(base)
	if err != nil {
		return f, fmt.Errorf("read %s: %w", p, err)
	}
	f = treeFile{exists: true, data: data, mode: fi.Mode().Perm()}
	t.files[p] = f
	return f, nil
}

// checkDirs refuses a path whose directories are symbolic links inside the tree. os.Root
// already refuses links that leave the tree; this also refuses links that stay inside it,
// because a patch must name the file it changes.
func (t *treeFiles) checkDirs(p string) error {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		if t.dirOK[prefix] {
			continue
		}
		fi, err := t.root.Lstat(prefix)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // nothing further exists to be a link
		}
		if err != nil {
			return fmt.Errorf("%s: %w", QuotePath(p), err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return unsafePathf("%s: %s is a symbolic link in the tree; refusing to patch through it", QuotePath(p), QuotePath(prefix))
		}
		if !fi.IsDir() {
			return unsafePathf("%s: %s is not a directory", QuotePath(p), QuotePath(prefix))
		}
		t.dirOK[prefix] = true
	}
	return nil
}

// UnsafePathError is a tree path the engine refuses to read or write through: a symbolic
// link, a non-regular file, a path that would leave the tree. Nothing was written.
type UnsafePathError struct{ Msg string }

func (e *UnsafePathError) Error() string { return e.Msg }

func unsafePathf(format string, args ...any) error {
	return &UnsafePathError{Msg: fmt.Sprintf(format, args...)}
}

// dirRoots opens each directory of the tree once, as an os.Root of its own, so that the
// many operations on files of one directory (aten/src/ATen/mps holds most of the series)
// each cost one system call instead of a walk through every path component.
type dirRoots struct {
	root *os.Root
	m    map[string]*os.Root
}

func newDirRoots(root *os.Root) *dirRoots {
	return &dirRoots{root: root, m: map[string]*os.Root{}}
}

// get returns the root for dir ("." is the tree itself).
func (d *dirRoots) get(dir string) (*os.Root, error) {
	if dir == "." || dir == "" {
		return d.root, nil
	}
	if r, ok := d.m[dir]; ok {
		return r, nil
	}
	r, err := d.root.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	d.m[dir] = r
	return r, nil
}

// forget closes and drops dir's root (after the directory was removed).
func (d *dirRoots) forget(dir string) {
	if r, ok := d.m[dir]; ok {
		r.Close()
		delete(d.m, dir)
	}
}

func (d *dirRoots) close() {
	for k, r := range d.m {
		r.Close()
		delete(d.m, k)
	}
}
