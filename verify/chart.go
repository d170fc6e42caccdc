package verify

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"math"
	"slices"
	"sort"
	"strconv"
)

// The charts are drawn here as plain SVG rather than with a plotting library. gonum/plot
// drew them before, and its fonts, LaTeX renderer and their package initialisers were
// linked into every mpspatch command (about a third of the binary and of the start-up
// time of `apply`), for two line charts. What the report needs is small and fixed: a log2
// thread axis labelled at every measured count, a linear or log10 value axis, one polyline
// per curve, a legend beside the data, and the page's own font.

// seriesColors are the curve colours, one per model in order of appearance. The HTML test
// looks for the first one in a screenshot, so the page's own CSS must not use them.
var seriesColors = []color.RGBA{
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
	batched       bool    // also draw the batched rows (same total work in one call)
	log           bool    // logarithmic y axis: batched throughput dwarfs the threaded curves
	ideal         float64 // a dashed reference line at this y (0: none)
}

var chartMetrics = []metric{
	{"Throughput against threads", "forwards / s", func(s ScalingRow) float64 { return s.FPS }, true, true, 0},
	{"Efficiency T(n) / (n·T(1))", "efficiency", func(s ScalingRow) float64 { return s.Efficiency }, false, false, 1},
}

// scalingCharts renders one inline SVG per metric (throughput, efficiency), each with a curve
// per model and target: patched solid, baseline dashed, batched dotted; throughput on a
// logarithmic axis. It returns nil when there are no scaling rows. The SVG has no XML prolog
// and no namespace URLs, so it can be placed inside HTML as is and the page references
// nothing outside itself. Text inherits the page's font.
func scalingCharts(rows []ScalingRow) ([][]byte, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	var out [][]byte
	for _, m := range chartMetrics {
		out = append(out, scalingChart(rows, m))
	}
	return out, nil
}

type seriesKey struct{ model, target, mode string }

type point struct{ x, y float64 }

// plottable keeps the chart to numbers a plot can hold: the rows come from a Python script
// (or an archived file) and may carry anything JSON can say.
func plottable(x, y float64, logY bool) bool {
	if x < 1 || x > 1e6 || math.IsNaN(y) || math.IsInf(y, 0) || math.Abs(y) > 1e12 {
		return false
	}
	return !logY || y >= 1e-6
}

// Chart geometry, in SVG user units (the page scales the whole chart).
const (
	chartW, chartH                 = 550.0, 340.0
	plotL, plotT, plotR, plotB     = 60.0, 34.0, chartW - 160, chartH - 46 // the data area
	legendX                        = plotR + 12
	tickLen                        = 4.0
	dashBatched, dashBaseline      = "2 3", "7 4"
	gridColour, axisColour, txtCol = "#e6e6e6", "#555", "#333"
)

