package series

import (
	"fmt"
	"io/fs"
)

// File is one file as a FileSource holds it.
type File struct {
	// Exists is false for a path the tree does not hold.
	Exists bool
	Data   []byte
	// Mode holds the permission bits (0o644, 0o755).
	Mode fs.FileMode
}

// FileSource gives the engine a tree that is not a directory on disk: the blobs of an
// upstream commit read from a git object store, say, or such a tree with earlier patches
// laid over it. The engine asks only for the paths the patches name.
type FileSource interface {
	// ReadFile returns path (slash-separated, relative to the tree) or a File with
	// Exists false when the tree does not hold it. An error stops the computation.
	ReadFile(path string) (File, error)
}

// ComputeFrom is ComputePatches on a tree read from src instead of a directory. Paths are
// checked as on disk (no .., no .git, no absolute paths) before src sees them; whether a
// path is a symbolic link is src's to refuse, since only src knows.
func ComputeFrom(src FileSource, patches []*Patch, dir Direction) (*Plan, error) {
	return computePatches(&treeFiles{src: src, files: map[string]treeFile{}}, patches, dir, nil)
}

// readSource is treeFiles.read for a tree backed by a FileSource.
func (t *treeFiles) readSource(p string) (treeFile, error) {
	if err := CheckPath(p); err != nil {
		return treeFile{}, &UnsafePathError{Msg: err.Error()}
	}
	f, err := t.src.ReadFile(p)
	if err != nil {
		return treeFile{}, fmt.Errorf("%s: %w", p, err)
	}
	tf := treeFile{exists: f.Exists, data: f.Data, mode: f.Mode.Perm()}
	if tf.exists && tf.mode == 0 {
		tf.mode = 0o644
	}
	t.files[p] = tf
	return tf, nil
}
