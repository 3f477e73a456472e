package grid

import (
	"iter"
	"sort"
)

// areaLevel is one level of a plan restricted to an area: the area's tiles
// (clipped to the request's range of the level) and the runs of metatiles
// holding some of them, in numbering order.
//
// Lines and metatiles are seen in the plan's frame: along the lines of its
// order (tile rows numbered by rows, tile columns numbered by columns). A
// metatile line is mu tile lines across, a metatile mv tiles along, and
// metatile boundaries fall on multiples of mu and mv as in a plan of the
// whole range (see widen).
type areaLevel struct {
	lines  Lines
	order  Order
	r      TileRange // the level's widened, clipped range
	mu, mv int64
	runs   []metaRun
	tiles  int64
}

// metaRun is a run of metatiles of one metatile line that hold tiles of
// the area, with the counts of the runs before it in the level.
type metaRun struct {
	line   int64 // metatile line: a metatile row by rows, column by columns
	lo, hi int64 // metatile positions along the line
	first  int64 // metatiles in earlier runs
	before int64 // tiles in earlier runs
}

func newAreaLevel(lines Lines, order Order, r TileRange, mw, mh int64) *areaLevel {
	a := &areaLevel{lines: lines, order: order, r: r, mu: mh, mv: mw}
	if order == ByColumns {
		a.mu, a.mv = mw, mh
	}
	var spans []Span
	var first, before int64
	for i := 0; i < lines.Len(); {
		line := lines.K[i] / a.mu
		spans = spans[:0]
		for ; i < lines.Len() && lines.K[i]/a.mu == line; i++ {
			for _, s := range lines.Spans[i] {
				spans = append(spans, Span{s.Lo / a.mv, s.Hi / a.mv})
			}
		}
		for _, s := range MergeSpans(spans) {
			run := metaRun{line: line, lo: s.Lo, hi: s.Hi, first: first, before: before}
			a.runs = append(a.runs, run)
			first += s.Hi - s.Lo + 1
			before += a.countRun(run, s.Hi+1)
		}
	}
	a.tiles = before
	return a
}

// metatiles returns the number of metatiles of the level.
func (a *areaLevel) metatiles() int64 {
	if len(a.runs) == 0 {
		return 0
	}
	last := a.runs[len(a.runs)-1]
	return last.first + last.hi - last.lo + 1
}

// countRun returns the area's tiles in the metatiles of run before
// position end.
func (a *areaLevel) countRun(run metaRun, end int64) int64 {
	var n int64
	for u := run.line * a.mu; u < (run.line+1)*a.mu; u++ {
		n += a.lines.countIn(u, run.lo*a.mv, end*a.mv-1)
	}
	return n
}

// run returns the run holding level-relative metatile j.
func (a *areaLevel) run(j int64) metaRun {
	i := sort.Search(len(a.runs), func(i int) bool { return a.runs[i].first > j }) - 1
	return a.runs[i]
}

// meta returns level-relative metatile j.
func (a *areaLevel) meta(j int64) Metatile {
	run := a.run(j)
	pos := run.lo + j - run.first
	x0, y0 := pos*a.mv, run.line*a.mu
	mw, mh := a.mv, a.mu
	if a.order == ByColumns {
		x0, y0 = run.line*a.mu, pos*a.mv
		mw, mh = a.mu, a.mv
	}
	return Metatile{area: a, Tiles: TileRange{
		Z:    a.r.Z,
		MinX: max(x0, a.r.MinX), MinY: max(y0, a.r.MinY),
		MaxX: min(x0+mw-1, a.r.MaxX), MaxY: min(y0+mh-1, a.r.MaxY),
	}}
}

// tilesBefore returns the area's tiles in level-relative metatiles 0 to
// j−1.
func (a *areaLevel) tilesBefore(j int64) int64 {
	if j == a.metatiles() {
		return a.tiles
	}
	run := a.run(j)
	return run.before + a.countRun(run, run.lo+j-run.first)
}

// Count returns the number of the plan's tiles in m: all of m.Tiles, or in
// a plan restricted to an area those of the area.
func (m Metatile) Count() int64 {
	if m.area == nil {
		return m.Tiles.Count()
	}
	u0, v0 := frame(m.area.order, m.Tiles.MinX, m.Tiles.MinY)
	u1, v1 := frame(m.area.order, m.Tiles.MaxX, m.Tiles.MaxY)
	var n int64
	for u := u0; u <= u1; u++ {
		n += m.area.lines.countIn(u, v0, v1)
	}
	return n
}

// Has reports whether tile (x, y) of m's level is one of the request's
// tiles in m: in its range (not widened), and its area's in a plan
// restricted to one.
func (m Metatile) Has(x, y int64) bool {
	if !m.Tiles.Contains(x, y) {
		return false
	}
	if m.area == nil {
		return !m.clipped || m.req.Contains(x, y)
	}
	u, v := frame(m.area.order, x, y)
	return m.area.lines.Has(u, v)
}

// InArea reports whether tile (x, y) of m is in the area of a plan
// restricted to one (any tile of m in a plan that is not): a seed stores
// the tiles of its metatiles that are, its request's range widened to
// whole metatiles, as GeoWebCache does.
func (m Metatile) InArea(x, y int64) bool {
	if !m.Tiles.Contains(x, y) {
		return false
	}
	if m.area == nil {
		return true
	}
	u, v := frame(m.area.order, x, y)
	return m.area.lines.Has(u, v)
}

// All yields the request's tiles in m (see Has) in seeding order: row by row from the
// bottom, column by column from the left.
func (m Metatile) All() iter.Seq2[int64, int64] {
	return func(yield func(int64, int64) bool) {
		for x, y := range m.Tiles.All() {
			if m.Has(x, y) && !yield(x, y) {
				return
			}
		}
	}
}
