package rest

import (
	"maps"
	"slices"

	"tilecache/internal/apperr"
	"tilecache/internal/cdn"
	"tilecache/internal/edgepath"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
)

// checkEdgeEntries refuses a grid set entry whose levels the CDN's edge
// key-value store cannot hold (a value over 1,024 characters: some 100
// levels), before it is saved: a saved one would never reach the edge,
// whose paths of the grid set would then answer 404.
func checkEdgeEntries(id string, entry layer.GridSetEntry) error {
	g, _, err := entry.Build()
	if err != nil {
		return nil // the configuration's own check reports it, in its words
	}
	t := edgepath.NewTable([]*grid.GridSet{g})
	for _, key := range slices.Sorted(maps.Keys(t)) {
		v := t[key].Encode()
		if len(v) > cdn.EdgeValueMax {
			return apperr.Invalidf("Grid set %s has %d levels, which the CDN's edge key-value store takes as %d characters under %s: more than its limit of 1,024 characters; give fewer levels",
				id, g.Levels(), len(v), key)
		}
		if len(key) > cdn.EdgeKeyMax {
			return apperr.Invalidf("Grid set id %s has %d bytes: more than the %d bytes of a key of the CDN's edge key-value store", apperr.Show(key), len(key), cdn.EdgeKeyMax)
		}
	}
	return nil
}
