package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/cmdline"
)

// runBenchPlot runs `quarry bench plot REPORT.json`: the report's latency
// plot, as SVG, to out.
func runBenchPlot(args []string, out io.Writer) error {
	fs := cmdline.NewFlagSet("bench plot", "REPORT.json", "Writes the latency plot of a quarry bench report (--out) as SVG to stdout:\nlatency by percentile, one line per setup, log scales, a panel per loop.\n\n  quarry bench plot report.json > docs/bench-latency.svg")
	title := fs.String("title", "", "the plot's title (default: from the report)")
	pos, err := cmdline.Parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	rep, err := loadBenchReport(pos[0])
	if err != nil {
		return api.BadRequest("%v", err)
	}
	bw := bufio.NewWriter(out)
	if err := plotBenchSVG(bw, rep, *title); err != nil {
		return err
	}
	return bw.Flush()
}

// Plot geometry, in SVG user units.
const (
	plotWidth   = 960
	panelHeight = 400
	plotLeft    = 80
	plotRight   = 230 // the legend's room
	plotTop     = 70
	panelGap    = 40
	plotBottom  = 50
)

// plotColors tell the setups apart (colour-blind safe, Okabe–Ito).
var plotColors = []string{"#0072B2", "#56B4E9", "#D55E00", "#CC79A7", "#009E73", "#E69F00", "#000000", "#F0E442"}

