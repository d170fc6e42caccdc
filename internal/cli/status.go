package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/series"
)

type statusOptions struct {
	treeOptions
}

func newStatusCmd(d *deps) *cobra.Command {
	opts := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show which patches of the series a tree holds",
		Long: `For each patch: applied, not applied, partial (some of its files patched, others
not) or modified; for each touched file: base, patched, or with local edits. Files are
recognised by the blob IDs the patches record, else by whether the hunks apply or reverse.

status writes nothing, not even to finish an interrupted apply or unapply: it reports
the tree as "interrupted" and says which command finishes or undoes the write (apply or
unapply, which recover first). Exit 0 whatever the state; use --json to script on it. A
directory that holds none of the files the series touches is not a PyTorch checkout: exit
2, each file reported missing.`,
		Example: `  mpspatch status ~/src/pytorch
  mpspatch status --tree . --json | jq -r '.summary'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStatus(cmd.Context(), d, opts)
		},
	}
	addTreeFlags(cmd, &opts.treeOptions)
	return cmd
}

type statusReport struct {
	Tree    string `json:"tree"`
	Series  string `json:"series"`
	Summary string `json:"summary"`
	*series.TreeStatus
}

func runStatus(ctx context.Context, d *deps, opts *statusOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := d.printer()
	s, root, err := d.seriesAndTree(ctx, &opts.treeOptions)
	if err != nil {
		return err
	}
	defer root.Close()
	st, err := series.Inspect(root, s)
	if err != nil {
		return engineError(fmt.Errorf("status %s: %w", opts.tree, err))
	}
	if st.Interrupted != nil {
		// status only reads: it says what happened and which command resolves it.
		p.Warnf("%s", st.Interrupted.Hint())
	}
	rep := statusReport{Tree: opts.tree, Series: s.Hash(), Summary: string(st.Summary()), TreeStatus: st}
	if err := notPyTorchCheckout(opts.tree, st); err != nil {
		// Every file the series touches is absent: the wrong directory, not a tree whose
		// files were all "modified". --json still gets the per-file report.
		_ = p.Result(rep, func(io.Writer) {})
		return err
	}
	return p.Result(rep, func(w io.Writer) {
		fmt.Fprintf(w, "series %s: %s\n", s.Source, st.Summary())
		for _, ps := range st.Patches {
			c := dim
			switch ps.State {
			case series.Applied:
				c = green
			case series.Partial, series.Unknown:
				c = red
			}
			fmt.Fprintf(w, "  %s %s\n", pad(p.Paint(c, string(ps.State)), 12), ps.Name)
		}
		writeStatusFiles(w, st.Files)
	})
}

// writeStatusFiles writes the files table, its state column as wide as its widest cell
// ("patched+edits" and "partial 10/12" overran a fixed 12).
func writeStatusFiles(w io.Writer, files []series.FileStatus) {
	fmt.Fprintln(w, "files:")
	width := 12
	for _, f := range files {
		width = max(width, len(shortState(f)))
	}
	for _, f := range files {
		fmt.Fprintf(w, "  %-*s %s\n", width, shortState(f), series.QuotePath(f.Path))
	}
}

// missingFiles counts the touched files absent from the tree whose absence no patch
// explains (a file the series creates is absent in the base, and that is its base state).
func missingFiles(st *series.TreeStatus) int {
	n := 0
	for _, f := range st.Files {
		if !f.Exists && f.Version < 0 {
			n++
		}
	}
	return n
}

func shortState(f series.FileStatus) string {
	switch {
	case !f.Exists && f.Version < 0:
		return "missing"
	case f.Version < 0:
		return "modified"
	case f.Edited && f.Version == 0:
		return "base+edits"
	case f.Edited:
		return "patched+edits"
	case f.Version == 0:
		return "base"
	case f.Version == f.Steps:
		return "patched"
	}
	return fmt.Sprintf("partial %d/%d", f.Version, f.Steps)
}
