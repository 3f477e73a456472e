package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// metric is one plotted figure of a row.
type metric struct {
	file, title, unit string
	value             func(row) float64
}

var metrics = []metric{
	{"scale-time.svg", "clean-up time", "s", func(r row) float64 { return r.Seconds }},
	{"scale-items.svg", "items read by the clean-up", "items", func(r row) float64 { return float64(r.ItemsRead) }},
	{"scale-rss.svg", "peak RSS of the clean-up", "MiB", func(r row) float64 { return r.PeakRSSMiB }},
}

// writePlots draws each metric against the page count, log-log, one line
// per run.
func writePlots(dir string, runs []result) error {
	for _, m := range metrics {
		if err := os.WriteFile(filepath.Join(dir, m.file), []byte(plot(m, runs)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// plot returns the SVG of one metric.
func plot(m metric, runs []result) string {
	const w, h, left, right, top, bottom = 560.0, 340.0, 70.0, 20.0, 40.0, 50.0
	colors := []string{"#c0392b", "#2471a3", "#229954", "#7d3c98"}
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, run := range runs {
		for _, r := range run.Rows {
			x, y := float64(r.Pages), math.Max(m.value(r), 1e-3)
			xmin, xmax, ymin, ymax = math.Min(xmin, x), math.Max(xmax, x), math.Min(ymin, y), math.Max(ymax, y)
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax, ymin, ymax = 1, 10, 1, 10
	}
	// Whole decades around the data.
	lx0, lx1 := math.Floor(math.Log10(xmin)), math.Ceil(math.Log10(xmax))
	ly0, ly1 := math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
	if lx1 == lx0 {
		lx1++
	}
	if ly1 == ly0 {
		ly1++
	}
	px := func(x float64) float64 { return left + (math.Log10(x)-lx0)/(lx1-lx0)*(w-left-right) }
	py := func(y float64) float64 {
		return h - bottom - (math.Log10(math.Max(y, 1e-3))-ly0)/(ly1-ly0)*(h-top-bottom)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14" font-weight="bold">%s (%s) by tile pages, log-log</text>`+"\n", left, m.title, m.unit)
	for d := lx0; d <= lx1; d++ {
		x := left + (d-lx0)/(lx1-lx0)*(w-left-right)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, top, x, h-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, h-bottom+16, decade(d))
	}
	for d := ly0; d <= ly1; d++ {
		y := h - bottom - (d-ly0)/(ly1-ly0)*(h-top-bottom)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, w-right, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, decade(d))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">tile pages</text>`+"\n", (left+w-right)/2, h-12)
	for i, run := range runs {
		c := colors[i%len(colors)]
		var pts []string
		for _, r := range run.Rows {
			x, y := px(float64(r.Pages)), py(m.value(r))
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %d pages, %.4g %s</title></circle>`+"\n",
				x, y, c, run.Label, r.Pages, m.value(r), m.unit)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), c)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s">%s (%s)</text>`+"\n", left+10, top+16+float64(i)*16, c, run.Label, run.Policy)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// decade labels 10^d.
func decade(d float64) string {
	v := math.Pow(10, d)
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	default:
		return fmt.Sprintf("%g", v)
	}
}
