package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// docs/cli is generated from the command tree; a change of flags or help text without
// `make docs` leaves it stale, and this test says so.
func TestCLIReferenceIsCurrent(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runMain(t, "gen-docs", dir); code != 0 {
		t.Fatalf("gen-docs: exit %d: %s", code, stderr)
	}
	have, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	want, _ := filepath.Glob(filepath.Join("..", "..", "docs", "cli", "*.md"))
	if len(have) != len(want) {
		t.Fatalf("gen-docs wrote %d pages, docs/cli has %d: run `make docs`", len(have), len(want))
	}
	for _, h := range have {
		w := filepath.Join("..", "..", "docs", "cli", filepath.Base(h))
		hb, _ := os.ReadFile(h)
		wb, err := os.ReadFile(w)
		if err != nil || string(hb) != string(wb) {
			t.Errorf("docs/cli/%s is stale: run `make docs`", filepath.Base(h))
		}
	}
}
