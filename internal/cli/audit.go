package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/metalcheck"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
	"github.com/mpspatch/mpspatch/patches"
)

// auditGCPercent is the GOGC the audit runs with (see runAudit).
const auditGCPercent = 400

type auditOptions struct {
	tree          string
	format        string
	baseline      string
	writeBaseline string
	workers       int
	paths         []string
}

func newAuditCmd(d *deps) *cobra.Command {
	opts := &auditOptions{}
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Statically audit the MPS sources for thread-safety hazards",
		Long: `Scan the MPS sources of a PyTorch tree (.h, .mm, .cpp) for thread-safety hazards:
lazy singletons, unguarded shared containers, unlocked lazy initialisation, command-buffer
state touched off the stream's queue, default-stream synchronisation, process-wide locks
on the hot path, disabled code, locks held across GPU waits, device-wide
synchronisation that waits for one stream, waits inside a stream's queue block, counters
changed under locks that are not one lock, pooled signal counters reset on reuse and
encoders fetched outside the block that uses them (rules MPS001..MPS013, see
docs/audit.md).

The tree is the argument (or --tree), as for every command; with neither, the checkout
holding the current directory. --path PATH (repeatable) audits those directories or
files of the tree instead of the [audit] paths of the config; PATHs are relative to the
tree.
A baseline file lists accepted findings, each with a reason: only findings not in it fail
the audit. --write-baseline writes one whose reasons are "TODO: explain", which the loader
rejects until each is replaced by a real reason.

Exit status: 0 no new findings, 1 new findings, 2 bad flags or baseline file.`,
		Example: `  mpspatch audit ~/src/pytorch
  mpspatch audit ~/src/pytorch --format sarif > audit.sarif
  mpspatch audit ~/src/pytorch --write-baseline audit-baseline.toml
  mpspatch audit ~/src/pytorch --baseline audit-baseline.toml --path aten/src/ATen/mps`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAudit(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.tree, "tree", ".", treeFlagHelp)
	f.StringVar(&opts.format, "format", "", "output format: text, json or sarif (default text; json with --json)")
	f.StringVar(&opts.baseline, "baseline", "", "baseline file of accepted findings (default: [audit] baseline of the config, else the built-in series' own)")
	f.StringVar(&opts.writeBaseline, "write-baseline", "", "write all current findings to this baseline file (reasons to be filled in) and exit 0")
	f.StringArrayVar(&opts.paths, "path", nil, "audit this directory or file of the tree (relative to it; repeatable) instead of the config's [audit] paths")
	f.IntVar(&opts.workers, "workers", 0, "files analysed in parallel (0: one per CPU)")
	return cmd
}

// auditReport is what an audit found, after the baseline.
type auditReport struct {
	metalcheck.Result
	// Reasons are the baseline's reasons by fingerprint, for SARIF's suppressions.
	Reasons map[string]string
	// BaselineWritten: --write-baseline wrote the findings there; there is no result.
	BaselineWritten string
}

func runAudit(ctx context.Context, d *deps, opts *auditOptions) error {
	format, err := d.outputFormat(opts.format, auditFormats)
	if err != nil {
		return err
	}
	rep, err := audit(ctx, d, opts)
	if err != nil {
		return err
	}
	return writeAudit(d.printer(), format, rep)
}

// writeAudit renders the audit's result on stdout in format (text, json or sarif); new
// findings are exit 1, the result having said which.
func writeAudit(p *printer, format resultFormat, rep *auditReport) error {
	if rep.BaselineWritten != "" {
		return nil
	}
	var err error
	switch format {
	case formatJSON:
		err = p.RawResult(func(w io.Writer) error { return metalcheck.WriteJSON(w, rep.Result) })
	case formatSARIF:
		err = p.RawResult(func(w io.Writer) error { return metalcheck.WriteSARIF(w, rep.Result, rep.Reasons) })
	default:
		err = metalcheck.WriteText(p.out, rep.Result) // one write: see WriteText
	}
	if err != nil {
		return err
	}
	if len(rep.New) > 0 {
		return &silentError{code: ExitCheckFailed}
	}
	return nil
}

