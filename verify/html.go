package verify

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
)

//go:embed report.html.tmpl
var reportTemplate string

// reportTmpl is parsed on first use: parsing it at package initialisation cost every
// mpspatch command (apply, status, ...) the time, although only verify writes HTML.
var reportTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"gil": func(g *bool) string {
			switch {
			case g == nil:
				return "unknown"
			case *g:
				return "enabled"
			default:
				return "disabled (free-threaded)"
			}
		},
		"reason": signatureReason,
		// torch.version.git_version is "Unknown" in builds that did not record it (Debian's).
		"knownGit":  func(g string) bool { return g != "" && !strings.EqualFold(g, "unknown") },
		"hasTarget": func(targets []string, t string) bool { return slices.Contains(targets, t) },
		"join":      strings.Join,
		"secs":      func(f float64) string { return fmt.Sprintf("%.2fs", f) },
		"num":       func(f float64) string { return fmt.Sprintf("%.3g", f) },
		"fps":       func(f float64) string { return fmt.Sprintf("%.1f", f) },
		"pct":       func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
		"ints": func(v []int) string {
			if len(v) == 0 {
				return "suite default"
			}
			return joinInts(v)
		},
		"verdict": func(row Row, target string) *Verdict {
			if v, ok := row.ByTarget[target]; ok {
				return &v
			}
			return nil
		},
	}).Parse(reportTemplate))
})

type htmlData struct {
	*Report
	Status  string
	Rule    string
	Counts  map[string]string // target -> counts line
	Rows    []Row
	Targets []string
	Crashes []Result
	Charts  []template.HTML
	// ChartError says why the charts are missing although there are scaling rows.
	ChartError string
	Curves     []CurveLabel
	Batched    []batchedRow
	Batches    []int // the batch multiples measured, the columns of the batched table
}

// batchedRow is one model's batched throughput by batch multiple.
type batchedRow struct {
	Target, Model string
	FPS           []string // one cell per htmlData.Batches entry; "" when not measured
}

// writeHTML writes the self-contained HTML report: environment and torch provenance first,
// then the verdict, the scaling charts (inline SVG that chart.go draws itself, no plotting
// library), the crash table with signatures, and every test side by side per target. No
// script, no stylesheet or font is fetched: the file can be mailed or archived as CI
// output and opened offline.
func writeHTML(w io.Writer, r *Report) error {
	d := htmlData{Report: r, Status: r.Status(), Rule: VerdictRule, Rows: r.Rows(),
		Targets: r.Targets(), Crashes: r.Crashes(), Curves: r.CurveLabels(), Counts: map[string]string{}}
	for _, t := range d.Targets {
		d.Counts[t] = CountsLine(r.Counts(t))
	}
	charts, err := scalingCharts(r.ScalingRows)
	if err != nil {
		d.ChartError = err.Error() // the tables still tell the numbers
	}
	for _, c := range charts {
		d.Charts = append(d.Charts, template.HTML(c)) // our own SVG, drawn from numbers
	}
	d.Batches, d.Batched = batchedTable(r.ScalingRows)
	return reportTmpl().Execute(w, d)
}

// batchedTable pivots the batched rows: one row per target and model, one column per batch.
func batchedTable(rows []ScalingRow) ([]int, []batchedRow) {
	seen := map[int]bool{}
	var cols []int
	type key struct{ t, m string }
	idx := map[key]int{}
	var out []batchedRow
	vals := map[key]map[int]float64{}
	for _, s := range rows {
		if s.Mode != "batched" {
			continue
		}
		if !seen[s.Threads] {
			seen[s.Threads] = true
			cols = append(cols, s.Threads)
		}
		k := key{s.Target, s.Model}
		if _, ok := idx[k]; !ok {
			idx[k] = len(out)
			out = append(out, batchedRow{Target: s.Target, Model: s.Model})
			vals[k] = map[int]float64{}
		}
		vals[k][s.Threads] = s.FPS
	}
	sort.Ints(cols)
	for i := range out {
		k := key{out[i].Target, out[i].Model}
		for _, c := range cols {
			cell := ""
			if v, ok := vals[k][c]; ok {
				cell = fmt.Sprintf("%.1f", v)
			}
			out[i].FPS = append(out[i].FPS, cell)
		}
	}
	return cols, out
}
