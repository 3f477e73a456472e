package grid

// The built-in grid sets of contract section 10.1.
const (
	// EPSG4326 is the id of the built-in geographic grid set.
	EPSG4326 = "EPSG:4326"
	// EPSG900913 is the id of the built-in spherical Mercator grid set. Its
	// CRS is also known as EPSG:3857 (see [SameCRS]), but "EPSG:3857" is not
	// a grid set id.
	EPSG900913 = "EPSG:900913"
)

// Builtin returns a fresh copy of the built-in grid set with the given id,
// matched exactly (case-sensitive), and whether there is one:
//
//   - "EPSG:4326": CRS 4326, extent −180,−90,180,90, 256×256 pixel tiles,
//     22 levels (0–21) starting at 0.703125°/px and halving, bottom-left;
//     level z has 2^(z+1) × 2^z tiles.
//   - "EPSG:900913": CRS 900913, extent ±20037508.34 on both axes, 256×256
//     pixel tiles, 31 levels (0–30) starting at 156543.03390625 m/px and
//     halving, bottom-left; level z has 2^z × 2^z tiles.
func Builtin(id string) (*GridSet, bool) {
	switch id {
	case EPSG4326:
		return &GridSet{
			ID:          EPSG4326,
			EPSG:        4326,
			Extent:      Extent{MinX: -180, MinY: -90, MaxX: 180, MaxY: 90},
			TileWidth:   256,
			TileHeight:  256,
			Resolutions: halvings(0.703125, 22),
		}, true
	case EPSG900913:
		const half = 20037508.34
		return &GridSet{
			ID:          EPSG900913,
			EPSG:        900913,
			Extent:      Extent{MinX: -half, MinY: -half, MaxX: half, MaxY: half},
			TileWidth:   256,
			TileHeight:  256,
			Resolutions: halvings(156543.03390625, 31),
		}, true
	}
	return nil, false
}

// Builtins returns fresh copies of every built-in grid set, EPSG:4326 first.
// Callers own the result and may modify it.
func Builtins() []*GridSet {
	ids := [...]string{EPSG4326, EPSG900913}
	out := make([]*GridSet, 0, len(ids))
	for _, id := range ids {
		g, _ := Builtin(id)
		out = append(out, g)
	}
	return out
}

// halvings returns n resolutions starting at r0, each half the one before.
// Dividing by a power of two is exact, so level z is exactly r0/2^z.
func halvings(r0 float64, n int) []float64 {
	out := make([]float64, n)
	for z := range out {
		out[z] = r0
		r0 /= 2
	}
	return out
}
