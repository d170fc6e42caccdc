package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Options tune Write.
type Options struct {
	// Sync flushes the content to disk before the rename, for files that must survive
	// power loss (the build's provenance stamp).
	Sync bool
	// Mode is the new file's permission bits; 0 means 0644. Secrets use 0600.
	Mode os.FileMode
}

// Write replaces path with what write produces, mode 0644 unless opts.Mode says. On any error the target is
// untouched and the temporary file removed.
func Write(path string, write func(io.Writer) error, opts Options) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	bw := bufio.NewWriter(tmp)
	if err := write(bw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	mode := opts.Mode
	if mode == 0 {
		mode = 0o644
	}
	if err := tmp.Chmod(mode); err != nil {
		return fail(err)
	}
	if opts.Sync {
		if err := tmp.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteBytes is Write for content already in memory.
func WriteBytes(path string, data []byte, opts Options) error {
	return Write(path, func(w io.Writer) error { _, err := w.Write(data); return err }, opts)
}
