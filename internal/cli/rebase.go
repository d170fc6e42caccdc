package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/lazyregexp"
	"github.com/mpspatch/mpspatch/internal/stack"
)

type rebaseOptions struct {
	treeOptions
	onto         string
	base         string
	updateConfig bool
	cont         bool
	skip         bool
	abort        bool
	noIntents    bool
	markdown     bool
	noExport     bool
}

func newRebaseCmd(d *deps) *cobra.Command {
	opts := &rebaseOptions{}
	cmd := &cobra.Command{
		Use:   "rebase --onto REF",
		Short: "Move the series commits onto a new upstream commit, patch by patch",
		Long: `Move the series commits — between the base (the pinned upstream commit, or --base) and
the head of the checked-out branch — onto REF. Each patch is applied exactly, else at an
offset, else by a three-way merge against the blobs its index lines name (a partial clone
fetches them on demand). A patch whose change upstream already has is dropped as empty,
naming the upstream commit that last touched its files. After each patch its Intent:
trailers are judged on the result.

A conflict, or an intent that no longer holds, stops the rebase (exit 3) with conflict
markers in the tree and the state saved in the git directory: fix, git add, then
--continue; or --skip the patch; or --abort, which puts tree, index and branch back
exactly as they were. A rebase killed at any point, inside a patch's write phase
included, resumes with --continue or goes back with --abort. The state is authenticated
with your state key and bound to the repository: one mpspatch did not write there, or
that says what no rebase could, is refused by all three (exit 2). --continue and --skip
remember what the starting command was given (--patches, --no-export, --update-config and
--onto's name), so they need not be repeated; a value given again is used instead.

At the end the branch points at the new commits, the series directory is re-exported
(unless --no-export or the series is the built-in one), --update-config writes REF's
commit as upstream.commit into the config file, and a report says per patch: clean,
offset N, merged (3-way), resolved by hand, skipped, or empty, and whether the patch's
own diff changed (with a range-diff style excerpt). --markdown prints the report for a
pull-request description.`,
		Example: `  mpspatch rebase --tree ~/src/pytorch --onto v2.11.0 --patches patches/
  mpspatch rebase --tree ~/src/pytorch --continue      # after resolving and git add
  mpspatch rebase --tree ~/src/pytorch --abort
  mpspatch rebase --tree . --onto origin/main --base v2.9.1 --markdown > pr.md`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRebase(cmd.Context(), d, opts)
		},
	}
	addTreeFlags(cmd, &opts.treeOptions)
	f := cmd.Flags()
	f.StringVar(&opts.onto, "onto", "", "upstream commit, tag or branch to move the series onto")
	f.StringVar(&opts.base, "base", "", "commit the series currently starts on (default: the config's upstream.commit)")
	f.BoolVar(&opts.updateConfig, "update-config", false, "write the new base into the config file's upstream.commit when done")
	f.BoolVar(&opts.cont, "continue", false, "go on after resolving a stop (or after a crash)")
	f.BoolVar(&opts.skip, "skip", false, "drop the patch the rebase stopped at and go on")
	f.BoolVar(&opts.abort, "abort", false, "put tree, index and branch back as before the rebase")
	f.BoolVar(&opts.noIntents, "no-intents", false, "with --continue: accept the resolved patch even if an intent still fails")
	f.BoolVar(&opts.markdown, "markdown", false, "print the final report as Markdown")
	f.BoolVar(&opts.noExport, "no-export", false, "do not re-export the series directory at the end")
	return cmd
}

// rebaseReport is the --json shape of rebase.
type rebaseReport struct {
	Tree     string               `json:"tree"`
	Branch   string               `json:"branch"`
	Onto     string               `json:"onto"`
	OntoName string               `json:"onto_name"`
	Done     bool                 `json:"done"`
	Aborted  bool                 `json:"aborted,omitempty"`
	Patches  []stack.PatchOutcome `json:"patches"`
	Stopped  *stack.Stop          `json:"stopped,omitempty"`
	Export   *stack.ExportResult  `json:"export,omitempty"`
	Config   string               `json:"config_updated,omitempty"`
	Error    string               `json:"error,omitempty"`
}

