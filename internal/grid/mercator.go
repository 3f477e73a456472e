package grid

import "math"

// mercatorHalf is half the width of the Web Mercator world, in metres.
const mercatorHalf = math.Pi * 6378137.0

// IsWebMercatorPyramid reports whether the subset's levels are the
// standard Web Mercator tiles: a Web Mercator CRS, the world extent,
// square tiles, and level z made of 2^z × 2^z tiles exactly covering it
// (what TileJSON, PMTiles and MBTiles describe, rows from the top in XYZ
// order).
func IsWebMercatorPyramid(s *Subset) bool {
	g := s.GridSet
	const metre = 1.0
	if !SameCRS(g.EPSG, 3857) || g.TileWidth != g.TileHeight {
		return false
	}
	for _, v := range [...]float64{g.Extent.MinX, g.Extent.MinY, -g.Extent.MaxX, -g.Extent.MaxY} {
		if math.Abs(v+mercatorHalf) > metre {
			return false
		}
	}
	res0 := g.Extent.Width() / float64(g.TileWidth)
	for z := s.MinZoom; z <= s.MaxZoom; z++ {
		if z > 62 {
			return false
		}
		n := int64(1) << z
		cols, rows := g.Size(z)
		want := res0 / float64(n)
		if cols != n || rows != n || math.Abs(g.Resolutions[z]-want) > 1e-9*want {
			return false
		}
	}
	return true
}
