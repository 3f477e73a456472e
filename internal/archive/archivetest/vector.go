package archivetest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/maptile"
)

// VectorUpstream starts an XYZ server of Mapbox Vector Tiles, closed
// when t ends: each tile has one layer, places, of one point (its
// centre) named "tile z/x/y"; the tiles of even columns are sent
// gzip-compressed (Content-Encoding: gzip), the others as they are.
// VectorLayer is a layer file serving it.
func VectorUpstream(t testing.TB) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var z, x, y uint32
		if _, err := fmt.Sscanf(r.URL.Path, "/%d/%d/%d.pbf", &z, &x, &y); err != nil {
			http.NotFound(w, r)
			return
		}
		tl := maptile.New(x, y, maptile.Zoom(z))
		fc := geojson.NewFeatureCollection()
		f := geojson.NewFeature(tl.Bound().Center())
		f.Properties["name"] = fmt.Sprintf("tile %d/%d/%d", z, x, y)
		fc.Append(f)
		layers := mvt.NewLayers(map[string]*geojson.FeatureCollection{"places": fc})
		layers.ProjectToTile(tl)
		marshal := mvt.Marshal
		if x%2 == 0 {
			marshal = mvt.MarshalGzipped
			w.Header().Set("Content-Encoding", "gzip")
		}
		b, err := marshal(layers)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.mapbox-vector-tile")
		w.Write(b)
	}))
	t.Cleanup(up.Close)
	return up
}

// VectorLayer is a layer file of one layer, vec:places, whose source is
// the VectorUpstream at url: Mapbox Vector Tiles of EPSG:900913 levels
// 0-2, no metatiling.
func VectorLayer(url string) string {
	return `
layers:
  - name: vec:places
    gridSubsets: [{gridSet: EPSG:900913, zoomStop: 2}]
    formats: [application/vnd.mapbox-vector-tile]
    metatiling: [1, 1]
    source: {type: xyz, url: "` + url + `/{z}/{x}/{y}.pbf", format: application/vnd.mapbox-vector-tile, allowPrivateUpstream: true}
`
}
