package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/stack"
)

type importOptions struct {
	treeOptions
	dryRun bool
}

func newImportCmd(d *deps) *cobra.Command {
	opts := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import DIR|MBOX",
		Short: "Add patches written by plain git format-patch (a directory or an mbox) to the series",
		Long: `Read the mails of a directory written by plain git format-patch (names such as
0001-Fix-the-Stream.patch; in the order of its series file when it has one), or of an
mbox holding several mails, and append them to the series as new entries with the next
free IDs. Names and headers are normalised: NNNN-slug.patch, a zero SHA on the From line,
a plain [PATCH] subject prefix (other bracketed prefixes and Re: dropped, as git am drops
them) folded as git format-patch folds it, no version signature, a/ b/ path prefixes (a
mail written with diff.noprefix gets them), no Series-Id trailer. An in-body From:,
Subject: or Date: line at the top of the body wins, as in git am. What was normalised is
listed per patch. A cover letter (0000-cover-letter.patch, or a [PATCH 0/N] mail with
no diff) is left out; mails whose change the series already holds are refused.

The diff's bytes are kept exactly: only a mail's own CRLF line ends are undone (one CR a
line, when its first line ends in CRLF), and a quoted-printable or base64 body is
decoded. Refused, with nothing written: a file that is not a regular one (a FIFO, a
device), a symbolic link inside the directory, an mbox over 64 MiB or a mail over
16 MiB, a multipart mail, a Subject: or From: that decodes to a line break, a mail that
does not lint, and an ID past 9999 (see docs/authoring.md).`,
		Example: `  git format-patch -o /tmp/out v2.9.1..my-fix
  mpspatch import /tmp/out --patches patches/
  mpspatch import fixes.mbox --patches patches/ --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(cmd.Context(), d, opts, args[0])
		},
	}
	addPatchesFlag(cmd, &opts.treeOptions)
	cmd.Flags().BoolVarP(&opts.dryRun, "dry-run", "n", false, "report what would be imported, write nothing")
	return cmd
}

func runImport(ctx context.Context, d *deps, opts *importOptions, src string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir, err := d.seriesDirFor(&opts.treeOptions, "import")
	if err != nil {
		return err
	}
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		// A path that is not there is a mistyped argument, as for every other command.
		return usageErrorf("import: %s does not exist; name a directory of git format-patch files or one mbox file", src)
	}
	res, err := stack.Import(ctx, stack.ImportOptions{Src: src, Dir: dir, Check: opts.dryRun})
	if err != nil {
		return withCode(ExitCheckFailed, err)
	}
	p := d.printer()
	return p.Result(res, func(w io.Writer) {
		for _, im := range res.Patches {
			fmt.Fprintf(w, "  %-44s <- %s\n", im.Name, im.Source)
			if len(im.Notes) > 0 {
				fmt.Fprintf(w, "      normalised: %s\n", strings.Join(im.Notes, "; "))
			}
		}
		verb := "imported"
		if opts.dryRun {
			verb = "dry run: would import"
		}
		for _, sk := range res.Skipped {
			fmt.Fprintf(w, "  %-40s left out: a cover letter (no diff)\n", sk)
		}
		fmt.Fprintf(w, "%s %s into %s\n", verb, plural(len(res.Patches), "patch"), dir)
	})
}
