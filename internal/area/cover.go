package area

import (
	"cmp"
	"math"
	"slices"
	"sync"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
)

// MaxLines bounds the lines (rows, or columns in a plan numbered by
// columns) of tiles an area's geometry may span at one level within a
// request's bounds: the rows of a whole Mercator world at level 17. A
// geometry's lines are swept one by one and kept for the plan, so this
// bounds the time and memory a level takes (some tens of bytes a line).
const MaxLines = 1 << 17

// MaxSweep bounds the work of sweeping one level of a geometry: the
// times its edges cross a line of tiles (each line's sweep takes time in
// proportion to the edges crossing it), at most about half a second.
const MaxSweep = 1 << 21

// sweepWork returns the times the edges of p's polygons cross lines first
// to last of level z, along order, counting each edge at least once.
func sweepWork(p *part, order grid.Order, g *grid.GridSet, z int, first, last int64) int64 {
	w, h := g.Span(z)
	o := g.TileExtent(z, 0, 0)
	axis, oAcross, across := 1, o.MinY, h
	if order == grid.ByColumns {
		axis, oAcross, across = 0, o.MinX, w
	}
	var n int64
	for _, poly := range p.polys {
		for _, ring := range poly {
			for j := 0; j+1 < len(ring); j++ {
				a, b := ring[j][axis], ring[j+1][axis]
				lo := max(first, tileIndex((min(a, b)-oAcross)/across, math.Floor))
				hi := min(last, tileIndex((max(a, b)-oAcross)/across, math.Floor))
				n += max(1, hi-lo+1)
			}
		}
	}
	return n
}

// fewLines is the most lines a sweep visits without first bounding its
// work: a metatile's on a miss, at most fewLines·MaxVertices crossings.
const fewLines = 64

// bandMargin narrows each line's band, in tiles, so that a polygon edge
// lying on a tile boundary does not take the tiles beyond it.
const bandMargin = 1e-7

// Lines implements grid.Area: the tiles of level z inside r whose square
// meets the interior of the level's polygons, line by line along order.
//
// For each line (a row of tiles, or a column when numbered by columns)
// the tiles taken are those whose span along the line meets the
// projection onto the line of the polygons cut to the line's band. That
// projection is the union of the projections of the polygons' edges cut
// to the band and of the polygons' intersections with the band's two
// borders (a closed region's projection is its boundary's), which a
// sweep finds in time proportional to the edges crossing each band.
func (s *Shape) Lines(z int, order grid.Order, r grid.TileRange) (grid.Lines, error) {
	var out grid.Lines
	p, first, last := s.lineRange(z, order, r)
	if p == nil || last < first {
		return out, nil
	}
	// The sweep visits the lines the polygons' boxes meet, and its work
	// grows with the edges crossing each: both are bounded before it
	// starts.
	n, err := s.LinesBound(z, order, r)
	if err != nil {
		return out, err
	}
	out.K = make([]int64, 0, n)
	out.Spans = make([][]grid.Span, 0, n)
	lo, hi := r.MinX, r.MaxX
	if order == grid.ByColumns {
		lo, hi = r.MinY, r.MaxY
	}
	w, h := s.grid.Span(z)
	o := s.grid.TileExtent(z, 0, 0)
	// Edges stay in the CRS's units; a line's band and the tiles along it
	// are mapped there and back: l = ol + k·hl across, pos = op + j·wp.
	edges := p.sorted(order)
	op, ol, wp, hl := o.MinX, o.MinY, w, h
	if order == grid.ByColumns {
		op, ol, wp, hl = o.MinY, o.MinX, h, w
	}
	buf := sweepBufs.Get().(*sweepBuf)
	defer sweepBufs.Put(buf)
	active, intervals, crossings, spans := buf.active[:0], buf.intervals[:0], buf.crossings[:0], buf.spans[:0]
	defer func() { buf.active, buf.intervals, buf.crossings, buf.spans = active, intervals, crossings, spans }()
	next := 0
	for k := first; k <= last; k++ {
		bandLo, bandHi := ol+(float64(k)+bandMargin)*hl, ol+(float64(k+1)-bandMargin)*hl
		for next < len(edges) && edges[next].l0 <= bandHi {
			if edges[next].l1 >= bandLo {
				active = append(active, edges[next])
			}
			next++
		}
		// Drop the edges that end below this band.
		keep := active[:0]
		for _, e := range active {
			if e.l1 >= bandLo {
				keep = append(keep, e)
			}
		}
		active = keep
		if len(active) == 0 {
			if next == len(edges) {
				break
			}
			// No polygon meets the lines before the one below the
			// next edge's low end: skip them.
			if skip := tileIndex((edges[next].l0-ol)/hl, math.Floor) - 2; skip > k {
				k = min(skip, last)
			}
			continue
		}
		intervals = intervals[:0]
		for _, e := range active {
			if iv, ok := e.clip(bandLo, bandHi); ok {
				intervals = append(intervals, iv)
			}
		}
		for _, at := range [2]float64{bandLo, bandHi} {
			crossings = crossings[:0]
			for _, e := range active {
				if e.l0 <= at && at < e.l1 {
					crossings = append(crossings, crossing{e.poly, e.at(at)})
				}
			}
			slices.SortFunc(crossings, func(a, b crossing) int {
				if a.poly != b.poly {
					return a.poly - b.poly
				}
				return cmp.Compare(a.pos, b.pos)
			})
			// Even-odd within each polygon: inside between pairs.
			for i := 0; i+1 < len(crossings); i += 2 {
				if crossings[i].poly == crossings[i+1].poly {
					intervals = append(intervals, interval{crossings[i].pos, crossings[i+1].pos})
				} else {
					i-- // an odd count cannot happen in a closed ring; resynchronise
				}
			}
		}
		spans = spans[:0]
		for _, iv := range intervals {
			a, b := tileIndex((iv.lo-op)/wp, math.Floor), tileIndex((iv.hi-op)/wp, math.Ceil)-1
			a, b = max(a, lo), min(b, hi)
			if a <= b {
				spans = append(spans, grid.Span{Lo: a, Hi: b})
			}
		}
		// A line like the one before shares its spans (a box's lines do).
		merged := grid.MergeSpans(spans)
		if n := out.Len(); n > 0 && slices.Equal(out.Spans[n-1], merged) {
			out.Add(k, out.Spans[n-1])
		} else {
			out.Add(k, slices.Clone(merged))
		}
	}
	return out, nil
}

