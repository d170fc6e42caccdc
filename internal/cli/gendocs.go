package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func newGenDocsCmd(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "Write the CLI reference as Markdown (one page per command)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true // keep the pages reproducible
			if err := doc.GenMarkdownTree(root, args[0]); err != nil {
				return fmt.Errorf("gen-docs %s: %w", args[0], err)
			}
			d.printer().Progressf("wrote the CLI reference to %s", args[0])
			return nil
		},
	}
}
