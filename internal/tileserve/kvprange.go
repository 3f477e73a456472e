package tileserve

import (
	"fmt"
	"net/http"

	"tilecache/internal/edgepath"
	"tilecache/internal/layer"
)

// KVPOutOfRange answers a WMTS KVP GetTile (the key path the OGC bindings
// map it to, edgepath.KVPTile) of a tile inside its grid set but outside
// the layer's subset (its levels or its bounds) with the OWS
// ExceptionReport WMTS 1.0.0 names for it, TileOutOfRange (400), as the
// binding answers a tile outside the grid set; the RESTful paths of the
// same tile keep their 404. Everything else goes to next. The edge has
// the grid sets' sizes but not the subsets, so such a request reaches the
// origin (the bucket has no such tile) and is answered here.
func KVPOutOfRange(layers *layer.Catalogue, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, gs, z, x, y, ok := edgepath.KVPTile(r.URL.EscapedPath())
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		l, found := layers.ByID(id)
		if !found {
			next.ServeHTTP(w, r)
			return
		}
		sub, found := l.Subset(gs)
		if !found || z >= len(sub.GridSet.Resolutions) {
			// Not a tile of the grid set: the edge answers those itself.
			next.ServeHTTP(w, r)
			return
		}
		cols, rows := sub.GridSet.Size(z)
		if x >= cols || y >= rows {
			next.ServeHTTP(w, r)
			return
		}
		locator := ""
		var rng struct{ minX, maxX, minY, maxY int64 }
		if z < sub.MinZoom || z > sub.MaxZoom {
			locator = "TileMatrix"
		} else {
			c := sub.CoverageRange(z)
			rng.minX, rng.maxX, rng.minY, rng.maxY = c.MinX, c.MaxX, c.MinY, c.MaxY
			switch {
			case y < c.MinY || y > c.MaxY:
				locator = "TileRow"
			case x < c.MinX || x > c.MaxX:
				locator = "TileCol"
			}
		}
		if locator == "" {
			next.ServeHTTP(w, r)
			return
		}
		var text string
		switch locator {
		case "TileMatrix":
			text = fmt.Sprintf("The TileMatrix %d is outside layer %s's levels %d to %d of %s", z, l.Name, sub.MinZoom, sub.MaxZoom, gs)
		case "TileRow":
			text = fmt.Sprintf("The TileRow %d is outside layer %s's rows %d to %d at TileMatrix %d of %s", rows-1-y, l.Name, rows-1-rng.maxY, rows-1-rng.minY, z, gs)
		default:
			text = fmt.Sprintf("The TileCol %d is outside layer %s's columns %d to %d at TileMatrix %d of %s", x, l.Name, rng.minX, rng.maxX, z, gs)
		}
		cors(w.Header())
		w.Header().Set("Cache-Control", "no-store")
		writeAnswer(w, edgepath.OWSException(http.StatusBadRequest, "TileOutOfRange", locator, text))
	})
}
