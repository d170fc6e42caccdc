package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/internal/upstream"
)

type checkOptions struct {
	treeOptions
	ignoreBase bool
	upstream   upstreamCheckOptions
}

func newCheckCmd(d *deps) *cobra.Command {
	opts := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Lint the series and, given --tree, report whether each patch would apply",
		Long: `Lint the series: every listed file exists and every patch file is listed, IDs are
unique and names well formed, each patch parses as a git format-patch mail with complete
headers, paths are safe, and the Intent:/Test: trailers are well formed (see
docs/series-format.md). Problems are listed as FILE:LINE: message (exit 1).

With --tree, also compute — in memory, writing nothing — whether each patch would apply
to that tree: exact, at an offset (with the hunks that moved), or conflict (exit 3).

With --upstream REF (a tag, branch or full commit SHA of [upstream] url, or of --url;
repeatable), answer the same question for each REF without a checkout: only the commit's
trees and the files the series touches are fetched, into a cache under the user cache
directory that later runs reuse (mpspatch cache clean empties it). The table has one row
per patch and one column per REF: exact, offset N, 3-way needed (the context moved; a
three-way merge against the pinned base takes it), conflict (hunk i/n), absorbed (the
patch's result is already there) or missing file. Anything but exact or offset exits 3.
--format markdown writes the table for an issue or pull-request comment.`,
		Example: `  mpspatch check
  mpspatch check --patches ./patches
  mpspatch check --tree ~/src/pytorch --json
  mpspatch check --upstream v2.10.0 --upstream main
  mpspatch check --upstream v2.10.0 --format markdown >> comment.md`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCheck(cmd.Context(), d, opts, cmd.Flags().Changed("tree"))
		},
	}
	addPatchesFlag(cmd, &opts.treeOptions)
	cmd.Flags().StringVar(&opts.tree, "tree", "", "also check that the series applies to this tree")
	cmd.Flags().BoolVar(&opts.ignoreBase, "ignore-base", false, "as apply --ignore-base: accept touched files that differ from the recorded base")
	cmd.Flags().StringArrayVar(&opts.upstream.refs, "upstream", nil, "also check the series against this upstream tag, branch or commit, without a checkout (repeatable)")
	cmd.Flags().StringVar(&opts.upstream.url, "url", "", "upstream repository for --upstream (default: config [upstream] url)")
	cmd.Flags().StringVar(&opts.upstream.format, "format", "text", "text or markdown (the --upstream table for an issue or PR comment)")
	return cmd
}

type checkPatch struct {
	Name    string `json:"patch"`
	Title   string `json:"title"`
	Files   int    `json:"files"`
	Intents int    `json:"intents"`
	Tests   int    `json:"tests"`
	Outcome string `json:"outcome,omitempty"` // with --tree: exact, offset, conflict, applied
	Offset  int    `json:"max_offset,omitempty"`
	// IntentsHeld counts, with --tree, the intents that hold right after this patch.
	IntentsHeld int `json:"intents_held,omitempty"`
}

type checkReport struct {
	Series    string             `json:"series"`
	Source    string             `json:"source"`
	Patches   []checkPatch       `json:"patches"`
	Tree      string             `json:"tree,omitempty"`
	TreeState string             `json:"tree_state,omitempty"`
	Conflicts []*series.Conflict `json:"conflicts,omitempty"`
	// BaseDiffers lists touched files that differ from the recorded base: apply refuses
	// them unless --ignore-base.
	BaseDiffers []string       `json:"base_differs,omitempty"`
	Intents     []intentReport `json:"intents,omitempty"`
	Problems    []string       `json:"problems,omitempty"`
	// Upstream is the --upstream table.
	Upstream *upstream.Report `json:"upstream,omitempty"`
}