// LinesBound implements grid.LinesBounder: the lines within r that the
// boxes of the level's polygons meet, which are the lines Lines sweeps.
// It refuses a level whose lines are more than MaxLines, or whose sweep
// is more work than MaxSweep; a few lines (a metatile's, on a miss) are
// taken as they are, their sweep bounded by fewLines·MaxVertices.
func (s *Shape) LinesBound(z int, order grid.Order, r grid.TileRange) (int64, error) {
	p, first, last := s.lineRange(z, order, r)
	switch {
	case p == nil || last < first:
		return 0, nil
	case last-first+1 <= fewLines:
		return last - first + 1, nil
	}
	w, h := s.grid.Span(z)
	o := s.grid.TileExtent(z, 0, 0)
	axis, oAcross, across := 1, o.MinY, h
	if order == grid.ByColumns {
		axis, oAcross, across = 0, o.MinX, w
	}
	spans := make([]grid.Span, 0, len(p.boxes))
	for _, b := range p.boxes {
		lo := max(first, tileIndex((b.Min[axis]-oAcross)/across, math.Floor))
		hi := min(last, tileIndex((b.Max[axis]-oAcross)/across, math.Floor))
		if lo <= hi {
			spans = append(spans, grid.Span{Lo: lo, Hi: hi})
		}
	}
	var n int64
	for _, sp := range grid.MergeSpans(spans) {
		n += sp.Hi - sp.Lo + 1
	}
	what := "rows"
	if order == grid.ByColumns {
		what = "columns"
	}
	if n > MaxLines {
		return 0, apperr.Invalidf("the geometry spans %d %s of tiles at zoom level %d within the request's bounds, more than %d (the limit of one level); give smaller bounds, a smaller geometry or fewer levels", n, what, z, MaxLines)
	}
	if work := sweepWork(p, order, s.grid, z, first, last); work > MaxSweep {
		return 0, apperr.Invalidf("the geometry's edges cross %s of tiles %d times at zoom level %d within the request's bounds, more than %d (the limit of one level); simplify it, or give smaller bounds or fewer levels", what, work, z, MaxSweep)
	}
	return n, nil
}

