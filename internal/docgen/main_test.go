package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mpspatch/mpspatch/internal/cli"
)

// docs/cli is generated from the command tree; a change of flags or help text without
// `make docs` leaves it stale, and this test says so.
func TestCLIReferenceIsCurrent(t *testing.T) {
	dir := t.TempDir()
	if err := generate(cli.NewRootCommand(), dir); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{"*.md", filepath.Join("man", "*.1")} {
		have, _ := filepath.Glob(filepath.Join(dir, pattern))
		want, _ := filepath.Glob(filepath.Join("..", "..", "docs", "cli", pattern))
		if len(have) == 0 || len(have) != len(want) {
			t.Fatalf("docgen wrote %d %s pages, docs/cli has %d: run `make docs`", len(have), pattern, len(want))
		}
		for _, h := range have {
			rel, _ := filepath.Rel(dir, h)
			hb, _ := os.ReadFile(h)
			wb, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli", rel))
			if err != nil || string(hb) != string(wb) {
				t.Errorf("docs/cli/%s is stale: run `make docs`", rel)
			}
		}
	}
}
