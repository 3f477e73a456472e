package grid

import (
	"fmt"

	"tilecache/internal/apperr"
)

// A Plan numbers the metatiles of one seed, reseed or truncate request.
//
// For every level from zStart to zStop the request's tile range
// ([Subset.Range]) is widened to whole metatiles of metaW × metaH tiles
// (x0 −= x0 mod mx; x1 = x1 − x1 mod mx + mx − 1, and likewise for rows) and
// x1, y1 are then clipped to the last column and row of the grid (not of the
// coverage). The metatiles are the units of work and the plan counts their
// tiles (the request total of the REST contract), but the request's tiles
// are those of its range alone ([Metatile.Has]): a truncate deletes exactly
// them and a seed checks exactly them. Metatiles are numbered from 0 zoom level by zoom level, then row
// by row from the bottom, then column by column from the left ([ByRows]), or
// within a level column by column from the left, then row by row from the
// bottom ([ByColumns]), so that a share of the work is an index range (a
// [Lane]) and progress is one cursor. ByColumns gives each lane whole
// columns of tiles, which under the key layout z/x/y are one key prefix
// each: a lane that must learn what is stored lists a few columns rather
// than a stretch of every column.
//
// A Plan stores a few numbers per level and nothing per metatile: converting
// an index to a metatile ([Plan.Meta]) or to a tile count
// ([Plan.TilesBefore]) takes time and memory bounded by the number of levels,
// whatever the size of the request. A Plan is immutable and safe for
// concurrent use.
type Plan struct {
	metaW, metaH int64
	order        Order
	levels       []planLevel
	metatiles    int64
	tiles        int64
	requested    int64
}

// planLevel is the bookkeeping of one level of a plan.
type planLevel struct {
	r          TileRange  // widened and clipped tile range
	req        TileRange  // the request's range, within r
	cols, rows int64      // metatile columns and rows of r
	metas      int64      // metatiles planned: cols·rows, or the area's
	metaStart  int64      // index of the level's first metatile
	tileStart  int64      // tiles in all earlier levels
	area       *areaLevel // nil: every tile of r
}

// Metatile is one unit of work of a [Plan]: its index and the tiles it spans,
// clipped to the plan's range of its level (and so to the grid). Its
// lower-left tile is (Tiles.MinX, Tiles.MinY).
//
// In a plan restricted to an area ([NewPlanArea]) only some of those tiles
// are the plan's: [Metatile.Count] tells how many. Of the tiles counted,
// those at the edges of the request's range may not be the request's:
// [Metatile.Has] and [Metatile.All] name the request's tiles (its range's,
// and its area's). The whole metatile is rendered all the same.
type Metatile struct {
	Index int64
	Tiles TileRange
	area  *areaLevel
	// req is the request's range of the level when it leaves out some of
	// Tiles (clipped), in a plan not restricted to an area.
	req     TileRange
	clipped bool
}

// Lane is a contiguous share of a plan's metatiles: the indices [Start, End)
// and the number of tiles they contain.
type Lane struct {
	Start, End int64
	Tiles      int64
}

// Order is the numbering of a level's metatiles.
type Order uint8

const (
	// ByRows numbers a level's metatiles row by row from the bottom, each
	// row from the left.
	ByRows Order = iota
	// ByColumns numbers them column by column from the left, each column
	// from the bottom.
	ByColumns
)

// NewPlan plans the metatiles of levels zStart to zStop of s that bounds
// touches, with metatiles of metaW × metaH tiles. It fails if s is not valid,
// bounds is not [Extent.Valid], zStart > zStop, either zoom lies outside
// s.MinZoom..s.MaxZoom, or a metatile dimension is below 1. Callers adjust
// zoom levels to the subset (contract section 4.2) before planning. The
// metatiles are numbered [ByRows].
func NewPlan(s *Subset, bounds Extent, zStart, zStop, metaW, metaH int) (*Plan, error) {
	return NewPlanOrdered(s, bounds, zStart, zStop, metaW, metaH, ByRows)
}