// audit does the work of `mpspatch audit`, with its progress and warnings on d's stderr,
// and returns what it found; writeAudit shows it.
func audit(ctx context.Context, d *deps, opts *auditOptions) (*auditReport, error) {
	if opts.workers < 0 {
		return nil, usageErrorf("--workers %d: must not be negative", opts.workers)
	}
	if opts.baseline != "" && opts.writeBaseline != "" {
		return nil, usageErrorf("--baseline and --write-baseline do not go together")
	}
	c, err := d.config()
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(opts.tree)
	if err != nil || !fi.IsDir() {
		return nil, usageErrorf("--tree %s: not a directory", opts.tree)
	}
	paths := opts.paths
	if len(paths) == 0 {
		// Configured paths that this tree lacks are skipped with a warning (a partial
		// checkout); paths named on the command line must exist.
		for _, cp := range c.Audit.Paths {
			if _, err := os.Stat(filepath.Join(opts.tree, cp)); err == nil {
				paths = append(paths, cp)
			} else {
				d.printer().Warnf("audit: %s is not in %s; skipped", cp, opts.tree)
			}
		}
		if len(paths) == 0 {
			return nil, usageErrorf("audit: none of the configured paths (%s) exist in %s; audit takes the tree as its argument (--path PATH audits part of it)", strings.Join(c.Audit.Paths, ", "), opts.tree)
		}
	}
	baselinePath := opts.baseline
	if baselinePath == "" && opts.writeBaseline == "" && c.Audit.Baseline != "" {
		baselinePath = c.Audit.Baseline
		if !filepath.IsAbs(baselinePath) && c.Path != "" {
			baselinePath = filepath.Join(filepath.Dir(c.Path), baselinePath)
		}
	}
	var base *metalcheck.Baseline
	builtin := false
	switch {
	case baselinePath != "":
		base, err = metalcheck.LoadBaseline(baselinePath)
		if err != nil {
			return nil, withCode(ExitUsage, err)
		}
	case opts.writeBaseline == "" && c.Patches.Dir == "":
		// The built-in series carries the baseline of the code it produces.
		baselinePath, builtin = "(built-in series) "+patches.AuditBaseline, true
		data, rerr := fs.ReadFile(patches.FS, patches.AuditBaseline)
		if rerr == nil {
			base, err = metalcheck.ParseBaseline(baselinePath, data)
		}
		if err = errors.Join(rerr, err); err != nil {
			return nil, fmt.Errorf("built-in audit baseline: %w", err)
		}
	}

	p := d.printer()
	p.Progressf("auditing %s in %s", strings.Join(paths, ", "), opts.tree)
	// The audit allocates a few times the source it reads, nearly all of it per-file
	// garbage, while the live heap stays small: with the default GOGC the collector runs
	// a dozen times on the MPS sources, about a tenth of the audit's CPU. A higher target
	// trades a few MB of peak memory for those collections (docs/performance.md).
	defer debug.SetGCPercent(debug.SetGCPercent(auditGCPercent))
	rep, err := metalcheck.Audit(ctx, metalcheck.Options{Root: opts.tree, Paths: paths, Workers: opts.workers})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, withCode(ExitUsage, err)
	}

	if opts.writeBaseline != "" {
		var buf bytes.Buffer
		if err := metalcheck.WriteBaseline(&buf, rep.Findings); err != nil {
			return nil, err
		}
		if err := atomicfile.WriteBytes(opts.writeBaseline, buf.Bytes(), atomicfile.Options{}); err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("write baseline: %w", err))
		}
		p.Progressf("wrote %s to %s; replace each %q with the reason it is accepted",
			plural(len(rep.Findings), "finding"), opts.writeBaseline, metalcheck.TODOReason)
		return &auditReport{BaselineWritten: opts.writeBaseline}, nil
	}

	res := base.Apply(rep.Files, rep.Findings)
	if builtin {
		// The built-in baseline describes the patched v2.9.1 files; on any other tree its
		// entries are not stale, they are simply about code this tree does not have.
		res.Stale = res.Stale[:0]
	}
	for _, e := range res.Stale {
		p.Warnf("baseline %s:%d: %s in %s matches no finding any more; remove the entry", baselinePath, e.Line, e.Rule, e.File)
	}
	return &auditReport{Result: res, Reasons: base.Reasons()}, nil
}