func runCheck(ctx context.Context, d *deps, opts *checkOptions, withTree bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := d.printer()
	if _, err := parseFormat(opts.upstream.format, checkFormats); err != nil {
		return err
	}
	if withTree && len(opts.upstream.refs) > 0 {
		return usageErrorf("--tree and --upstream: choose one (--tree checks a checkout, --upstream a remote)")
	}
	if len(opts.upstream.refs) == 0 && (opts.upstream.url != "" || opts.upstream.format != "text") {
		return usageErrorf("--url and --format go with --upstream REF")
	}
	s, err := d.loadSeries(ctx, &opts.treeOptions)
	var lint *series.LintError
	if errors.As(err, &lint) {
		rep := checkReport{Source: lint.Source}
		for _, pr := range lint.Problems {
			rep.Problems = append(rep.Problems, pr.String())
		}
		if perr := p.Result(rep, func(w io.Writer) {
			fmt.Fprintf(w, "series %s: %s\n", lint.Source, plural(len(lint.Problems), "problem"))
			for _, pr := range lint.Problems {
				fmt.Fprintf(w, "  %s\n", pr)
			}
		}); perr != nil {
			return perr
		}
		return &silentError{code: ExitCheckFailed}
	}
	if err != nil {
		return err
	}
	rep := checkReport{Series: s.Hash(), Source: s.Source}
	for _, pt := range s.Patches {
		rep.Patches = append(rep.Patches, checkPatch{
			Name: pt.Name, Title: pt.Title, Files: len(pt.Files),
			Intents: len(pt.TrailerValues("Intent")), Tests: len(pt.TrailerValues("Test")),
		})
	}
	rep.Problems = append(rep.Problems, checkTrailers(s)...)

	code := ExitOK
	if len(rep.Problems) > 0 {
		code = ExitCheckFailed
	}
	if withTree {
		c, err := checkTree(s, opts, &rep)
		if err != nil {
			return err
		}
		if c != ExitOK {
			code = c
		}
	}
	if len(opts.upstream.refs) > 0 {
		c, err := checkUpstream(ctx, d, s, opts, &rep)
		if err != nil {
			return err
		}
		if c != ExitOK {
			code = c
		}
	}
	if err := p.Result(rep, func(w io.Writer) {
		switch {
		case rep.Upstream != nil && opts.upstream.format == "markdown":
			writeUpstreamMarkdown(w, rep.Upstream)
		case rep.Upstream != nil:
			writeCheckText(w, p, &rep)
			writeUpstreamText(w, p, rep.Upstream)
		default:
			writeCheckText(w, p, &rep)
		}
	}); err != nil {
		return err
	}
	if code != ExitOK {
		return &silentError{code: code}
	}
	return nil
}

// checkTree fills rep with the per-patch outcome on the tree; it writes nothing.
func checkTree(s *series.Series, opts *checkOptions, rep *checkReport) (int, error) {
	tree := opts.tree
	root, err := openTree(tree)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	rep.Tree = tree
	// Inspect first: a tree that already holds the series is reported as such rather than
	// as a conflict, and check writes nothing: an interrupted write is reported with the
	// command that resolves it, never replayed. Then one pass: each patch's intents are judged on the in-memory tree right after it, so
	// a patch that still applies but no longer does its job (after a rebase, say) is
	// caught here, before anything is built.
	var intents []intentReport
	st, plan, err := series.InspectAndCompute(root, s, func(p *series.Patch, read func(string) ([]byte, error)) {
		intents = append(intents, evaluatePatchIntents(p, read)...)
	})
	var ce *series.ConflictError
	if err != nil && !errors.As(err, &ce) {
		return 0, engineError(fmt.Errorf("check %s: %w", tree, err))
	}
	if st.Interrupted.Blocking() {
		return 0, engineError(fmt.Errorf("check %s: %w", tree, &series.JournalError{Interruption: *st.Interrupted}))
	}
	rep.TreeState = string(st.Summary())
	if st.Summary() == series.Applied {
		for i := range rep.Patches {
			rep.Patches[i].Outcome = "applied"
		}
		rep.Intents = evaluateIntents(root, s)
		return intentsCode(rep), nil
	}
	// Say what apply would say: a tree whose files differ from the recorded base is
	// refused without --ignore-base even when every hunk locates.
	for _, f := range st.Edited() {
		if f.Version >= 0 && !opts.ignoreBase {
			rep.BaseDiffers = append(rep.BaseDiffers, f.Path)
		}
	}
	for i, r := range plan.Results {
		rep.Patches[i].Outcome = r.Outcome()
		rep.Patches[i].Offset = r.MaxOffset()
	}
	if ce != nil {
		rep.Conflicts = ce.Conflicts
		return ExitConflict, nil
	}
	if len(rep.BaseDiffers) > 0 {
		return ExitConflict, nil
	}
	rep.Intents = intents
	return intentsCode(rep), nil
}