// NewPlanOrdered is NewPlan with the metatiles of each level numbered in
// the given order.
func NewPlanOrdered(s *Subset, bounds Extent, zStart, zStop, metaW, metaH int, order Order) (*Plan, error) {
	return newPlan(s, bounds, zStart, zStop, metaW, metaH, order, nil)
}

// MaxAreaLines bounds the lines of an area a plan keeps, over all its
// levels: a plan restricted to an area holds its lines, so that this
// bounds its memory (some tens of bytes a line). An area that is a
// [LinesBounder] is refused before any of its lines is made.
const MaxAreaLines = 1 << 18

func tooManyLines(zStart, zStop int) error {
	return apperr.Invalidf("the area has tiles on more than %d lines (rows or columns) of tiles at zoom levels %d to %d within the request's bounds (the limit of a request); give smaller bounds or fewer levels", MaxAreaLines, zStart, zStop)
}

// NewPlanArea is NewPlanOrdered restricted to the tiles of area: only the
// metatiles holding some of its tiles are planned, and only its tiles are
// counted. Memory and time grow with the area's lines and runs, not with
// its tiles; an area with more than [MaxAreaLines] lines is refused
// (apperr.Invalid).
func NewPlanArea(s *Subset, bounds Extent, zStart, zStop, metaW, metaH int, order Order, area Area) (*Plan, error) {
	if area == nil {
		return nil, fmt.Errorf("no area to plan")
	}
	return newPlan(s, bounds, zStart, zStop, metaW, metaH, order, area)
}

func newPlan(s *Subset, bounds Extent, zStart, zStop, metaW, metaH int, order Order, area Area) (*Plan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	switch {
	case !bounds.Valid():
		return nil, fmt.Errorf("bounds %v are not finite with min < max on both axes", bounds)
	case zStart > zStop:
		return nil, fmt.Errorf("zoomStart %d is greater than zoomStop %d", zStart, zStop)
	case zStart < s.MinZoom || zStart > s.MaxZoom:
		return nil, fmt.Errorf("zoomStart %d is outside the zoom levels %d to %d of grid set %s",
			zStart, s.MinZoom, s.MaxZoom, s.GridSet.ID)
	case zStop < s.MinZoom || zStop > s.MaxZoom:
		return nil, fmt.Errorf("zoomStop %d is outside the zoom levels %d to %d of grid set %s",
			zStop, s.MinZoom, s.MaxZoom, s.GridSet.ID)
	case metaW < 1 || metaH < 1:
		return nil, fmt.Errorf("metatile size %dx%d must be at least 1x1", metaW, metaH)
	case order != ByRows && order != ByColumns:
		return nil, fmt.Errorf("unknown metatile order %d", order)
	}
	p := &Plan{
		metaW:  int64(metaW),
		metaH:  int64(metaH),
		order:  order,
		levels: make([]planLevel, 0, zStop-zStart+1),
	}
	if b, ok := area.(LinesBounder); ok {
		var n int64
		for z := zStart; z <= zStop; z++ {
			lines, err := b.LinesBound(z, order, s.Range(bounds, z))
			if err != nil {
				return nil, fmt.Errorf("level %d: %w", z, err)
			}
			n += min(lines, MaxAreaLines+1)
		}
		if n > MaxAreaLines {
			return nil, tooManyLines(zStart, zStop)
		}
	}
	held := 0 // lines of the area kept
	for z := zStart; z <= zStop; z++ {
		req := s.Range(bounds, z)
		r := widen(req, p.metaW, p.metaH, s.GridSet.GridRange(z))
		l := planLevel{
			r:         r,
			req:       req,
			cols:      (r.MaxX-r.MinX)/p.metaW + 1,
			rows:      (r.MaxY-r.MinY)/p.metaH + 1,
			metaStart: p.metatiles,
			tileStart: p.tiles,
		}
		l.metas = l.cols * l.rows
		tiles := r.Count()
		if area != nil {
			lines, err := area.Lines(z, order, s.Range(bounds, z))
			if err != nil {
				return nil, fmt.Errorf("level %d: %w", z, err)
			}
			if held += lines.Len(); held > MaxAreaLines {
				return nil, tooManyLines(zStart, z)
			}
			l.area = newAreaLevel(lines, order, r, p.metaW, p.metaH)
			l.metas, tiles = l.area.metatiles(), l.area.tiles
		}
		p.levels = append(p.levels, l)
		p.metatiles += l.metas
		p.tiles += tiles
		if area != nil {
			p.requested += tiles
		} else {
			p.requested += req.Count()
		}
	}
	return p, nil
}

