package layer

import (
	"fmt"
	"math"
	"slices"

	"tilecache/internal/grid"
)

// DefaultPixelSize is the size of a pixel in metres that scale
// denominators assume when a grid set does not give one (OGC's 0.28 mm).
const DefaultPixelSize = 0.00028

// EPSG4326MetersPerUnit is the length of a degree at the equator, the
// metres per unit GeoWebCache assumes for EPSG:4326: 6378137 × 2π ÷ 360
// rounded at each step in float64 as GeoWebCache computes it (the exact
// constant expression rounds once, to a different last digit).
const EPSG4326MetersPerUnit = 111319.49079327358

// GridSetInfo is what a custom grid set's entry says beyond the grid
// itself: text for people and the form its levels were given in, kept so
// that the grid set can be written back as it was defined.
type GridSetInfo struct {
	Description string
	// ScaleNames name the levels, one per level; nil when not given.
	ScaleNames []string
	// YCoordinateFirst says that the CRS's axis order is y, x.
	YCoordinateFirst bool
	// ScaleDenominators are the levels as given, when they were given as
	// scale denominators instead of resolutions (nil otherwise).
	ScaleDenominators []float64
	// MetersPerUnit and PixelSize are the values given (0: not given).
	MetersPerUnit, PixelSize float64
	// Managed says where the grid set is changed: in the layer file
	// (ManagedByFile) or at run time (ManagedByStore); "" for a built-in
	// grid set.
	Managed Managed
}

// buildGridSet checks a custom grid set's entry and returns the grid set
// and what else the entry says.
func buildGridSet(gd GridSetEntry) (*grid.GridSet, GridSetInfo, error) {
	info := GridSetInfo{Description: gd.Description, ScaleNames: gd.ScaleNames, YCoordinateFirst: gd.YCoordinateFirst,
		ScaleDenominators: gd.ScaleDenominators, Managed: ManagedByFile}
	if err := checkID("grid set", gd.ID); err != nil {
		return nil, info, err
	}
	if gd.ManagedBy != "" {
		if !gd.ManagedBy.valid() {
			return nil, info, fmt.Errorf("managedBy %q: give file or store", gd.ManagedBy)
		}
		info.Managed = gd.ManagedBy
	}
	e, err := extent(gd.Extent)
	if err != nil {
		return nil, info, err
	}
	g := &grid.GridSet{ID: gd.ID, EPSG: gd.EPSG, Extent: e, TileWidth: gd.TileWidth, TileHeight: gd.TileHeight,
		Resolutions: gd.Resolutions, TopLeft: gd.AlignTopLeft}
	if g.TileWidth == 0 {
		g.TileWidth = 256
	}
	if g.TileHeight == 0 {
		g.TileHeight = 256
	}
	if gd.MetersPerUnit != nil {
		info.MetersPerUnit = *gd.MetersPerUnit
		if !(info.MetersPerUnit > 0) || math.IsInf(info.MetersPerUnit, 0) {
			return nil, info, fmt.Errorf("metersPerUnit %g must be finite and positive", info.MetersPerUnit)
		}
	}
	if gd.PixelSize != nil {
		info.PixelSize = *gd.PixelSize
		if !(info.PixelSize > 0) || math.IsInf(info.PixelSize, 0) {
			return nil, info, fmt.Errorf("pixelSize %g must be finite and positive", info.PixelSize)
		}
	}
	switch {
	case gd.Resolutions != nil && gd.ScaleDenominators != nil:
		return nil, info, fmt.Errorf("give either resolutions or scaleDenominators, not both")
	case gd.ScaleDenominators != nil:
		g.Resolutions = Resolutions(gd.ScaleDenominators, info.MetersPerUnit, info.PixelSize, g.EPSG)
	}
	if err := g.Validate(); err != nil {
		return nil, info, err
	}
	if info.ScaleNames != nil && len(info.ScaleNames) != g.Levels() {
		return nil, info, fmt.Errorf("scaleNames: %d names for %d levels", len(info.ScaleNames), g.Levels())
	}
	if slices.Contains(info.ScaleNames, "") {
		return nil, info, fmt.Errorf("scaleNames: a name is empty")
	}
	return g, info, nil
}

// Resolutions converts scale denominators to resolutions (CRS units per
// pixel) as GeoWebCache does: pixelSize × (denominator ÷ metersPerUnit). A
// zero pixelSize means [DefaultPixelSize]; a zero metersPerUnit means
// [EPSG4326MetersPerUnit] for EPSG:4326 and 1 otherwise.
func Resolutions(scaleDenominators []float64, metersPerUnit, pixelSize float64, epsg int) []float64 {
	if pixelSize == 0 {
		pixelSize = DefaultPixelSize
	}
	if metersPerUnit == 0 {
		metersPerUnit = 1
		if epsg == 4326 {
			metersPerUnit = EPSG4326MetersPerUnit
		}
	}
	out := make([]float64, len(scaleDenominators))
	for i, s := range scaleDenominators {
		out[i] = pixelSize * (s / metersPerUnit)
	}
	return out
}

// Build checks a grid set entry as the configuration would and returns
// the grid set and what else the entry says, or the error the whole
// configuration would report for it.
func (g GridSetEntry) Build() (*grid.GridSet, GridSetInfo, error) {
	return buildGridSet(g)
}
