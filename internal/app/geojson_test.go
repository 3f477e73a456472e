package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/vectortile"
)

// geoJSONLayers are GeoJSON tile layers of an XYZ upstream (%[1]s): the
// test WMS (MapServer 8) cannot answer GetMap in GeoJSON (its OGR output
// formats serve WFS only), GeoServer's WMS can, and so can tile servers
// of .geojson tiles.
const geoJSONLayers = `
layers:
  - name: xyz:geojson
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [application/json;type=geojson]
    metatiling: [2, 2]
    renderOnMiss: {enabled: true, zoomStop: 5}
    source: {type: xyz, url: "%[1]s/{z}/{x}/{y}.geojson", retries: -1, skipBlank: transparent}
  - name: xyz:geojson-hostile
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [application/json;type=geojson]
    metatiling: [1, 1]
    source: {type: xyz, url: "%[1]s/hostile/{z}/{x}/{y}.geojson", retries: -1}
`

// geoJSONTile is the upstream's tile z/x/y (y from the top), in
// EPSG:4326 coordinates as GeoJSON has them: a point, a line and a
// polygon within the tile's longitudes (latitudes -60..60), the point
// with the tile's numbers as properties; tiles with x+y odd at z ≥ 2 hold
// no feature (an empty FeatureCollection).
func geoJSONTile(z int, x, y int64) []byte {
	if z >= 2 && (x+y)%2 == 1 {
		return []byte(`{"type":"FeatureCollection","features":[]}`)
	}
	box := tileBox("EPSG:900913", z, x, int64(1)<<z-1-y)
	lon := func(m float64) float64 { return m / 20037508.342789244 * 180 }
	w, e := lon(box[0]), lon(box[2])
	s, n := -60.0, 60.0
	cx, cy := (w+e)/2, (s+n)/2
	return fmt.Appendf(nil, `{"type":"FeatureCollection","features":[`+
		`{"type":"Feature","geometry":{"type":"Point","coordinates":[%[1]g,%[2]g]},"properties":{"z":%[5]d,"x":%[6]d,"y":%[7]d,"kind":"point"}},`+
		`{"type":"Feature","geometry":{"type":"LineString","coordinates":[[%[3]g,%[2]g],[%[4]g,%[2]g]]},"properties":{"kind":"line"}},`+
		`{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[%[3]g,%[2]g],[%[4]g,%[2]g],[%[1]g,%[8]g],[%[3]g,%[2]g]]]},"properties":{"kind":"polygon"}}]}`,
		cx, cy, w, e, z, x, y, n)
}