// lineRange returns the polygons of level z and the first and last line
// of r, along order, that their box meets.
func (s *Shape) lineRange(z int, order grid.Order, r grid.TileRange) (p *part, first, last int64) {
	first, last = r.MinY, r.MaxY
	if order == grid.ByColumns {
		first, last = r.MinX, r.MaxX
	}
	if p = s.part(z); p == nil {
		return nil, 0, -1
	}
	w, h := s.grid.Span(z)
	o := s.grid.TileExtent(z, 0, 0)
	bMin, bMax, oAcross, across := p.bound.Min[1], p.bound.Max[1], o.MinY, h
	if order == grid.ByColumns {
		bMin, bMax, oAcross, across = p.bound.Min[0], p.bound.Max[0], o.MinX, w
	}
	first = max(first, tileIndex((bMin-oAcross)/across, math.Floor))
	last = min(last, tileIndex((bMax-oAcross)/across, math.Floor))
	return p, first, last
}

// sweepBuf is the scratch space of a sweep, kept between sweeps: at low
// levels every edge of a detailed outline crosses the few bands.
type sweepBuf struct {
	active    []edge
	intervals []interval
	crossings []crossing
	spans     []grid.Span
}

var sweepBufs = sync.Pool{New: func() any { return new(sweepBuf) }}

// edge is a polygon edge in a level's tile space, seen in a plan's frame:
// l is the coordinate across the lines (row or column number), pos the
// coordinate along them; l0 ≤ l1.
type edge struct {
	pos0, l0, pos1, l1 float64
	poly               int
}

// clip returns the span along the line of the edge's part within
// [bandLo, bandHi].
func (e edge) clip(bandLo, bandHi float64) (interval, bool) {
	if e.l1 < bandLo || e.l0 > bandHi {
		return interval{}, false
	}
	if e.l0 == e.l1 {
		return interval{min(e.pos0, e.pos1), max(e.pos0, e.pos1)}, true
	}
	a, b := e.at(max(e.l0, bandLo)), e.at(min(e.l1, bandHi))
	return interval{min(a, b), max(a, b)}, true
}

// at returns the position along the line where the edge crosses l.
func (e edge) at(l float64) float64 {
	if l <= e.l0 {
		return e.pos0
	}
	if l >= e.l1 {
		return e.pos1
	}
	return e.pos0 + (l-e.l0)/(e.l1-e.l0)*(e.pos1-e.pos0)
}

type interval struct{ lo, hi float64 }

type crossing struct {
	poly int
	pos  float64
}

// sorted returns the edges of p's polygons in the frame of order, in
// the CRS's units, sorted by their low end across the lines; built once
// per order. Each polygon of p (its outer ring and holes) has its own
// number, so that crossings pair within one polygon and overlapping
// polygons add up.
func (p *part) sorted(order grid.Order) []edge {
	i := 0
	if order == grid.ByColumns {
		i = 1
	}
	p.once[i].Do(func() {
		n := 0
		for _, poly := range p.polys {
			for _, ring := range poly {
				n += len(ring)
			}
		}
		out := make([]edge, 0, n)
		for pi, poly := range p.polys {
			for _, ring := range poly {
				for j := 0; j+1 < len(ring); j++ {
					a, b := ring[j], ring[j+1]
					e := edge{pos0: a[0], l0: a[1], pos1: b[0], l1: b[1], poly: pi}
					if order == grid.ByColumns {
						e = edge{pos0: a[1], l0: a[0], pos1: b[1], l1: b[0], poly: pi}
					}
					if e.l0 > e.l1 {
						e.pos0, e.l0, e.pos1, e.l1 = e.pos1, e.l1, e.pos0, e.l0
					}
					out = append(out, e)
				}
			}
		}
		slices.SortFunc(out, func(a, b edge) int { return cmp.Compare(a.l0, b.l0) })
		p.edges[i] = out
	})
	return p.edges[i]
}

// tileIndex rounds a position in tiles to a tile index with round (floor
// or ceil), snapping positions within 1e-9 tiles of an edge onto it, and
// keeping the result within the range of int64 indices a grid can have.
func tileIndex(q float64, round func(float64) float64) int64 {
	if e := math.Round(q); math.Abs(q-e) <= 1e-9 {
		q = e
	}
	f := round(q)
	switch {
	case f >= 1<<62:
		return 1 << 62
	case f <= -(1 << 62):
		return -(1 << 62)
	}
	return int64(f)
}

// HasTile reports whether tile (x, y) of level z meets the shape's
// polygons of that level.
func (s *Shape) HasTile(z int, x, y int64) bool {
	l, _ := s.Lines(z, grid.ByRows, grid.TileRange{Z: z, MinX: x, MinY: y, MaxX: x, MaxY: y})
	return l.Has(y, x)
}