func scalingChart(rows []ScalingRow, m metric) []byte {
	models := map[string]int{}
	var order []string
	var keys []seriesKey
	points := map[seriesKey][]point{}
	xs := map[float64]bool{}
	minY, maxY := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		mode := r.Mode
		if mode == "" {
			mode = "threads"
		}
		if mode == "batched" && !m.batched {
			continue
		}
		x, y := float64(r.Threads), m.value(r)
		if !plottable(x, y, m.log) {
			continue // a failed or absurd measurement: it stays in the tables only
		}
		if _, ok := models[r.Model]; !ok {
			models[r.Model] = len(models)
			order = append(order, r.Model)
		}
		k := seriesKey{r.Model, r.Target, mode}
		if _, ok := points[k]; !ok {
			keys = append(keys, k)
		}
		points[k] = append(points[k], point{x, y})
		xs[x] = true
		minY, maxY = math.Min(minY, y), math.Max(maxY, y)
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%s">`,
		chartW, chartH, chartW, chartH, html.EscapeString(m.title))
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="#fff"/>`, chartW, chartH)
	fmt.Fprintf(&b, `<text x="%g" y="20" text-anchor="middle" font-size="14" font-weight="600" fill="%s">%s</text>`,
		(plotL+plotR)/2, txtCol, html.EscapeString(m.title))
	if len(keys) == 0 {
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle" fill="%s">no measurement to draw</text></svg>`,
			(plotL+plotR)/2, (plotT+plotB)/2, txtCol)
		return b.Bytes()
	}

	xaxis := newLog2Axis(xs)
	yaxis := newValueAxis(minY, maxY, m)
	// Grid and ticks first, so that the curves are drawn over them.
	for _, t := range xaxis.ticks {
		px := xaxis.pos(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="%s"/>`, px, plotT, px, plotB, gridColour)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="%s"/>`, px, plotB, px, plotB+tickLen, axisColour)
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle" font-size="11" fill="%s">%s</text>`, px, plotB+16, txtCol, formatTick(t))
	}
	for _, t := range yaxis.ticks {
		py := yaxis.pos(t)
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="%s"/>`, plotL, py, plotR, py, gridColour)
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="%s"/>`, plotL-tickLen, py, plotL, py, axisColour)
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end" dominant-baseline="middle" font-size="11" fill="%s">%s</text>`,
			plotL-tickLen-3, py, txtCol, formatTick(t))
	}
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="%s"/>`, plotL, plotT, plotR-plotL, plotB-plotT, axisColour)
	xlabel := "threads, log₂ scale"
	if m.batched && slices.ContainsFunc(rows, func(s ScalingRow) bool { return s.Mode == "batched" }) {
		xlabel = "threads (batched: batch multiple), log₂ scale"
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle" font-size="12" fill="%s">%s</text>`,
		(plotL+plotR)/2, chartH-14, txtCol, xlabel)
	fmt.Fprintf(&b, `<text transform="translate(16 %g) rotate(-90)" text-anchor="middle" font-size="12" fill="%s">%s</text>`,
		(plotT+plotB)/2, txtCol, html.EscapeString(m.ylabel+axisNote(m)))
	if m.ideal > 0 && m.ideal >= yaxis.min && m.ideal <= yaxis.max {
		py := yaxis.pos(m.ideal)
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#b0b0b0" stroke-width="1.5" stroke-dasharray="3 3"/>`, plotL, py, plotR, py)
	}

	for _, k := range keys {
		pts := points[k]
		sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		c := colourHex(seriesColors[models[k.model]%len(seriesColors)])
		dash := ""
		switch {
		case k.mode == "batched":
			dash = ` stroke-dasharray="` + dashBatched + `"`
		case k.target == TargetBaseline:
			dash = ` stroke-dasharray="` + dashBaseline + `"`
		}
		b.WriteString(`<polyline fill="none" stroke-width="2" stroke="` + c + `"` + dash + ` points="`)
		for i, p := range pts {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", xaxis.pos(p.x), yaxis.pos(p.y))
		}
		b.WriteString(`"/>`)
		for _, p := range pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`, xaxis.pos(p.x), yaxis.pos(p.y), c)
		}
	}

	// The legend sits to the right of the data area, never over a curve: one entry per
	// model, then what the line styles mean.
	y := plotT + 6
	for _, model := range order {
		c := colourHex(seriesColors[models[model]%len(seriesColors)])
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"/>`, legendX, y, legendX+22, y, c)
		fmt.Fprintf(&b, `<circle cx="%g" cy="%g" r="2.5" fill="%s"/>`, legendX+11, y, c)
		fmt.Fprintf(&b, `<text x="%g" y="%g" dominant-baseline="middle" font-size="11" fill="%s">%s</text>`, legendX+28, y, txtCol, html.EscapeString(clip(model, 19)))
		y += 17
	}
	y += 6
	// Only the styles drawn: a legend that lists a baseline when none ran misleads.
	styles := [][2]string{{"", "patched"}}
	if slices.ContainsFunc(rows, func(s ScalingRow) bool { return s.Target == TargetBaseline }) {
		styles = append(styles, [2]string{dashBaseline, "baseline"})
	}
	if m.batched && slices.ContainsFunc(rows, func(s ScalingRow) bool { return s.Mode == "batched" }) {
		styles = append(styles, [2]string{dashBatched, "batched"})
	}
	for _, s := range styles {
		dash := ""
		if s[0] != "" {
			dash = ` stroke-dasharray="` + s[0] + `"`
		}
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#666" stroke-width="2"%s/>`, legendX, y, legendX+22, y, dash)
		fmt.Fprintf(&b, `<text x="%g" y="%g" dominant-baseline="middle" font-size="11" fill="#666">%s</text>`, legendX+28, y, s[1])
		y += 17
	}
	b.WriteString(`</svg>`)
	return b.Bytes()
}

