package grid

import (
	"fmt"
	"math"
)

// Extent is an axis-aligned box in a CRS's units: MinX, MinY is the
// south-west corner and MaxX, MaxY the north-east one.
type Extent struct{ MinX, MinY, MaxX, MaxY float64 }

// Valid reports whether all four coordinates are finite and MinX < MaxX and
// MinY < MaxY.
func (e Extent) Valid() bool {
	for _, v := range [4]float64{e.MinX, e.MinY, e.MaxX, e.MaxY} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return e.MinX < e.MaxX && e.MinY < e.MaxY
}

// Intersects reports whether e and o overlap with a positive area. Boxes that
// only touch along an edge or at a corner do not intersect, just as a box edge
// lying on a tile edge does not pull in the neighbouring tile.
func (e Extent) Intersects(o Extent) bool {
	return e.MinX < o.MaxX && o.MinX < e.MaxX && e.MinY < o.MaxY && o.MinY < e.MaxY
}

// Width returns MaxX − MinX.
func (e Extent) Width() float64 { return e.MaxX - e.MinX }

// Height returns MaxY − MinY.
func (e Extent) Height() float64 { return e.MaxY - e.MinY }

// String formats e as "minx,miny,maxx,maxy", the order used by the contract.
func (e Extent) String() string {
	return fmt.Sprintf("%g,%g,%g,%g", e.MinX, e.MinY, e.MaxX, e.MaxY)
}
