package grid

import "iter"

// TileRange is a rectangle of tiles at zoom level Z. All four bounds are
// inclusive; rows count from the bottom of the grid. A range with
// MaxX < MinX or MaxY < MinY is empty.
type TileRange struct {
	Z                      int
	MinX, MinY, MaxX, MaxY int64
}

// Count returns the number of tiles in r, 0 if r is empty.
func (r TileRange) Count() int64 {
	if r.MaxX < r.MinX || r.MaxY < r.MinY {
		return 0
	}
	return (r.MaxX - r.MinX + 1) * (r.MaxY - r.MinY + 1)
}

// Contains reports whether tile (x, y) of level r.Z lies in r.
func (r TileRange) Contains(x, y int64) bool {
	return r.MinX <= x && x <= r.MaxX && r.MinY <= y && y <= r.MaxY
}

// ContainsRange reports whether every tile of o lies in r (an empty o
// does).
func (r TileRange) ContainsRange(o TileRange) bool {
	return o.Count() == 0 || (r.Z == o.Z && r.MinX <= o.MinX && o.MaxX <= r.MaxX && r.MinY <= o.MinY && o.MaxY <= r.MaxY)
}

// Intersect returns the tiles common to r and o and whether there are any.
// Ranges of different levels have nothing in common.
func (r TileRange) Intersect(o TileRange) (TileRange, bool) {
	if r.Z != o.Z {
		return TileRange{Z: r.Z, MinX: 0, MinY: 0, MaxX: -1, MaxY: -1}, false
	}
	out := TileRange{
		Z:    r.Z,
		MinX: max(r.MinX, o.MinX), MinY: max(r.MinY, o.MinY),
		MaxX: min(r.MaxX, o.MaxX), MaxY: min(r.MaxY, o.MaxY),
	}
	return out, out.Count() > 0
}

// All yields the (x, y) positions of r in seeding order: row by row from the
// bottom, column by column from the left.
func (r TileRange) All() iter.Seq2[int64, int64] {
	return func(yield func(int64, int64) bool) {
		for y := r.MinY; y <= r.MaxY; y++ {
			for x := r.MinX; x <= r.MaxX; x++ {
				if !yield(x, y) {
					return
				}
			}
		}
	}
}
