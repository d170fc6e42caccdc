package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDate is the date in the man pages' footer. A fixed one keeps `make docs` reproducible
// (the docs test compares byte for byte); bump it when the reference changes materially.
var manDate = time.Date(2026, time.November, 1, 0, 0, 0, 0, time.UTC)

func newGenDocsCmd(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "Write the CLI reference as Markdown (one page per command) and man pages (DIR/man)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			manDir := filepath.Join(dir, "man")
			if err := os.MkdirAll(manDir, 0o755); err != nil {
				return fmt.Errorf("gen-docs: %w", err)
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true // keep the pages reproducible
			if err := doc.GenMarkdownTree(root, dir); err != nil {
				return fmt.Errorf("gen-docs %s: %w", dir, err)
			}
			header := &doc.GenManHeader{Title: "MPSPATCH", Section: "1", Source: "mpspatch", Manual: "mpspatch manual", Date: &manDate}
			if err := doc.GenManTree(root, header, manDir); err != nil {
				return fmt.Errorf("gen-docs %s: %w", manDir, err)
			}
			d.printer().Progressf("wrote the CLI reference to %s and man pages to %s", dir, manDir)
			return nil
		},
	}
}