// widen extends r to whole metatiles of mw × mh and clips the upper bounds
// to the last column and row of grid. Indices are non-negative, so the
// remainders are too.
func widen(r TileRange, mw, mh int64, grid TileRange) TileRange {
	r.MinX -= r.MinX % mw
	r.MinY -= r.MinY % mh
	r.MaxX = min(r.MaxX-r.MaxX%mw+mw-1, grid.MaxX)
	r.MaxY = min(r.MaxY-r.MaxY%mh+mh-1, grid.MaxY)
	return r
}

// Levels returns the widened, clipped tile range of each planned level,
// zStart first. The slice is the caller's.
func (p *Plan) Levels() []TileRange {
	out := make([]TileRange, len(p.levels))
	for i, l := range p.levels {
		out[i] = l.r
	}
	return out
}

// Level describes one planned level: its widened, clipped tile range, its
// metatile columns and rows, and the index of its first metatile.
type Level struct {
	Tiles      TileRange
	Cols, Rows int64
	First      int64
	// Metatiles and Count are the metatiles and tiles planned: Cols·Rows
	// and Tiles.Count() unless the plan is restricted to an area.
	Metatiles, Count int64
}

// Level returns level z of the plan; ok is false when z is not planned.
func (p *Plan) Level(z int) (Level, bool) {
	if len(p.levels) == 0 {
		return Level{}, false
	}
	i := z - p.levels[0].r.Z
	if i < 0 || i >= len(p.levels) {
		return Level{}, false
	}
	l := p.levels[i]
	count := l.r.Count()
	if l.area != nil {
		count = l.area.tiles
	}
	return Level{Tiles: l.r, Cols: l.cols, Rows: l.rows, First: l.metaStart, Metatiles: l.metas, Count: count}, true
}

// Order returns the numbering of each level's metatiles.
func (p *Plan) Order() Order { return p.order }

// MetaSize returns the metatile size in tiles the plan was made with.
func (p *Plan) MetaSize() (w, h int) { return int(p.metaW), int(p.metaH) }

// Restricted reports whether the plan is restricted to an area.
func (p *Plan) Restricted() bool {
	for _, l := range p.levels {
		if l.area != nil {
			return true
		}
	}
	return false
}

// Metatiles returns the number of metatiles in the plan; indices run from 0
// to Metatiles()-1.
func (p *Plan) Metatiles() int64 { return p.metatiles }

// Tiles returns the number of tiles in the plan: Σ_z (x1−x0+1)(y1−y0+1) over
// the widened, clipped ranges.
func (p *Plan) Tiles() int64 { return p.tiles }

// Requested returns the number of the request's tiles ([Metatile.Has]):
// Tiles() without the widening to whole metatiles.
func (p *Plan) Requested() int64 { return p.requested }

// Meta returns metatile i. It panics unless 0 ≤ i < Metatiles(), like an
// out-of-range slice index. It does not allocate.
func (p *Plan) Meta(i int64) Metatile {
	if i < 0 || i >= p.metatiles {
		panicIndex("Meta", i, p.metatiles-1)
	}
	l := &p.levels[p.level(i)]
	j := i - l.metaStart
	if l.area != nil {
		m := l.area.meta(j)
		m.Index = i
		return m
	}
	col, row := j%l.cols, j/l.cols
	if p.order == ByColumns {
		col, row = j/l.rows, j%l.rows
	}
	x0 := l.r.MinX + col*p.metaW
	y0 := l.r.MinY + row*p.metaH
	m := Metatile{Index: i, Tiles: TileRange{
		Z:    l.r.Z,
		MinX: x0, MinY: y0,
		MaxX: min(x0+p.metaW-1, l.r.MaxX),
		MaxY: min(y0+p.metaH-1, l.r.MaxY),
	}}
	if !l.req.ContainsRange(m.Tiles) {
		m.req, m.clipped = l.req, true
	}
	return m
}

