package verify

import (
	"bytes"
	"fmt"
	"image/color"
	"regexp"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// SeriesColors are the curve colours, one per model in order of appearance. The HTML test
// looks for the first one in a screenshot, so the page's own CSS must not use them.
var SeriesColors = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0xff, 0x7f, 0x0e, 0xff}, // orange
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0x94, 0x67, 0xbd, 0xff}, // purple
	{0x8c, 0x56, 0x4b, 0xff}, // brown
	{0x17, 0xbe, 0xcf, 0xff}, // cyan
}

// metric picks the y value of a chart from a scaling row.
type metric struct {
	title, ylabel string
	value         func(ScalingRow) float64
	batched       bool // also draw the batched rows (same total work in one call)
	legendTop     bool // where the curves are not: throughput rises, efficiency falls
}

var chartMetrics = []metric{
	{"Throughput against threads", "forwards / s", func(s ScalingRow) float64 { return s.FPS }, true, true},
	{"Efficiency T(n) / (n·T(1))", "efficiency", func(s ScalingRow) float64 { return s.Efficiency }, false, false},
}

// ScalingCharts renders one inline SVG per metric (throughput, efficiency), each with a curve
// per model and target: patched solid, baseline dashed, batched dotted. It returns nil when
// there are no scaling rows. The SVG has no XML prolog and no namespace URLs, so it can be
// placed inside HTML as is and the page references nothing outside itself.
func ScalingCharts(rows []ScalingRow) ([][]byte, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	var out [][]byte
	for _, m := range chartMetrics {
		svg, err := scalingChart(rows, m)
		if err != nil {
			return nil, fmt.Errorf("draw %s chart: %w", m.ylabel, err)
		}
		out = append(out, svg)
	}
	return out, nil
}

type seriesKey struct{ model, target, mode string }

func scalingChart(rows []ScalingRow, m metric) ([]byte, error) {
	p := plot.New()
	p.Title.Text = m.title
	p.X.Label.Text = "threads"
	p.Y.Label.Text = m.ylabel
	p.Y.Min = 0
	p.Legend.Top = m.legendTop
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

	models := map[string]int{}
	var keys []seriesKey
	points := map[seriesKey]plotter.XYs{}
	for _, r := range rows {
		mode := r.Mode
		if mode == "" {
			mode = "threads"
		}
		if mode == "batched" && !m.batched {
			continue
		}
		if _, ok := models[r.Model]; !ok {
			models[r.Model] = len(models)
		}
		k := seriesKey{r.Model, r.Target, mode}
		if _, ok := points[k]; !ok {
			keys = append(keys, k)
		}
		points[k] = append(points[k], plotter.XY{X: float64(r.Threads), Y: m.value(r)})
	}
	var maxX float64
	for _, k := range keys {
		xys := points[k]
		sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
		for _, xy := range xys {
			maxX = max(maxX, xy.X)
		}
		line, dots, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		c := SeriesColors[models[k.model]%len(SeriesColors)]
		line.Color = c
		line.Width = vg.Points(2)
		dots.Color = c
		dots.Radius = vg.Points(2.5)
		dots.Shape = draw.CircleGlyph{}
		name := k.model + " " + k.target
		switch {
		case k.mode == "batched":
			line.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
			name += " (batched)"
		case k.target == TargetBaseline:
			line.Dashes = []vg.Length{vg.Points(7), vg.Points(4)}
		}
		p.Add(line, dots)
		p.Legend.Add(name, line, dots)
	}
	p.X.Min = 0
	p.X.Max = maxX + 1
	if m.ylabel == "efficiency" {
		p.Y.Max = 1.2
		ideal := plotter.NewFunction(func(float64) float64 { return 1 })
		ideal.Color = color.Gray{0xb0}
		ideal.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(ideal)
	}

	c := vgsvg.NewWith(vgsvg.UseWH(5.6*vg.Inch, 3.6*vg.Inch))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return inlineSVG(buf.Bytes()), nil
}

var (
	svgProlog = regexp.MustCompile(`(?s)^.*?(<svg\b)`)
	svgXMLNS  = regexp.MustCompile(`\s+xmlns(:\w+)?="[^"]*"`)
)

// inlineSVG strips what a standalone SVG file needs and inline SVG in HTML does not: the XML
// declaration, the generator comment and the namespace declarations (their values are URLs,
// and the report promises no URL at all).
func inlineSVG(b []byte) []byte {
	b = svgProlog.ReplaceAll(b, []byte("$1"))
	if i := bytes.Index(b, []byte(">")); i > 0 {
		head := svgXMLNS.ReplaceAll(b[:i], nil)
		b = append(append([]byte(nil), head...), b[i:]...)
	}
	return b
}