// geoJSONUpstream serves geoJSONTile as application/geo+json; under
// /hostile/ it answers what is not a GeoJSON tile: z0 an HTML page, z1 a
// truncated FeatureCollection, z2 column 0 a 50 MB body, column 1
// brackets nested 100,000 deep, else a single Feature.
func geoJSONUpstream(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var z int
		var x, y int64
		hostile := strings.HasPrefix(r.URL.Path, "/hostile/")
		if _, err := fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/hostile"), "/%d/%d/%d.geojson", &z, &x, &y); err != nil {
			http.NotFound(w, r)
			return
		}
		body := geoJSONTile(z, x, y)
		w.Header().Set("Content-Type", "application/geo+json")
		if hostile {
			switch {
			case z == 0:
				w.Header().Set("Content-Type", "text/html")
				w.Write([]byte("<html><body><h1>Service Unavailable</h1></body></html>"))
			case z == 1:
				w.Write(body[:len(body)/2])
			case x == 0:
				w.Write([]byte(`{"type":"FeatureCollection","features":[],"pad":"`))
				w.Write(bytes.Repeat([]byte("a"), 50<<20))
				w.Write([]byte(`"}`))
			case x == 1:
				w.Write(bytes.Repeat([]byte("["), 100000))
			default:
				w.Write([]byte(`{"type":"Feature","geometry":null,"properties":{}}`))
			}
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestGeoJSONTiles seeds GeoJSON tiles (application/json;type=geojson)
// from an XYZ upstream: each is stored as the upstream sent it with the
// format's Content-Type under GeoWebCache's key layout
// (geojson/…/y.geojson), an empty FeatureCollection is a blank tile
// (skipped), and every edge path (the /tiles path, the stored key's, XYZ,
// WMTS and OGC API – Tiles' vector tiles path) answers the stored bytes
// with that Content-Type; a render on miss too. The WMTS capabilities and
// OGC API – Tiles list the format; TileJSON has no vector_layers.
func TestGeoJSONTiles(t *testing.T) {
	t.Parallel()
	up := geoJSONUpstream(t)
	a := apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(geoJSONLayers, up.URL), SeedThreads: 2})
	wantDone(t, waitFinished(t, a, ids(seedReq(t, a, "xyz:geojson", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":3,
		"format":"application/json;type=geojson","threadCount":2}}`)), 120*time.Second))
	prefix := "xyz:geojson/EPSG:900913/geojson/default/"
	stored := map[string]bool{}
	for _, k := range keys(t, a, prefix) {
		stored[k] = true
	}
	want := 0
	for z := range 4 {
		for x := range int64(1) << z {
			for yTop := range int64(1) << z {
				y := int64(1)<<z - 1 - yTop
				key := fmt.Sprintf("%s%d/%d/%d.geojson", prefix, z, x, y)
				body := geoJSONTile(z, x, yTop)
				vt, err := vectortile.ParseGeoJSON(body, 0)
				if err != nil {
					t.Fatal(err)
				}
				if vt.Empty() {
					if stored[key] {
						t.Errorf("%s stored: the upstream's tile has no feature (skipBlank)", key)
					}
					continue
				}
				want++
				data, meta, found := a.Get(t, key)
				if !found || !bytes.Equal(data, body) || meta.ContentType != vectortile.GeoJSON || meta.ContentEncoding != "" {
					t.Errorf("%s: found %v, %d bytes, meta %+v; want the upstream's %d bytes as %s", key, found, len(data), meta, len(body), vectortile.GeoJSON)
				}
			}
		}
	}
	if len(stored) != want || want == 0 {
		t.Errorf("%d tiles stored, want %d", len(stored), want)
	}
	get := func(path string) (int, http.Header, []byte) {
		res, err := http.Get(a.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, b
	}
	for _, tl := range [][3]int64{{0, 0, 0}, {2, 1, 2}, {3, 4, 3}} {
		z, x, y := int(tl[0]), tl[1], tl[2] // y from the bottom
		top := int64(1)<<z - 1 - y
		key := fmt.Sprintf("%s%d/%d/%d.geojson", prefix, z, x, y)
		data, _, found := a.Get(t, key)
		if !found {
			t.Fatalf("%s not stored", key)
		}
		for _, path := range []string{
			fmt.Sprintf("/tiles/xyz:geojson/EPSG:900913/geojson/%d/%d/%d.geojson", z, x, y),
			"/" + key,
			fmt.Sprintf("/xyz/xyz:geojson/EPSG:900913/geojson/default/%d/%d/%d.geojson", z, x, top),
			fmt.Sprintf("/wmts/xyz:geojson/EPSG:900913/geojson/default/%d/%d/%d.geojson", z, x, top),
			fmt.Sprintf("/ogcapi/collections/xyz:geojson/tiles/WebMercatorQuad/%d/%d/%d.geojson", z, top, x),
		} {
			status, h, got := get(path)
			if status != 200 || h.Get("Content-Type") != vectortile.GeoJSON || !bytes.Equal(got, data) {
				t.Errorf("%s: %d %q, %d bytes; want 200 %s with the %d stored bytes", path, status, h.Get("Content-Type"), len(got), vectortile.GeoJSON, len(data))
			}
		}
	}
	// A render on miss stores and answers the upstream's tile; a miss of
	// an empty tile is a 404.
	status, h, body := get("/tiles/xyz:geojson/EPSG:900913/geojson/4/8/7.geojson") // x+yTop = 8+8 even
	if status != 200 || h.Get("Content-Type") != vectortile.GeoJSON || !bytes.Equal(body, geoJSONTile(4, 8, 8)) {
		t.Errorf("render on miss: %d %q %.200s", status, h.Get("Content-Type"), body)
	}
	if status, _, body := get("/tiles/xyz:geojson/EPSG:900913/geojson/4/8/6.geojson"); status != 404 {
		t.Errorf("render on miss of an empty tile: %d %.200s, want 404", status, body)
	}
	// Discovery: WMTS capabilities and OGC API – Tiles list the format.
	if status, _, caps := get("/WMTSCapabilities.xml"); status != 200 || !bytes.Contains(caps, []byte("<Format>application/json;type=geojson</Format>")) {
		t.Errorf("WMTS capabilities (%d) do not list the GeoJSON format", status)
	}
	if status, _, doc := get("/ogcapi/collections/xyz:geojson/tiles"); status != 200 || !bytes.Contains(doc, []byte(`"dataType": "vector"`)) {
		t.Errorf("OGC API vector tile sets: %d %.500s", status, doc)
	}
	if status, _, doc := get("/ogcapi/conformance"); status != 200 || !bytes.Contains(doc, []byte("conf/geojson")) {
		t.Errorf("OGC API conformance: %d %.800s", status, doc)
	}
	status, _, doc := get("/" + prefix + "tilejson-xyz.json")
	var tj map[string]any
	if err := json.Unmarshal(doc, &tj); status != 200 || err != nil || tj["format"] != "geojson" || tj["vector_layers"] != nil {
		t.Errorf("TileJSON: %d %v %.500s; want format geojson, no vector_layers", status, err, doc)
	}
}

// TestGeoJSONHostileUpstream: an upstream answering an HTML page, a
// truncated FeatureCollection, a 50 MB body, brackets nested 100,000 deep
// or a single Feature for a GeoJSON tile fails the tile as a bad image
// does and stores nothing.
func TestGeoJSONHostileUpstream(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "how a source treats a hostile or secret-bearing upstream")
	up := geoJSONUpstream(t)
	var log apptest.LogBuffer
	a := apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(geoJSONLayers, up.URL), SeedThreads: 2, Log: &log})
	tasks := waitFinished(t, a, ids(seedReq(t, a, "xyz:geojson-hostile", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":2,
		"format":"application/json;type=geojson","threadCount":1,"tileFailureRetryCount":0,"tileFailureRetryWaitTime":1,
		"totalFailuresBeforeAborting":1000}}`)), 120*time.Second)
	failures, err := a.Local.Tasks.AddFailures(t.Context(), tasks[0].JobID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tasks[0].Status != task.Done || failures != 21 {
		t.Errorf("got %+v with %d failures, want DONE with 21 failures (every tile)", tasks[0], failures)
	}
	if got := keys(t, a, "xyz:geojson-hostile/"); len(got) != 0 {
		t.Errorf("stored %v, want nothing", got)
	}
	for _, want := range []string{"Service Unavailable", "not a GeoJSON FeatureCollection: unexpected end", "answer larger than",
		"nested deeper than", "not a FeatureCollection"} {
		if !logHas(log.String(), "tile failure", want) {
			t.Errorf("no tile failure logged with %q:\n%.3000s", want, log.String())
		}
	}
}
