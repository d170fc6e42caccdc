package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/internal/upstream"
)

// upstreamCheckOptions are check's flags for --upstream.
type upstreamCheckOptions struct {
	refs   []string
	url    string
	format string
}

// checkUpstream fills rep.Upstream with each patch's outcome at each --upstream REF,
// fetching into the cache only what the series touches.
func checkUpstream(ctx context.Context, d *deps, s *series.Series, opts *checkOptions, rep *checkReport) (int, error) {
	cfg, err := d.config()
	if err != nil {
		return 0, err
	}
	url := opts.upstream.url
	if url == "" {
		url = cfg.Upstream.URL
	}
	dir, err := upstream.DefaultDir()
	if err != nil {
		return 0, err
	}
	p := d.printer()
	cache := &upstream.Cache{Dir: dir}
	res, err := cache.Check(ctx, upstream.CheckOptions{
		URL: url, Refs: opts.upstream.refs, Base: cfg.Upstream.Commit, Series: s,
		Progress: func(line string) { p.Progressf("check: %s", line) },
	})
	if err != nil {
		return 0, upstreamError(err)
	}
	rep.Upstream = res
	for _, w := range res.Warnings {
		p.Warnf("%s", w)
	}
	if !res.AllApply() {
		return ExitConflict, nil
	}
	return ExitOK, nil
}

// upstreamError maps the cache's failures: a bad URL is a usage error, no git an
// unsupported environment.
func upstreamError(err error) error {
	var ue *gitcli.URLError
	if errors.As(err, &ue) {
		return withCode(ExitUsage, err)
	}
	return gitError(err)
}

func paintCell(p *printer, c upstream.Cell) string {
	switch c.Outcome {
	case upstream.Exact:
		return p.Paint(green, c.String())
	case upstream.Offset, upstream.ThreeWay, upstream.Absorbed:
		return p.Paint(yellow, c.String())
	}
	return p.Paint(red, c.String())
}

// writeUpstreamText writes the table: one row per patch, one column per REF.
func writeUpstreamText(w io.Writer, p *printer, rep *upstream.Report) {
	fmt.Fprintf(w, "upstream %s\n", rep.URL)
	// Pad by the plain text's width so that colour codes do not skew the columns.
	width := make([]int, len(rep.Columns)+1)
	width[0] = len("patch")
	for _, n := range rep.Patches {
		width[0] = max(width[0], len(n))
	}
	for j, c := range rep.Columns {
		width[j+1] = max(len(c.Ref), len(shortSHA(c.Commit)))
		for _, cell := range c.Cells {
			width[j+1] = max(width[j+1], len(cell.String()))
		}
	}
	row := func(first string, cells []string, plain []string) {
		line := fmt.Sprintf("%-*s", width[0], first)
		for j, cell := range cells {
			line += "  " + cell + strings.Repeat(" ", width[j+1]-len(plain[j]))
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	var refs, shas []string
	for _, c := range rep.Columns {
		refs = append(refs, c.Ref)
		shas = append(shas, shortSHA(c.Commit))
	}
	row("patch", refs, refs)
	row("", shas, shas)
	for i, name := range rep.Patches {
		var painted, plain []string
		for _, c := range rep.Columns {
			painted = append(painted, paintCell(p, c.Cells[i]))
			plain = append(plain, c.Cells[i].String())
		}
		row(name, painted, plain)
	}
	for _, c := range rep.Columns {
		for i, cell := range c.Cells {
			switch cell.Outcome {
			case upstream.Conflict, upstream.Missing:
				where := cell.File
				if cell.Hunk > 0 {
					where = fmt.Sprintf("%s hunk %d/%d", cell.File, cell.Hunk, cell.Hunks)
				}
				fmt.Fprintf(w, "%s %s: %s: %s: %s\n", paintCell(p, cell), c.Ref, rep.Patches[i], where, cell.Reason)
			}
		}
	}
	switch {
	case len(rep.Columns) == 0:
	case rep.AllApply():
		fmt.Fprintf(w, "the series applies to %s\n", refList(rep))
	default:
		fmt.Fprintln(w, "3-way needed: apply refuses it, a rebase of the series merges it; absorbed: upstream holds the change, drop the patch")
	}
}

// writeUpstreamMarkdown writes the table as GitHub-flavoured Markdown, for issues and
// pull-request comments.
func writeUpstreamMarkdown(w io.Writer, rep *upstream.Report) {
	fmt.Fprintf(w, "Series check against `%s`\n\n", rep.URL)
	fmt.Fprint(w, "| patch |")
	for _, c := range rep.Columns {
		fmt.Fprintf(w, " %s (`%s`) |", mdEscape(c.Ref), shortSHA(c.Commit))
	}
	fmt.Fprint(w, "\n|---|")
	for range rep.Columns {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for i, name := range rep.Patches {
		fmt.Fprintf(w, "| `%s` |", name)
		for _, c := range rep.Columns {
			cell := c.Cells[i]
			text := cell.String()
			switch cell.Outcome {
			case upstream.Exact, upstream.Offset:
				text = "✅ " + text
			case upstream.ThreeWay, upstream.Absorbed:
				text = "⚠️ " + text
			default:
				text = "❌ " + text
			}
			fmt.Fprintf(w, " %s |", mdEscape(text))
		}
		fmt.Fprintln(w)
	}
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func refList(rep *upstream.Report) string {
	var refs []string
	for _, c := range rep.Columns {
		refs = append(refs, c.Ref)
	}
	return strings.Join(refs, ", ")
}
