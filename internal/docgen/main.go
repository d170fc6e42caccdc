package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/mpspatch/mpspatch/internal/cli"
)

// manDate is the date in the man pages' footer. A fixed one keeps `make docs` reproducible
// (the docs test compares byte for byte); bump it when the reference changes materially.
var manDate = time.Date(2026, time.November, 1, 0, 0, 0, 0, time.UTC)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: docgen DIR")
		os.Exit(2)
	}
	if err := generate(cli.NewRootCommand(), os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "docgen: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "docgen: wrote the CLI reference to %s and man pages to %s\n", os.Args[1], filepath.Join(os.Args[1], "man"))
}

// generate writes the Markdown pages to dir and the man pages to dir/man.
func generate(root *cobra.Command, dir string) error {
	manDir := filepath.Join(dir, "man")
	if err := os.MkdirAll(manDir, 0o755); err != nil {
		return err
	}
	root.DisableAutoGenTag = true // keep the pages reproducible
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return fmt.Errorf("markdown %s: %w", dir, err)
	}
	// No Title: each page gets its command's own (MPSPATCH-APPLY for mpspatch apply), as
	// git's pages do; one title for all made every page MPSPATCH(1).
	header := &doc.GenManHeader{Section: "1", Source: "mpspatch", Manual: "mpspatch manual", Date: &manDate}
	if err := doc.GenManTree(root, header, manDir); err != nil {
		return fmt.Errorf("man pages %s: %w", manDir, err)
	}
	return nil
}
