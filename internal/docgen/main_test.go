package main

import (
	"os"
	"path/filepath"
	"strings"
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

// Each man page is titled after its command (MPSPATCH-APPLY(1)), as git's are; every page
// was MPSPATCH(1).
func TestManPageTitles(t *testing.T) {
	dir := t.TempDir()
	if err := generate(cli.NewRootCommand(), dir); err != nil {
		t.Fatal(err)
	}
	for page, title := range map[string]string{
		"mpspatch.1":               `.TH "MPSPATCH" "1"`,
		"mpspatch-apply.1":         `.TH "MPSPATCH-APPLY" "1"`,
		"mpspatch-upstream-tags.1": `.TH "MPSPATCH-UPSTREAM-TAGS" "1"`,
	} {
		b, err := os.ReadFile(filepath.Join(dir, "man", page))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "\n"+title+" ") {
			t.Errorf("%s: want the title line %s ...; the page begins:\n%.120s", page, title, b)
		}
	}
}
