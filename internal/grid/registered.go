package grid

import (
	"math"
	"slices"
)

// The OGC's registered tile matrix sets (OGC 17-083r4, Annex D) that a
// grid set can be: OGC API – Tiles clients know them by these ids.
const (
	// WebMercatorQuad is the spherical Mercator pyramid: 256-pixel tiles,
	// one tile at level 0, four times as many at each next level.
	WebMercatorQuad = "WebMercatorQuad"
	// WorldCRS84Quad is the geographic pyramid: 256-pixel tiles, two
	// tiles side by side at level 0.
	WorldCRS84Quad = "WorldCRS84Quad"
)

// mercatorHalfWorld is half the width of the spherical Mercator world, in
// metres.
const mercatorHalfWorld = math.Pi * 6378137

// Registered returns the id of the OGC registered tile matrix set whose
// first levels g's levels are (WebMercatorQuad or WorldCRS84Quad), or ""
// when it is none: same CRS, tile size, extent, level sizes and
// resolutions (to a relative 1e-9).
func (g *GridSet) Registered() string {
	if g.TileWidth != 256 || g.TileHeight != 256 {
		return ""
	}
	var name string
	var ext Extent
	var r0 float64
	var cols0 int64
	switch {
	case SameCRS(g.EPSG, 3857):
		name, ext, r0, cols0 = WebMercatorQuad,
			Extent{MinX: -mercatorHalfWorld, MinY: -mercatorHalfWorld, MaxX: mercatorHalfWorld, MaxY: mercatorHalfWorld},
			2*mercatorHalfWorld/256, 1
	case g.EPSG == 4326:
		name, ext, r0, cols0 = WorldCRS84Quad, Extent{MinX: -180, MinY: -90, MaxX: 180, MaxY: 90}, 180.0/256, 2
	default:
		return ""
	}
	near := func(a, b, scale float64) bool { return math.Abs(a-b) <= 1e-9*scale }
	width := ext.Width()
	if !near(g.Extent.MinX, ext.MinX, width) || !near(g.Extent.MinY, ext.MinY, width) ||
		!near(g.Extent.MaxX, ext.MaxX, width) || !near(g.Extent.MaxY, ext.MaxY, width) {
		return ""
	}
	for z, r := range g.Resolutions {
		want := r0 / float64(int64(1)<<z)
		cols, rows := g.Size(z)
		if z > 62 || !near(r, want, want) || cols != cols0<<z || rows != int64(1)<<z {
			return ""
		}
	}
	return name
}

// TileMatrixSetIDs returns the id under which each of sets is published to
// OGC API – Tiles clients and reached on the edge's paths, by grid set id:
// the registered tile matrix set it is (see [GridSet.Registered]), or its
// own id. A registered id goes to one grid set only, the first by id, and
// only to a grid set whose id needs no escaping in a path (letters,
// digits, ":", ".", "_", "-"), and never when a grid set has that id
// itself.
func TileMatrixSetIDs(sets []*GridSet) map[string]string {
	sorted := slices.Clone(sets)
	slices.SortFunc(sorted, func(a, b *GridSet) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	taken := map[string]bool{}
	for _, g := range sorted {
		taken[g.ID] = true
	}
	ids := map[string]string{}
	for _, g := range sorted {
		ids[g.ID] = g.ID
		if name := g.Registered(); name != "" && !taken[name] && plainID(g.ID) {
			ids[g.ID], taken[name] = name, true
		}
	}
	return ids
}

// plainID reports whether id is made of letters, digits, ":", ".", "_"
// and "-" only.
func plainID(id string) bool {
	for _, c := range id {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return id != ""
}
