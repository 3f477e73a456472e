package rest

import (
	"tilecache/internal/grid"
	"tilecache/internal/layer"
)

// overviewSubset is one grid subset of a layer in the overview: the area
// it covers, in the grid set's CRS, and its first and last level (the
// console's seed form refuses levels beyond them and goes to the extent).
type overviewSubset struct {
	GridSet   string     `json:"gridSet"`
	Extent    [4]float64 `json:"extent"`
	ZoomStart int        `json:"zoomStart"`
	ZoomStop  int        `json:"zoomStop"`
}

// layerSubsets lists the grid subsets of l, in its order.
func layerSubsets(l *layer.Layer) []overviewSubset {
	out := make([]overviewSubset, 0, len(l.Subsets))
	for _, s := range l.Subsets {
		c := s.Coverage
		if c == (grid.Extent{}) { // the zero value: the whole grid set
			c = s.GridSet.Extent
		}
		out = append(out, overviewSubset{GridSet: s.GridSet.ID, Extent: [4]float64{c.MinX, c.MinY, c.MaxX, c.MaxY}, ZoomStart: s.MinZoom, ZoomStop: s.MaxZoom})
	}
	return out
}