func runRebase(ctx context.Context, d *deps, opts *rebaseOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	modes := 0
	for _, b := range []bool{opts.cont, opts.skip, opts.abort, opts.onto != ""} {
		if b {
			modes++
		}
	}
	if modes != 1 {
		return usageErrorf("rebase: give exactly one of --onto REF, --continue, --skip, --abort")
	}
	p := d.printer()
	root, err := openTree(opts.tree)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := requireCheckout(ctx, opts.tree, "rebase"); err != nil {
		return err
	}
	g := authorGit()
	if opts.cont || opts.skip {
		if err := resumeOptions(ctx, d, g, opts); err != nil {
			return err
		}
	}
	sopts := stack.RebaseOptions{Tree: opts.tree, Onto: opts.onto, Intents: intentChecker, SkipIntents: opts.noIntents,
		Progress: func(done, total int, out stack.PatchOutcome) {
			what := out.Outcome
			if out.Offset != 0 {
				what = fmt.Sprintf("%s %+d", what, out.Offset)
			}
			p.Progressf("rebase: [%d/%d] %s: %s", done, total, out.Name, what)
		}}
	if dir, err := d.seriesDirFor(&opts.treeOptions, "rebase"); err == nil && isDir(dir) {
		sopts.SeriesDir = dir
	}

	if opts.abort {
		st, err := stack.Abort(ctx, g, root, sopts)
		if err != nil {
			return rebaseError(err)
		}
		rep := rebaseReport{Tree: opts.tree, Branch: st.Branch, Onto: st.Onto, OntoName: st.OntoName, Aborted: true, Patches: st.Outcomes}
		return p.Result(rep, func(w io.Writer) {
			fmt.Fprintf(w, "rebase aborted: %s is back at %s\n", st.Branch, shortSHA(st.OrigHead))
		})
	}

	var res *stack.RebaseResult
	switch {
	case opts.cont:
		p.Progressf("rebase: continuing in %s", opts.tree)
		res, err = stack.Continue(ctx, g, root, sopts)
	case opts.skip:
		p.Progressf("rebase: skipping a patch in %s", opts.tree)
		res, err = stack.Skip(ctx, g, root, sopts)
	default:
		base, berr := d.pinnedBase(opts.base)
		if berr != nil {
			return berr
		}
		sopts.Base = base
		sopts.Remember = rememberOptions(d, opts, sopts.SeriesDir)
		p.Progressf("rebase: %s onto %s in %s", shortSHA(base), opts.onto, opts.tree)
		res, err = stack.Rebase(ctx, g, root, sopts)
	}
	rep := rebaseReport{Tree: opts.tree}
	if res != nil && res.State != nil {
		st := res.State
		rep.Branch, rep.Onto, rep.OntoName, rep.Done, rep.Patches = st.Branch, st.Onto, st.OntoName, res.Done, st.Outcomes
		rep.Stopped = st.Stopped
	}
	var stop *stack.StopError
	if err != nil && !errors.As(err, &stop) {
		return rebaseError(err)
	}
	if rep.Done {
		if err := finishRebase(ctx, d, opts, &rep); err != nil {
			rep.Error = err.Error()
			_ = p.Result(rep, func(w io.Writer) { writeRebaseReport(w, p, &rep, opts.markdown) })
			return err
		}
	}
	if stop != nil {
		rep.Error = stop.Error()
	}
	if perr := p.Result(rep, func(w io.Writer) { writeRebaseReport(w, p, &rep, opts.markdown) }); perr != nil {
		return perr
	}
	if stop != nil {
		if p.json {
			return &silentError{code: ExitConflict}
		}
		return withCode(ExitConflict, stop)
	}
	return nil
}

// rememberOptions is what --continue and --skip must do as the starting command would:
// re-export into the series directory (absolute, as the resume may run elsewhere) or not
// at all, and update which config file.
func rememberOptions(d *deps, opts *rebaseOptions, seriesDir string) map[string]string {
	m := map[string]string{}
	if seriesDir != "" {
		if abs, err := filepath.Abs(seriesDir); err == nil {
			m["patches"] = abs
		}
	}
	if opts.noExport {
		m["no_export"] = "true"
	}
	if opts.updateConfig {
		path := d.global.configPath
		if path == "" {
			path = "mpspatch.toml"
		}
		if abs, err := filepath.Abs(path); err == nil {
			m["update_config"] = abs
		}
	}
	return m
}

