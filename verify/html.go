package verify

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
)

//go:embed report.html.tmpl
var reportTemplate string

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
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
	"join":   strings.Join,
	"secs":   func(f float64) string { return fmt.Sprintf("%.2fs", f) },
	"num":    func(f float64) string { return fmt.Sprintf("%.3g", f) },
	"fps":    func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"pct":    func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
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

type htmlData struct {
	*Report
	Status  string
	Rule    string
	Counts  map[string]string // target -> counts line
	Rows    []Row
	Targets []string
	Crashes []Result
	Charts  []template.HTML
	Curves  []CurveLabel
	Batched []ScalingRow
}

// WriteHTML writes the self-contained HTML report: environment and torch provenance first,
// then the verdict, the scaling charts (inline SVG drawn with gonum/plot), the crash table
// with signatures, and every test side by side per target. No script, no stylesheet or font
// is fetched: the file can be mailed or archived as CI output and opened offline.
func WriteHTML(w io.Writer, r *Report) error {
	d := htmlData{Report: r, Status: r.Status(), Rule: VerdictRule, Rows: r.Rows(),
		Targets: r.Targets(), Crashes: r.Crashes(), Curves: r.CurveLabels(), Counts: map[string]string{}}
	for _, t := range d.Targets {
		d.Counts[t] = CountsLine(r.Counts(t))
	}
	charts, err := ScalingCharts(r.ScalingRows)
	if err != nil {
		return err
	}
	for _, c := range charts {
		d.Charts = append(d.Charts, template.HTML(c)) // our own SVG, drawn from numbers
	}
	for _, s := range r.ScalingRows {
		if s.Mode == "batched" {
			d.Batched = append(d.Batched, s)
		}
	}
	return reportTmpl.Execute(w, d)
}
