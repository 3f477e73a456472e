package grid

import (
	"errors"
	"fmt"
	"math"
)

// edgeTolerance is how close, in tiles, a coordinate must be to a tile edge
// to count as lying on it: a millionth of a tile, far below a pixel, plus a
// few units in the last place of the tile index so that the rounding error of
// the division is covered even for indices near 2^31.
const (
	edgeTolerance         = 1e-6
	edgeRelativeTolerance = 1e-15
)

// indexLimit keeps float-to-int conversions in range; it is far beyond any
// valid grid's size.
const indexLimit = 1 << 62

// Subset is how a layer uses a grid set: the part of the grid it covers (its
// coverage) and the zoom levels it is defined for.
type Subset struct {
	// GridSet is the grid set the subset belongs to.
	GridSet *GridSet
	// Coverage is the area the layer covers, in the grid set's CRS. The zero
	// value means the grid set's whole extent.
	Coverage Extent
	// MinZoom and MaxZoom are the first and last level of the subset,
	// inclusive. MaxZoom is "the highest zoom level the layer is defined
	// for".
	MinZoom, MaxZoom int
}

// NewSubset returns a validated subset of g. A nil coverage means g's whole
// extent; a nil minZoom means 0 and a nil maxZoom g's last level. It fails if
// g is not valid, if the coverage is not [Extent.Valid] or does not intersect
// g's extent, or unless 0 ≤ minZoom ≤ maxZoom < g.Levels().
func NewSubset(g *GridSet, coverage *Extent, minZoom, maxZoom *int) (*Subset, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	s := &Subset{GridSet: g, Coverage: g.Extent, MinZoom: 0, MaxZoom: g.Levels() - 1}
	if coverage != nil {
		if !coverage.Valid() {
			return nil, fmt.Errorf("grid subset of %s: coverage %v is not finite with min < max on both axes", g.ID, *coverage)
		}
		if !coverage.Intersects(g.Extent) {
			return nil, fmt.Errorf("grid subset of %s: coverage %v lies outside the grid set's extent %v", g.ID, *coverage, g.Extent)
		}
		s.Coverage = *coverage
	}
	if minZoom != nil {
		s.MinZoom = *minZoom
	}
	if maxZoom != nil {
		s.MaxZoom = *maxZoom
	}
	last := g.Levels() - 1
	switch {
	case s.MinZoom < 0 || s.MinZoom > last:
		return nil, fmt.Errorf("grid subset of %s: min zoom %d is outside the levels 0 to %d", g.ID, s.MinZoom, last)
	case s.MaxZoom < 0 || s.MaxZoom > last:
		return nil, fmt.Errorf("grid subset of %s: max zoom %d is outside the levels 0 to %d", g.ID, s.MaxZoom, last)
	case s.MinZoom > s.MaxZoom:
		return nil, fmt.Errorf("grid subset of %s: min zoom %d is greater than max zoom %d", g.ID, s.MinZoom, s.MaxZoom)
	}
	return s, nil
}

// Extent returns the subset's coverage, with the zero value replaced by the
// grid set's extent. It is the default bounds of a seed request.
func (s *Subset) Extent() Extent {
	if s.Coverage == (Extent{}) {
		return s.GridSet.Extent
	}
	return s.Coverage
}

// Validate reports whether s is usable: a valid grid set, a coverage that is
// valid and intersects the grid set's extent, and a zoom range within the
// grid set's levels. Subsets made by [NewSubset] are valid.
func (s *Subset) Validate() error {
	if s == nil {
		return errors.New("grid subset is missing")
	}
	if err := s.GridSet.Validate(); err != nil {
		return err
	}
	c := s.Extent()
	lo, hi := s.MinZoom, s.MaxZoom
	_, err := NewSubset(s.GridSet, &c, &lo, &hi)
	return err
}

// CoverageRange returns the tiles of level z that the coverage touches,
// clipped to the grid. The result is never empty. z must be a level of the
// grid set; it need not lie in MinZoom..MaxZoom.
func (s *Subset) CoverageRange(z int) TileRange {
	g := s.GridSet
	return clampRange(g.rawRange(s.Extent(), z), g.GridRange(z))
}

// Range returns the tiles of level z touched by bounds, following contract
// section 10.2: x0 = floor((minx − ox)/W_z), x1 = ceil((maxx − ox)/W_z) − 1
// and likewise for rows (shifted by the grid height for top-left grids so
// that row 0 is the bottom row). A box edge lying on a tile edge does not
// pull in the next tile. Each bound is then clamped into [Subset.CoverageRange]
// of z, so a box outside the coverage yields the edge tiles and the result is
// never empty. A degenerate box (min = max) yields the tiles at that line or
// point; bounds with a NaN coordinate or min > max yield the whole coverage.
func (s *Subset) Range(bounds Extent, z int) TileRange {
	cov := s.CoverageRange(z)
	if !(bounds.MinX <= bounds.MaxX && bounds.MinY <= bounds.MaxY) {
		return cov // NaN or inverted bounds
	}
	return clampRange(s.GridSet.rawRange(bounds, z), cov)
}

// rawRange applies the section 10.2 formula to b at level z without any
// clamping, except that a positive-size box always yields at least one tile
// per axis and indices are kept within ±indexLimit.
func (g *GridSet) rawRange(b Extent, z int) TileRange {
	w, h := g.Span(z)
	ox, oy := g.origin()
	r := TileRange{
		Z:    z,
		MinX: floorIndex((b.MinX - ox) / w),
		MaxX: ceilIndex((b.MaxX-ox)/w) - 1,
		MinY: floorIndex((b.MinY - oy) / h),
		MaxY: ceilIndex((b.MaxY-oy)/h) - 1,
	}
	if g.TopLeft {
		_, rows := g.Size(z)
		r.MinY += rows
		r.MaxY += rows
	}
	// A box narrower than the edge tolerance, or a line on a tile edge,
	// still touches the tile at its minimum edge.
	r.MaxX = max(r.MaxX, r.MinX)
	r.MaxY = max(r.MaxY, r.MinY)
	return r
}

// clampRange clamps each bound of r into lim, which must not be empty. The
// result is never empty when r.Min ≤ r.Max on both axes.
func clampRange(r, lim TileRange) TileRange {
	return TileRange{
		Z:    r.Z,
		MinX: min(max(r.MinX, lim.MinX), lim.MaxX),
		MaxX: min(max(r.MaxX, lim.MinX), lim.MaxX),
		MinY: min(max(r.MinY, lim.MinY), lim.MaxY),
		MaxY: min(max(r.MaxY, lim.MinY), lim.MaxY),
	}
}

// snap moves q, a position in tiles, onto the nearest tile edge when it is
// within edgeTolerance of it.
func snap(q float64) float64 {
	if e := math.Round(q); math.Abs(q-e) <= edgeTolerance+edgeRelativeTolerance*math.Abs(q) {
		return e
	}
	return q
}

// floorIndex returns floor(q) after snapping, limited to ±indexLimit.
func floorIndex(q float64) int64 { return toIndex(math.Floor(snap(q))) }

// ceilIndex returns ceil(q) after snapping, limited to ±indexLimit.
func ceilIndex(q float64) int64 { return toIndex(math.Ceil(snap(q))) }

func toIndex(f float64) int64 {
	switch {
	case f >= indexLimit:
		return indexLimit
	case f <= -indexLimit:
		return -indexLimit
	case math.IsNaN(f):
		return 0
	}
	return int64(f)
}