// resumeOptions fills in, from the saved state, the options the starting command was
// given and this one was not, and says so: `rebase --continue` as docs/authoring.md
// shows it re-exports the series and updates the config as `rebase --onto` was asked.
func resumeOptions(ctx context.Context, d *deps, g *gitcli.Git, opts *rebaseOptions) error {
	st, err := stack.InProgress(ctx, g, opts.tree)
	if err != nil || st == nil {
		return nil // Continue and Skip report a missing or refused state themselves
	}
	var used []string
	if dir := st.Resume["patches"]; dir != "" && opts.patches == "" {
		opts.patches = dir
		used = append(used, "--patches "+dir)
	}
	if st.Resume["no_export"] == "true" && !opts.noExport {
		opts.noExport = true
		used = append(used, "--no-export")
	}
	if cfg := st.Resume["update_config"]; cfg != "" && !opts.updateConfig {
		opts.updateConfig = true
		if d.global.configPath == "" {
			d.global.configPath = cfg
		}
		used = append(used, "--update-config ("+cfg+")")
	}
	if len(used) > 0 {
		d.printer().Progressf("rebase: as the rebase was started: %s", strings.Join(used, ", "))
	}
	return nil
}

// finishRebase re-exports the series and updates the config when asked.
func finishRebase(ctx context.Context, d *deps, opts *rebaseOptions, rep *rebaseReport) error {
	if !opts.noExport {
		if dir, err := d.seriesDirFor(&opts.treeOptions, "rebase"); err == nil && isDir(dir) {
			ex, err := stack.Export(ctx, authorGit(), stack.ExportOptions{Tree: opts.tree, Base: rep.Onto, Dir: dir})
			if err != nil {
				return fmt.Errorf("rebase: the branch is rebased, but re-exporting the series failed: %w", err)
			}
			rep.Export = ex
		}
	}
	if opts.updateConfig {
		path := d.global.configPath
		if path == "" {
			path = "mpspatch.toml"
		}
		name := opts.onto
		if name == "" { // --continue or --skip: the name --onto was given, from the state
			name = rep.OntoName
		}
		if err := setUpstreamCommit(path, rep.Onto, name); err != nil {
			return usageErrorf("rebase --update-config: %v", err)
		}
		rep.Config = path
	}
	return nil
}

var (
	commitLineRE = lazyregexp.New(`(?m)^(\s*commit\s*=\s*)"[^"]*"`)
	tagLineRE    = lazyregexp.New(`(?m)^(\s*tag\s*=\s*)"[^"]*"`)
	sectionRE    = lazyregexp.New(`(?m)^\s*\[([^\]]+)\]`)
)

// setUpstreamCommit rewrites upstream.commit (and upstream.tag when the new base was
// named by a tag) in the TOML file at path, keeping every other byte and comment.
func setUpstreamCommit(path, commit, name string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(data)
	start, end := -1, len(text)
	for _, m := range sectionRE().FindAllStringSubmatchIndex(text, -1) {
		sec := strings.TrimSpace(text[m[2]:m[3]])
		if start >= 0 {
			end = m[0]
			break
		}
		if sec == "upstream" {
			start = m[1]
		}
	}
	if start < 0 {
		return fmt.Errorf("%s has no [upstream] section; add one with commit = \"...\"", path)
	}
	sec := text[start:end]
	if !commitLineRE().MatchString(sec) {
		return fmt.Errorf("%s: [upstream] has no commit = \"...\" line", path)
	}
	sec = commitLineRE().ReplaceAllString(sec, `${1}"`+commit+`"`)
	if strings.HasPrefix(name, "v") && tagLineRE().MatchString(sec) {
		sec = tagLineRE().ReplaceAllString(sec, `${1}"`+name+`"`)
	}
	return atomicfile.WriteBytes(path, []byte(text[:start]+sec+text[end:]), atomicfile.Options{})
}

func rebaseError(err error) error {
	switch {
	case errors.Is(err, stack.ErrNoRebase), errors.Is(err, stack.ErrInProgress), errors.Is(err, stack.ErrBadState):
		return withCode(ExitUsage, err)
	case errors.Is(err, stack.ErrUnresolved):
		return withCode(ExitConflict, err)
	}
	return gitError(err)
}

var outcomeText = map[string]string{
	stack.OutcomeClean:    "clean",
	stack.OutcomeOffset:   "offset",
	stack.OutcomeMerged:   "merged (3-way)",
	stack.OutcomeResolved: "resolved by hand",
	stack.OutcomeEmpty:    "empty",
	stack.OutcomeSkipped:  "skipped",
}

