package verify

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
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
	log           bool // logarithmic y axis: batched throughput dwarfs the threaded curves
}

var chartMetrics = []metric{
	{"Throughput against threads", "forwards / s", func(s ScalingRow) float64 { return s.FPS }, true, true, true},
	{"Efficiency T(n) / (n·T(1))", "efficiency", func(s ScalingRow) float64 { return s.Efficiency }, false, false, false},
}

// ScalingCharts renders one inline SVG per metric (throughput, efficiency), each with a curve
// per model and target: patched solid, baseline dashed, batched dotted; throughput on a
// logarithmic axis. It returns nil when
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

// plottable keeps the chart to numbers a plot can hold: the rows come from a Python script
// (or an archived file) and may carry anything JSON can say.
func plottable(x, y float64, logY bool) bool {
	if x < 0 || x > 1e6 || math.IsNaN(y) || math.Abs(y) > 1e12 {
		return false
	}
	return !logY || y >= 1e-6
}

func scalingChart(rows []ScalingRow, m metric) (svg []byte, err error) {
	// gonum/plot panics on degenerate axes; a report must never take mpspatch down.
	defer func() {
		if r := recover(); r != nil {
			svg, err = nil, fmt.Errorf("chart: %v", r)
		}
	}()
	p := plot.New()
	p.Title.Text = m.title
	p.X.Label.Text = "threads (batched: batch multiple)"
	p.Y.Label.Text = m.ylabel
	p.Legend.Top = m.legendTop
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

	models := map[string]int{}
	var keys []seriesKey
	points := map[seriesKey]plotter.XYs{}
	minY, maxY := math.Inf(1), 0.0
	for _, r := range rows {
		mode := r.Mode
		if mode == "" {
			mode = "threads"
		}
		if mode == "batched" && !m.batched {
			continue
		}
		y := m.value(r)
		if !plottable(float64(r.Threads), y, m.log) {
			continue // a failed or absurd measurement: it stays in the tables only
		}
		if _, ok := models[r.Model]; !ok {
			models[r.Model] = len(models)
		}
		k := seriesKey{r.Model, r.Target, mode}
		if _, ok := points[k]; !ok {
			keys = append(keys, k)
		}
		points[k] = append(points[k], plotter.XY{X: float64(r.Threads), Y: y})
		minY, maxY = math.Min(minY, y), math.Max(maxY, y)
	}
	// One legend entry per model, on its patched threads curve when there is one: the line
	// styles are explained beside the chart.
	legendKey := map[string]seriesKey{}
	rank := func(k seriesKey) int {
		r := 0
		if k.mode == "batched" {
			r += 2
		}
		if k.target != TargetPatched {
			r++
		}
		return r
	}
	for _, k := range keys {
		if have, ok := legendKey[k.model]; !ok || rank(k) < rank(have) {
			legendKey[k.model] = k
		}
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
		switch {
		case k.mode == "batched":
			line.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
		case k.target == TargetBaseline:
			line.Dashes = []vg.Length{vg.Points(7), vg.Points(4)}
		}
		p.Add(line, dots)
		if legendKey[k.model] == k {
			p.Legend.Add(k.model, line, dots)
		}
	}
	p.X.Min = 0
	p.X.Max = maxX + 1
	switch {
	case m.log && maxY > 0:
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min = minY / 2
		p.Y.Max = maxY * 8 // headroom for the legend
	case m.ylabel == "efficiency":
		p.Y.Min = 0
		p.Y.Max = 1.2
		ideal := plotter.NewFunction(func(float64) float64 { return 1 })
		ideal.Color = color.Gray{0xb0}
		ideal.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(ideal)
	default:
		p.Y.Min = 0
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
