package grid

import (
	"errors"
	"fmt"
	"math"
)

// maxGridTiles bounds the number of tiles over all levels of a grid set, so
// that every tile and metatile count of a plan fits in an int64.
const maxGridTiles = 1 << 62

// GridSet is a tiling of a CRS extent at a fixed list of resolutions, one per
// zoom level (contract section 10.1).
type GridSet struct {
	// ID names the grid set in requests and storage keys, e.g. "EPSG:4326".
	ID string
	// EPSG is the code of the grid set's CRS, e.g. 4326 or 900913.
	EPSG int
	// Extent is the area the grid covers, in CRS units.
	Extent Extent
	// TileWidth and TileHeight are the tile size in pixels.
	TileWidth, TileHeight int
	// Resolutions holds the CRS units per pixel of each level, level 0
	// first, strictly decreasing.
	Resolutions []float64
	// TopLeft selects the alignment: the tile origin is (MinX, MaxY) when
	// true and (MinX, MinY) when false. Row numbers count from the bottom
	// either way.
	TopLeft bool
}

// Validate reports the first problem that makes g unusable: an empty id, a
// non-positive EPSG code, an extent that is not [Extent.Valid], a tile size
// below one pixel, no resolutions, a resolution that is not finite and
// positive, resolutions that do not strictly decrease, or more tiles over all
// levels than an int64 can safely count (2^62).
func (g *GridSet) Validate() error {
	if g == nil {
		return errors.New("grid set is missing")
	}
	if g.ID == "" {
		return errors.New("grid set id is empty")
	}
	if g.EPSG <= 0 {
		return fmt.Errorf("grid set %s: EPSG code %d is not positive", g.ID, g.EPSG)
	}
	if !g.Extent.Valid() {
		return fmt.Errorf("grid set %s: extent %v is not finite with min < max on both axes", g.ID, g.Extent)
	}
	if g.TileWidth <= 0 || g.TileHeight <= 0 {
		return fmt.Errorf("grid set %s: tile size %dx%d must be at least 1x1 pixel", g.ID, g.TileWidth, g.TileHeight)
	}
	if len(g.Resolutions) == 0 {
		return fmt.Errorf("grid set %s: no resolutions", g.ID)
	}
	total := 0.0
	for z, r := range g.Resolutions {
		if math.IsNaN(r) || math.IsInf(r, 0) || r <= 0 {
			return fmt.Errorf("grid set %s: resolution %g of level %d is not finite and positive", g.ID, r, z)
		}
		if z > 0 && r >= g.Resolutions[z-1] {
			return fmt.Errorf("grid set %s: resolutions are not strictly decreasing: level %d has %g after %g",
				g.ID, z, r, g.Resolutions[z-1])
		}
		cols, rows := g.sizeFloat(z)
		total += cols * rows
		if total > maxGridTiles {
			return fmt.Errorf("grid set %s: more than 2^62 tiles up to level %d", g.ID, z)
		}
	}
	return nil
}

// Levels returns the number of zoom levels; they are numbered 0 to Levels()-1.
func (g *GridSet) Levels() int { return len(g.Resolutions) }

// Span returns the width and height in CRS units of one tile at level z.
func (g *GridSet) Span(z int) (w, h float64) {
	r := g.Resolutions[z]
	return r * float64(g.TileWidth), r * float64(g.TileHeight)
}

// Size returns the number of tile columns and rows of level z, computed as
// GeoWebCache does: ceil((extentWidth − 0.01·W_z)/W_z), where W_z is the tile
// width at z, and likewise for the height. A level always has at least one
// column and one row. z must be a level of g (it panics otherwise) and g must
// be valid.
func (g *GridSet) Size(z int) (cols, rows int64) {
	c, r := g.sizeFloat(z)
	return int64(c), int64(r)
}

func (g *GridSet) sizeFloat(z int) (cols, rows float64) {
	w, h := g.Span(z)
	cols = math.Max(1, math.Ceil((g.Extent.Width()-0.01*w)/w))
	rows = math.Max(1, math.Ceil((g.Extent.Height()-0.01*h)/h))
	return cols, rows
}

// origin returns the tile origin: (MinX, MinY), or (MinX, MaxY) for
// top-left grids.
func (g *GridSet) origin() (ox, oy float64) {
	if g.TopLeft {
		return g.Extent.MinX, g.Extent.MaxY
	}
	return g.Extent.MinX, g.Extent.MinY
}

// TileExtent returns the box covered by tile (x, y) of level z, with y
// counted from the bottom row (row 0 is southernmost) whatever the
// alignment. The tiles of the last column and row may reach beyond the grid
// set's extent when the extent is not a whole number of tiles.
func (g *GridSet) TileExtent(z int, x, y int64) Extent {
	return g.RangeExtent(TileRange{Z: z, MinX: x, MinY: y, MaxX: x, MaxY: y})
}

// RangeExtent returns the box covered by the tiles of r, for instance the
// area to render for a metatile. r must not be empty.
func (g *GridSet) RangeExtent(r TileRange) Extent {
	w, h := g.Span(r.Z)
	ox, oy := g.origin()
	y0, y1 := r.MinY, r.MaxY+1
	if g.TopLeft {
		_, rows := g.Size(r.Z)
		y0 -= rows
		y1 -= rows
	}
	return Extent{
		MinX: ox + float64(r.MinX)*w,
		MinY: oy + float64(y0)*h,
		MaxX: ox + float64(r.MaxX+1)*w,
		MaxY: oy + float64(y1)*h,
	}
}

// GridRange returns all the tiles of level z.
func (g *GridSet) GridRange(z int) TileRange {
	cols, rows := g.Size(z)
	return TileRange{Z: z, MinX: 0, MinY: 0, MaxX: cols - 1, MaxY: rows - 1}
}

// SameCRS reports whether EPSG codes a and b name the same CRS. The spherical
// Mercator codes 900913, 3857, 102113 and 102100 are one CRS; any other code
// only equals itself.
func SameCRS(a, b int) bool {
	if a == b {
		return true
	}
	return isWebMercator(a) && isWebMercator(b)
}

func isWebMercator(code int) bool {
	switch code {
	case 900913, 3857, 102113, 102100:
		return true
	}
	return false
}
