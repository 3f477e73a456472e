package main

import (
	"fmt"
	"math"
	"strings"
)

// plotScaling draws tiles/s against workers (linear axes): the measured
// line, the ideal one (workers × the rate of one) and the rate the
// upstream cap allows (cap × the rate of one lane), each point labelled
// with its scaling efficiency.
func plotScaling(res result) string {
	const w, h, left, right, top, bottom = 600.0, 380.0, 70.0, 30.0, 50.0, 50.0
	one := 0.0
	xmax, ymax := 1.0, 1.0
	for _, r := range res.Rows {
		if r.Workers == 1 {
			one = r.TilesPerSec / float64(max(r.Lanes, 1))
		}
		xmax = math.Max(xmax, float64(r.Workers))
		ymax = math.Max(ymax, r.TilesPerSec)
	}
	for _, r := range res.Rows {
		ymax = math.Max(ymax, float64(r.Workers)*one*float64(max(r.Lanes/r.Workers, 1)))
	}
	ymax = niceCeil(ymax * 1.05)
	px := func(x float64) float64 { return left + x/xmax*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - y/ymax*(h-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14" font-weight="bold">seeding tiles/s by worker processes (%s delay, cap %d)</text>`+"\n", left, res.Delay, res.Cap)
	fmt.Fprintf(&b, `<text x="%.0f" y="34" fill="#555">%s; labels: efficiency = tiles/s ÷ (workers × tiles/s of one)</text>`+"\n", left, res.Source)
	for i := 0; i <= 4; i++ {
		y := ymax * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, py(y), w-right, py(y))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%g</text>`+"\n", left-6, py(y)+4, y)
	}
	for _, r := range res.Rows {
		x := px(float64(r.Workers))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x, top, x, h-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", x, h-bottom+16, r.Workers)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">worker processes</text>`+"\n", (left+w-right)/2, h-12)
	fmt.Fprintf(&b, `<text x="14" y="%.1f" transform="rotate(-90 14 %.1f)" text-anchor="middle">tiles/s</text>`+"\n", (top+h-bottom)/2, (top+h-bottom)/2)
	// ideal and cap lines
	if one > 0 {
		lanes := float64(max(res.Rows[0].Lanes/max(res.Rows[0].Workers, 1), 1))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="5,4"/>`+"\n", px(0), py(0), px(xmax), py(xmax*lanes*one))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#777">ideal: workers × rate of one</text>`+"\n", px(xmax)-190, py(xmax*lanes*one)+16)
		if res.Cap > 0 && float64(res.Cap)*one < ymax {
			y := py(float64(res.Cap) * one)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#c0392b" stroke-dasharray="2,3"/>`+"\n", left, y, w-right, y)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#c0392b">upstream cap: %d lanes × rate of one lane</text>`+"\n", left+6, y-6, res.Cap)
		}
	}
	var pts []string
	for _, r := range res.Rows {
		x, y := px(float64(r.Workers)), py(r.TilesPerSec)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="#2471a3"><title>%d workers: %.1f tiles/s, efficiency %.2f, peak GetMaps %d</title></circle>`+"\n",
			x, y, r.Workers, r.TilesPerSec, r.Efficiency, r.PeakGetMaps)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#2471a3" text-anchor="middle">%.2f</text>`+"\n", x, y+18, r.Efficiency)
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#2471a3" stroke-width="2"/>`+"\n", strings.Join(pts, " "))
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to a round figure (1, 1.2, 1.6, 2, 3, 4, 6 or 8 times a power of ten).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.6, 2, 3, 4, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