// Ahead returns the smallest range of whole metatile columns (numbered
// [ByColumns]) or rows ([ByRows]) of level z holding the metatiles from
// to to−1; ok is false when none of them is of level z. It bounds what a
// share of the work still visits.
func (p *Plan) Ahead(z int, from, to int64) (TileRange, bool) {
	l, ok := p.Level(z)
	if !ok {
		return TileRange{}, false
	}
	from, to = max(from, l.First), min(to, l.First+l.Metatiles)
	if to <= from {
		return TileRange{}, false
	}
	// The metatiles of a level go up column by column (or row by row),
	// in a plan restricted to an area too: the first and the last name
	// the range.
	first, last := p.Meta(from).Tiles, p.Meta(to-1).Tiles
	r := l.Tiles
	if p.Order() == ByColumns {
		r.MinX, r.MaxX = first.MinX, last.MaxX
	} else {
		r.MinY, r.MaxY = first.MinY, last.MaxY
	}
	return r, true
}

// TilesBefore returns the number of tiles in metatiles 0 to i−1, so that
// TilesBefore(Metatiles()) == Tiles() and the tiles of a lane [a, b) are
// TilesBefore(b) − TilesBefore(a). It panics unless 0 ≤ i ≤ Metatiles(). It
// does not allocate.
func (p *Plan) TilesBefore(i int64) int64 {
	if i < 0 || i > p.metatiles {
		panicIndex("TilesBefore", i, p.metatiles)
	}
	if i == p.metatiles {
		return p.tiles
	}
	l := &p.levels[p.level(i)]
	j := i - l.metaStart
	if l.area != nil {
		return l.tileStart + l.area.tilesBefore(j)
	}
	if p.order == ByColumns {
		// Every metatile column before col is metaW tiles wide (only the
		// last is clipped), every metatile before row in its column
		// metaH tiles high.
		col, row := j/l.rows, j%l.rows
		height := l.r.MaxY - l.r.MinY + 1
		x0 := l.r.MinX + col*p.metaW
		width := min(p.metaW, l.r.MaxX-x0+1)
		return l.tileStart + col*p.metaW*height + row*p.metaH*width
	}
	row, col := j/l.cols, j%l.cols
	// Only the last metatile column and row of a level can be clipped, so
	// every metatile row before row is metaH tiles high and every metatile
	// before col in its row is metaW tiles wide.
	width := l.r.MaxX - l.r.MinX + 1
	y0 := l.r.MinY + row*p.metaH
	height := min(p.metaH, l.r.MaxY-y0+1)
	return l.tileStart + row*p.metaH*width + col*p.metaW*height
}

// level returns the position in p.levels of the level holding metatile i,
// which must be in range.
func (p *Plan) level(i int64) int {
	lo, hi := 0, len(p.levels)-1
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		if p.levels[mid].metaStart <= i {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

func panicIndex(method string, i, last int64) {
	panic(fmt.Sprintf("grid: Plan.%s index %d out of range [0, %d]", method, i, last))
}

// Split divides the metatiles into n disjoint contiguous lanes that together
// cover [0, Metatiles()) in order. Lane sizes in metatiles differ by at most
// one, the longer lanes first; with more lanes than metatiles the last lanes
// are empty. The lanes' tile counts add up to Tiles(). It returns nil when
// n < 1.
func (p *Plan) Split(n int) []Lane {
	if n < 1 {
		return nil
	}
	lanes := make([]Lane, n)
	base, extra := p.metatiles/int64(n), p.metatiles%int64(n)
	start, before := int64(0), int64(0)
	for k := range lanes {
		end := start + base
		if int64(k) < extra {
			end++
		}
		after := p.TilesBefore(end)
		lanes[k] = Lane{Start: start, End: end, Tiles: after - before}
		start, before = end, after
	}
	return lanes
}