// overlayReader reads the tree as plan would leave it, without writing anything.
func overlayReader(root *os.Root, plan *series.Plan) func(string) ([]byte, error) {
	changed := map[string]series.Change{}
	for _, c := range plan.Changes {
		changed[c.Path] = c
	}
	return func(p string) ([]byte, error) {
		if c, ok := changed[p]; ok {
			if !c.NewExists {
				return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
			}
			return c.NewData, nil
		}
		return root.ReadFile(p)
	}
}

func intentsCode(rep *checkReport) int {
	for i := range rep.Patches {
		for _, r := range rep.Intents {
			if r.Patch == rep.Patches[i].Name && r.OK {
				rep.Patches[i].IntentsHeld++
			}
		}
	}
	if failedIntents(rep.Intents) > 0 {
		return ExitCheckFailed
	}
	return ExitOK
}

func writeCheckText(w io.Writer, p *printer, rep *checkReport) {
	fmt.Fprintf(w, "series %s: %s, %s\n", rep.Source, plural(len(rep.Patches), "patch"), shortHash(rep.Series))
	for _, pt := range rep.Patches {
		outcome := ""
		switch pt.Outcome {
		case "exact", "applied":
			outcome = p.Paint(green, pt.Outcome)
		case "offset":
			outcome = p.Paint(yellow, fmt.Sprintf("offset %d", pt.Offset))
		case "conflict":
			outcome = p.Paint(red, "conflict")
		}
		if outcome != "" {
			outcome = pad(outcome, 10) + " "
		}
		intents := plural(pt.Intents, "intent")
		if rep.Intents != nil && pt.Intents > 0 {
			intents = fmt.Sprintf("%d/%d intents hold", pt.IntentsHeld, pt.Intents)
		}
		fmt.Fprintf(w, "  %s%s  %s (%s, %s, %s)\n", outcome, pt.Name, pt.Title,
			plural(pt.Files, "file"), intents, plural(pt.Tests, "test"))
	}
	writeIntentsText(w, p, rep.Intents)
	for _, c := range rep.Conflicts {
		fmt.Fprintln(w)
		fmt.Fprint(w, c.Report())
	}
	for _, pr := range rep.Problems {
		fmt.Fprintf(w, "  %s %s\n", p.Paint(red, "problem:"), pr)
	}
	if len(rep.BaseDiffers) > 0 && len(rep.Conflicts) == 0 {
		verb := "differ"
		if len(rep.BaseDiffers) == 1 {
			verb = "differs"
		}
		fmt.Fprintf(w, "every hunk locates, but %s %s from the base the patches record (another upstream commit, or local edits):\n", plural(len(rep.BaseDiffers), "file"), verb)
		for _, f := range rep.BaseDiffers {
			fmt.Fprintf(w, "  %s\n", series.QuotePath(f))
		}
		fmt.Fprintln(w, "apply refuses such a tree; --ignore-base applies around the differences")
		return
	}
	if rep.Tree != "" && len(rep.Conflicts) == 0 {
		failed := failedIntents(rep.Intents)
		switch {
		case failed > 0:
			// Every hunk lands, but the series would not do its job: apply refuses it, so
			// saying "applies" here would contradict the exit status.
			fmt.Fprintf(w, "every hunk of the series locates in %s, but %s not hold on the result; apply refuses it\n",
				rep.Tree, pluralVerb(failed, "intent", "does", "do"))
		case rep.TreeState == string(series.Applied):
			fmt.Fprintf(w, "%s already holds the series\n", rep.Tree)
		default:
			fmt.Fprintf(w, "the series applies to %s\n", rep.Tree)
		}
	}
}

// pluralVerb is plural with the verb agreeing: "1 intent does", "2 intents do".
func pluralVerb(n int, noun, one, many string) string {
	if n == 1 {
		return plural(n, noun) + " " + one
	}
	return plural(n, noun) + " " + many
}

func shortHash(h string) string {
	if len(h) > 12 {
		return "sha256:" + h[:12]
	}
	return h
}
