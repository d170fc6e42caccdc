package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/stack"
)

type exportOptions struct {
	treeOptions
	base  string
	head  string
	check bool
}

func newExportCmd(d *deps) *cobra.Command {
	opts := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the series commits of a branch back into the series directory",
		Long: `Turn the commits between the base (the pinned upstream commit, or --base) and HEAD
into the series directory: one normalised git format-patch mail per commit, listed in
apply order in the series file.

IDs are stable: a commit made by apply --commit carries a Series-Id: trailer and keeps
its entry's ID and file name even if its subject changed; a new commit gets the next ID
nobody ever had. A dropped commit deletes its file, and its ID goes on the series file's
"# retired:" line so that it is never reused. The mails do not depend on your git
configuration (prefixes, colour, abbreviation, rename detection, signature, format.*):
re-exporting unchanged commits writes byte-identical files.

When the clone does not hold the pinned upstream commit (a shallow clone, a fork),
the series starts at the parent of the commit carrying the first entry's Series-Id (with
no series file yet: of the oldest commit in the run of Series-Id commits below HEAD), and
a warning says so; --base overrides.

--check writes nothing and exits 1, listing each file that would change: the CI check
that the committed series matches the branch.`,
		Example: `  mpspatch export --tree ~/src/pytorch --patches patches/
  mpspatch export --check --tree ~/src/pytorch --patches patches/   # CI: series == branch?
  mpspatch export --tree . --patches patches/ --base v2.11.0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runExport(cmd.Context(), d, opts)
		},
	}
	addTreeFlags(cmd, &opts.treeOptions)
	cmd.Flags().StringVar(&opts.base, "base", "", "commit the series starts on (default: the config's upstream.commit)")
	cmd.Flags().StringVar(&opts.head, "head", "HEAD", "last commit of the series")
	cmd.Flags().BoolVar(&opts.check, "check", false, "write nothing; exit 1 when a re-export would change any file")
	return cmd
}

func runExport(ctx context.Context, d *deps, opts *exportOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := requireCheckout(ctx, opts.tree, "export"); err != nil {
		return err
	}
	dir, err := d.seriesDirFor(&opts.treeOptions, "export")
	if err != nil {
		return err
	}
	base, err := d.pinnedBase(opts.base)
	if err != nil {
		return err
	}
	p := d.printer()
	p.Progressf("export: %s..%s of %s into %s", shortSHA(base), opts.head, opts.tree, dir)
	res, err := stack.Export(ctx, authorGit(), stack.ExportOptions{Tree: opts.tree, Base: base, Head: opts.head, Dir: dir, Check: opts.check, BaseIsPin: opts.base == ""})
	if err != nil {
		return gitError(err)
	}
	if res.BaseFound != "" {
		p.Warnf("export: the pinned upstream commit %s is not in %s; the series starts at %s (%s)", shortSHA(base), opts.tree, shortSHA(res.Base), res.BaseFound)
	}
	if err := p.Result(checkedActions(res, opts.check), func(w io.Writer) { writeExportText(w, p, res, opts.check) }); err != nil {
		return err
	}
	if opts.check && res.Changed {
		return &silentError{code: ExitCheckFailed}
	}
	return nil
}

func writeExportText(w io.Writer, p *printer, res *stack.ExportResult, check bool) {
	changed := 0
	for _, f := range res.Files {
		if f.Action == stack.Unchanged {
			continue
		}
		changed++
		verb := f.Action
		if check {
			verb = map[string]string{stack.Created: "would be created", stack.Updated: "would change", stack.Deleted: "would be deleted"}[f.Action]
		}
		colour := yellow
		if check {
			colour = red
		}
		fmt.Fprintf(w, "  %-40s %s\n", f.Name, p.Paint(colour, verb))
	}
	switch {
	case changed == 0:
		fmt.Fprintf(w, "%s is up to date with %s (%s)\n", res.Dir, shortSHA(res.Head), plural(len(res.Files)-1, "patch"))
	case check:
		fmt.Fprintf(w, "%s: %s out of date with %s; run mpspatch export\n", p.Paint(red, "stale"), plural(changed, "file"), shortSHA(res.Head))
	default:
		fmt.Fprintf(w, "exported %s to %s, %s written\n", plural(len(res.Files)-1-countAction(res, stack.Deleted), "patch"), res.Dir, plural(changed, "file"))
	}
}

func countAction(res *stack.ExportResult, action string) int {
	n := 0
	for _, f := range res.Files {
		if f.Action == action {
			n++
		}
	}
	return n
}

// checkedActions is the --json form of an export: under --check nothing was written, so
// each action says what a re-export would do ("would_create", "would_update",
// "would_delete"); "created" read as done.
func checkedActions(res *stack.ExportResult, check bool) *stack.ExportResult {
	if !check {
		return res
	}
	out := *res
	out.Files = make([]stack.FileChange, len(res.Files))
	for i, f := range res.Files {
		if f.Action != stack.Unchanged {
			f.Action = "would_" + strings.TrimSuffix(f.Action, "d")
		}
		out.Files[i] = f
	}
	return &out
}