// xmlText escapes s for SVG text and attributes.
func xmlText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// plotBenchSVG draws a report: a panel per loop, latency (log) against
// percentile (log of 1/(1-q): 90%, 99%, 99.9%… equally spaced), one line
// per setup, the last point of each its maximum.
func plotBenchSVG(w io.Writer, rep *benchReport, title string) error {
	type series struct {
		name       string
		color      string
		points     []benchPoint
		count      int64
		overloaded bool
	}
	type panel struct {
		title  string
		series []series
	}
	var panels []panel
	for _, loop := range []string{loopOpen, loopClosed} {
		p := panel{}
		if loop == loopOpen {
			p.title = fmt.Sprintf("open loop: %g queries/s, latency from each query's scheduled send time", rep.Config.Rate)
		} else {
			p.title = fmt.Sprintf("closed loop: %d concurrent callers (maximum throughput)", rep.Config.Concurrency)
		}
		for i, s := range rep.Setups {
			run := s.Open
			if loop == loopClosed {
				run = s.Closed
			}
			if run == nil || len(run.Latency.Spectrum) == 0 {
				continue
			}
			p.series = append(p.series, series{name: s.Name, color: plotColors[i%len(plotColors)], points: run.Latency.Spectrum, count: run.Latency.Count,
				overloaded: run.Overloaded})
		}
		if len(p.series) > 0 {
			panels = append(panels, p)
		}
	}
	if len(panels) == 0 {
		return api.BadRequest("the report has no latency to plot")
	}
	if title == "" {
		title = fmt.Sprintf("quarry bench: %s documents, %d shards, %d CPUs", cmdline.Thousands(int64(rep.Config.Docs)), rep.Config.Shards, rep.Machine.CPUs)
	}
	height := plotTop + len(panels)*(panelHeight+panelGap) - panelGap + plotBottom - 20
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">
<rect width="100%%" height="100%%" fill="#ffffff"/>
<text x="%d" y="28" font-size="17" font-weight="bold">%s</text>
<text x="%d" y="48" fill="#555555">%s</text>
`, plotWidth, height, plotWidth, height, plotLeft, xmlText(title), plotLeft,
		xmlText(fmt.Sprintf("%s %s/%s, %s, %s; latency by percentile (log scales); the last point of a line is its maximum", rep.Machine.Go, rep.Machine.GOOS, rep.Machine.GOARCH, rep.Started.Format("2006-01-02"), rep.Quarry)))
	for pi, p := range panels {
		top := float64(plotTop + pi*(panelHeight+panelGap) + 20)
		bottom := top + panelHeight - plotBottom - 20
		left, right := float64(plotLeft), float64(plotWidth-plotRight)
		// x: log10(1/(1-q)); the maximum sits at q = 1-1/count.
		xOf := func(pt benchPoint, count int64) float64 {
			if pt.Q >= 1 {
				return math.Log10(float64(max(count, 1)))
			}
			return math.Log10(1 / (1 - pt.Q))
		}
		xMax, yMin, yMax := 1.0, math.Inf(1), math.Inf(-1)
		for _, s := range p.series {
			for _, pt := range s.points {
				xMax = max(xMax, xOf(pt, s.count))
				v := max(pt.US, 1)
				yMin, yMax = min(yMin, v), max(yMax, v)
			}
		}
		xMax = math.Ceil(xMax)
		yLo, yHi := math.Floor(math.Log10(yMin)), math.Ceil(math.Log10(yMax))
		if yHi <= yLo {
			yHi = yLo + 1
		}
		px := func(x float64) float64 { return left + x/xMax*(right-left) }
		py := func(v float64) float64 {
			return bottom - (math.Log10(max(v, 1))-yLo)/(yHi-yLo)*(bottom-top)
		}
		fmt.Fprintf(w, `<g>
<text x="%.1f" y="%.1f" font-size="14" font-weight="bold">%s</text>
<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999999"/>
`, left, top-8, xmlText(p.title), left, top, right-left, bottom-top)
		// y grid: 1, 2, 5 of every decade.
		for d := yLo; d <= yHi; d++ {
			for _, m := range []float64{1, 2, 5} {
				v := m * math.Pow(10, d)
				if math.Log10(v) > yHi+1e-9 {
					break
				}
				y := py(v)
				stroke := "#eeeeee"
				if m == 1 {
					stroke = "#cccccc"
				}
				fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>
<text x="%.1f" y="%.1f" text-anchor="end" fill="#333333">%s</text>
`, left, y, right, y, stroke, left-6, y+4, xmlText(fmtTick(v)))
			}
		}
		// x grid: the nines, and the median.
		for _, t := range []struct {
			x     float64
			label string
		}{{0, "0%"}, {math.Log10(2), "50%"}, {1, "90%"}, {2, "99%"}, {3, "99.9%"}, {4, "99.99%"}, {5, "99.999%"}, {6, "99.9999%"}} {
			if t.x > xMax+1e-9 {
				break
			}
			x := px(t.x)
			fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>
<text x="%.1f" y="%.1f" text-anchor="middle" fill="#333333">%s</text>
`, x, top, x, bottom, x, bottom+16, t.label)
		}
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#333333">percentile</text>
<text x="%.1f" y="%.1f" text-anchor="middle" fill="#333333" transform="rotate(-90 %.1f %.1f)">latency</text>
`, (left+right)/2, bottom+34, left-58, (top+bottom)/2, left-58, (top+bottom)/2)
		for si, s := range p.series {
			var pts strings.Builder
			for _, pt := range s.points {
				fmt.Fprintf(&pts, "%.1f,%.1f ", px(xOf(pt, s.count)), py(pt.US))
			}
			dash, name := "", s.name
			if s.overloaded { // dashed: a queue's latency, not the setup's
				dash, name = ` stroke-dasharray="6 4"`, s.name+" (overloaded)"
			}
			fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>
`, s.color, dash, strings.TrimSpace(pts.String()))
			for _, pt := range s.points {
				fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s p%s: %s</title></circle>
`, px(xOf(pt, s.count)), py(pt.US), s.color, xmlText(s.name), quantileLabel(pt.Q), xmlText(fmtUS(pt.US)))
			}
			ly := top + 14 + float64(si)*20
			fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"%s/>
<text x="%.1f" y="%.1f">%s</text>
`, right+14, ly, right+38, ly, s.color, dash, right+44, ly+4, xmlText(name))
		}
		fmt.Fprintln(w, "</g>")
	}
	_, err := fmt.Fprintln(w, "</svg>")
	return err
}

// fmtTick formats a 1-2-5 tick of the latency axis, in microseconds:
// 20µs, 500µs, 1ms, 50ms, 2s.
func fmtTick(v float64) string {
	switch {
	case v < 1000:
		return fmt.Sprintf("%gµs", v)
	case v < 1e6:
		return fmt.Sprintf("%gms", v/1000)
	}
	return fmt.Sprintf("%gs", v/1e6)
}

// quantileLabel names a quantile as a percentile: 50, 99.9, 100 (max).
func quantileLabel(q float64) string {
	if q >= 1 {
		return "100 (max)"
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", q*100), "0"), ".")
}