func axisNote(m metric) string {
	if m.log {
		return ", log scale"
	}
	return ""
}

// axis maps data values to SVG coordinates.
type axis struct {
	min, max   float64 // in data units
	log        bool    // log10 (y) or log2 (x) spacing: positions use the log of the value
	from, to   float64 // SVG coordinates of min and max
	ticks      []float64
	logOfValue func(float64) float64
}

func (a axis) pos(v float64) float64 {
	f := func(v float64) float64 { return v }
	if a.log {
		f = a.logOfValue
	}
	lo, hi := f(a.min), f(a.max)
	if hi == lo {
		return (a.from + a.to) / 2
	}
	return a.from + (f(v)-lo)/(hi-lo)*(a.to-a.from)
}

// newLog2Axis spaces thread counts by octaves and puts a tick at every measured count, so
// 1, 2, 4, 8, 16 (and 3 or 12, when measured) are each labelled.
func newLog2Axis(xs map[float64]bool) axis {
	var ticks []float64
	for x := range xs {
		ticks = append(ticks, x)
	}
	sort.Float64s(ticks)
	// Keep labels from overlapping: drop a tick closer than a fifth of an octave to the
	// one before it (only a dense, unusual matrix has such counts).
	kept := ticks[:0]
	for _, t := range ticks {
		if len(kept) == 0 || math.Log2(t)-math.Log2(kept[len(kept)-1]) >= 0.2 {
			kept = append(kept, t)
		}
	}
	lo, hi := ticks[0], ticks[len(ticks)-1]
	return axis{min: lo / math.Sqrt2, max: hi * math.Sqrt2, log: true, from: plotL, to: plotR, ticks: kept, logOfValue: math.Log2}
}

// newValueAxis is the y axis: log10 with ticks at 1, 2, 5 × 10^k for throughput, linear
// from 0 for efficiency (up to 1.2 so the ideal line shows) and anything else.
func newValueAxis(minY, maxY float64, m metric) axis {
	a := axis{from: plotB, to: plotT, log: m.log, logOfValue: math.Log10}
	if m.log {
		a.min = math.Pow(10, math.Floor(math.Log10(minY)))
		a.max = math.Pow(10, math.Ceil(math.Log10(maxY)))
		if a.max <= a.min {
			a.max = a.min * 10
		}
		decades := math.Log10(a.max / a.min)
		for e := math.Log10(a.min); e <= math.Log10(a.max)+1e-9; e++ {
			base := math.Pow(10, e)
			for _, f := range []float64{1, 2, 5} {
				v := base * f
				if v > a.max*(1+1e-9) || (f != 1 && decades > 4) {
					continue
				}
				a.ticks = append(a.ticks, v)
			}
		}
		return a
	}
	a.min, a.max = 0, math.Max(maxY, 0)
	if m.ideal > 0 {
		a.max = math.Max(a.max, m.ideal*1.2)
	}
	if a.max == 0 {
		a.max = 1
	}
	step := niceStep(a.max / 5)
	a.max = math.Ceil(a.max/step) * step
	for v := 0.0; v <= a.max+step/2; v += step {
		a.ticks = append(a.ticks, v)
	}
	return a
}

// niceStep rounds a raw tick step up to 1, 2 or 5 × 10^k.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsInf(raw, 0) || math.IsNaN(raw) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, f := range []float64{1, 2, 5, 10} {
		if raw <= f*p {
			return f * p
		}
	}
	return 10 * p
}

// formatTick writes a tick value short: 16, 0.2, 2k, 1.5M.
func formatTick(v float64) string {
	switch av := math.Abs(v); {
	case av >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case av >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func colourHex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
