package verify

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// suitesFS holds verify/suites: the pytest files, their conftest.py and helpers, and the
// scaling benchmark. They travel inside the binary so that the suites always match the
// runner that reads their events.
//
//go:embed suites
var suitesFS embed.FS

// SuiteFS returns the embedded suite directory (file names at its root).
func SuiteFS() fs.FS {
	sub, err := fs.Sub(suitesFS, "suites")
	if err != nil {
		panic("verify: embedded suites missing: " + err.Error())
	}
	return sub
}

// WriteSuites writes the embedded suites into dir, which must exist.
func WriteSuites(dir string) error {
	return fs.WalkDir(SuiteFS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			if p == "." {
				return nil
			}
			return os.MkdirAll(dst, 0o755)
		}
		if path.Ext(p) == ".pyc" {
			return nil
		}
		b, err := fs.ReadFile(SuiteFS(), p)
		if err != nil {
			return fmt.Errorf("read embedded suite %s: %w", p, err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return fmt.Errorf("write suite %s: %w", dst, err)
		}
		return nil
	})
}