func outcomeLine(o stack.PatchOutcome) string {
	s := outcomeText[o.Outcome]
	if o.Outcome == stack.OutcomeOffset {
		s = fmt.Sprintf("offset %d", o.Offset)
	}
	return s
}

func writeRebaseReport(w io.Writer, p *printer, rep *rebaseReport, markdown bool) {
	if markdown {
		writeRebaseMarkdown(w, rep)
		return
	}
	for _, o := range rep.Patches {
		c := green
		switch o.Outcome {
		case stack.OutcomeOffset, stack.OutcomeMerged, stack.OutcomeResolved:
			c = yellow
		case stack.OutcomeEmpty, stack.OutcomeSkipped:
			c = red
		}
		fmt.Fprintf(w, "  %-18s %s\n", p.Paint(c, outcomeLine(o)), o.Name)
		for _, rn := range o.Renamed {
			fmt.Fprintf(w, "      followed the upstream rename %s\n", rn)
		}
		if o.Outcome == stack.OutcomeEmpty {
			if o.Upstream != "" {
				fmt.Fprintf(w, "      upstream already has it (last touched by %s %s); propose dropping it\n", shortSHA(o.Upstream), o.UpstreamSubject)
			} else {
				fmt.Fprintf(w, "      upstream already has it; propose dropping it\n")
			}
		}
		if o.Changed {
			fmt.Fprintf(w, "      content changed:\n")
			for _, l := range strings.Split(o.RangeDiff, "\n") {
				fmt.Fprintf(w, "        %s\n", l)
			}
		}
	}
	switch {
	case rep.Stopped != nil:
		fmt.Fprintf(w, "%s at %s (%s)\n", p.Paint(red, "stopped"), rep.Stopped.Patch, rep.Stopped.Reason)
		for _, f := range rep.Stopped.Files {
			fmt.Fprintf(w, "  conflict: %s\n", f)
		}
		for _, in := range rep.Stopped.Intents {
			fmt.Fprintf(w, "  intent no longer holds: %s\n", in)
		}
		if rep.Stopped.Detail != "" {
			fmt.Fprintf(w, "  %s\n", rep.Stopped.Detail)
		}
	case rep.Done:
		fmt.Fprintf(w, "rebased %s onto %s (%s)\n", rep.Branch, rep.OntoName, shortSHA(rep.Onto))
		if rep.Export != nil {
			changed := 0
			for _, f := range rep.Export.Files {
				if f.Action != stack.Unchanged {
					changed++
				}
			}
			fmt.Fprintf(w, "re-exported %s: %s changed\n", rep.Export.Dir, plural(changed, "file"))
		}
		if rep.Config != "" {
			fmt.Fprintf(w, "updated upstream.commit in %s\n", rep.Config)
		}
	}
}

func writeRebaseMarkdown(w io.Writer, rep *rebaseReport) {
	fmt.Fprintf(w, "## Rebase of the series onto %s\n\n", rep.OntoName)
	fmt.Fprintf(w, "New base: `%s`\n\n", rep.Onto)
	fmt.Fprintf(w, "| patch | outcome | notes |\n|---|---|---|\n")
	for _, o := range rep.Patches {
		note := ""
		switch {
		case o.Outcome == stack.OutcomeEmpty && o.Upstream != "":
			note = fmt.Sprintf("upstream has it (`%s` %s); propose dropping", shortSHA(o.Upstream), strings.ReplaceAll(o.UpstreamSubject, "|", `\|`))
		case o.Outcome == stack.OutcomeEmpty:
			note = "upstream has it; propose dropping"
		case o.Changed:
			note = "content changed (below)"
		}
		if len(o.Renamed) > 0 {
			if note != "" {
				note += "; "
			}
			note += "followed the upstream rename " + strings.ReplaceAll(strings.Join(o.Renamed, ", "), "|", `\|`)
		}
		fmt.Fprintf(w, "| `%s` | %s | %s |\n", o.Name, outcomeLine(o), note)
	}
	for _, o := range rep.Patches {
		if o.Changed {
			fmt.Fprintf(w, "\n<details><summary><code>%s</code>: how its diff changed</summary>\n\n```diff\n%s\n```\n</details>\n", o.Name, o.RangeDiff)
		}
	}
	if rep.Stopped != nil {
		fmt.Fprintf(w, "\n**Stopped** at `%s` (%s).\n", rep.Stopped.Patch, rep.Stopped.Reason)
	}
}
