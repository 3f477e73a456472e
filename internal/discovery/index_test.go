package discovery

import (
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"testing"
	"time"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// entryKeys are the members of an index.json entry, in order.
var entryKeys = []string{"layer", "layerId", "title", "attribution", "gridSet", "srs", "format", "formatId", "ext",
	"parametersId", "parameters", "tileWidth", "tileHeight", "origin", "extent", "bounds", "resolutions",
	"minZoom", "maxZoom", "tileMap", "tileJSON", "tileJSONXYZ", "tiles", "xyz", "rows", "wmts"}

// objectKeys returns the member names of the JSON object in data, in order.
func objectKeys(t testing.TB, data []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var keys []string
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestIndex(t *testing.T) {
	c := testCatalogue(t, testLayers)
	type want struct {
		keys                     []string
		tileMap, tileJSON, tiles string
		xyz, wmts                string
		rows0, rowsLast          int64
		parameters               map[string]string
		origin                   [2]float64
		extent                   [4]float64
		levels                   int
	}
	without := func(drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(entryKeys), func(k string) bool { return slices.Contains(drop, k) })
	}
	tests := []struct {
		name, layer, gridSet, format, parametersID string
		params                                     map[string]string
		want                                       want
	}{
		{"web mercator", "demo:world", "EPSG:900913", "image/png", "default", nil, want{entryKeys,
			"./demo:world/EPSG:900913/png/default/tilemapresource.xml", "./demo:world/EPSG:900913/png/default/tilejson.json",
			"./demo:world/EPSG:900913/png/default/{z}/{x}/{y}.png",
			"./xyz/demo:world/EPSG:900913/png/default/{z}/{x}/{y}.png", "./demo:world/WMTSCapabilities.xml", 1, 1 << 30,
			map[string]string{},
			[2]float64{-20037508.34, -20037508.34}, [4]float64{-20037508.34, -20037508.34, 20037508.34, 20037508.34}, 31}},
		{"EPSG:4326 with parameters: no TileJSON", "demo:world", "EPSG:4326", "image/jpeg", "0123abcd", map[string]string{"STYLES": "grid"},
			want{without("tileJSON", "tileJSONXYZ"),
				"./demo:world/EPSG:4326/jpeg/0123abcd/tilemapresource.xml", "",
				"./demo:world/EPSG:4326/jpeg/0123abcd/{z}/{x}/{y}.jpeg",
				"./xyz/demo:world/EPSG:4326/jpeg/0123abcd/{z}/{x}/{y}.jpeg", "./demo:world/WMTSCapabilities.xml", 1, 1 << 21,
				map[string]string{"STYLES": "grid"},
				[2]float64{-180, -90}, [4]float64{-180, -90, 180, 90}, 22}},
		{"custom CRS: no bounds, no TileJSON", "topo", "LAEA", "image/png8", "default", nil, want{without("bounds", "tileJSON", "tileJSONXYZ"),
			"./topo%2050/LAEA/png8/default/tilemapresource.xml", "", "./topo%2050/LAEA/png8/default/{z}/{x}/{y}.png",
			"./xyz/topo%2050/LAEA/png8/default/{z}/{x}/{y}.png", "./topo%2050/WMTSCapabilities.xml", 5, 39,
			map[string]string{},
			[2]float64{2e6, 1e6}, [4]float64{2e6, 1e6, 7e6, 6e6}, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := describe(testLayer(t, c, tt.layer), tt.gridSet, tt.format, tt.parametersID, tt.params, "prefix")
			if err != nil {
				t.Fatal(err)
			}
			data, err := index([]*description{d}, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := objectKeys(t, data), []string{"tilecache", "generated", "tileSets"}; !slices.Equal(got, want) {
				t.Errorf("index members: got %v, want %v", got, want)
			}
			var doc struct {
				TileCache int               `json:"tilecache"`
				Generated string            `json:"generated"`
				TileSets  []json.RawMessage `json:"tileSets"`
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.TileCache != 1 || doc.Generated != "2026-01-02T03:04:05Z" || len(doc.TileSets) != 1 {
				t.Fatalf("got tilecache %d, generated %s, %d tile sets; want 1, 2026-01-02T03:04:05Z, 1",
					doc.TileCache, doc.Generated, len(doc.TileSets))
			}
			if got := objectKeys(t, doc.TileSets[0]); !slices.Equal(got, tt.want.keys) {
				t.Errorf("entry members:\ngot  %v\nwant %v", got, tt.want.keys)
			}
			var e indexEntry
			if err := json.Unmarshal(doc.TileSets[0], &e); err != nil {
				t.Fatal(err)
			}
			if e.TileMap != tt.want.tileMap || e.TileJSON != tt.want.tileJSON || e.Tiles != tt.want.tiles {
				t.Errorf("got tileMap %s, tileJSON %s, tiles %s; want %s, %s, %s",
					e.TileMap, e.TileJSON, e.Tiles, tt.want.tileMap, tt.want.tileJSON, tt.want.tiles)
			}
			if e.XYZ != tt.want.xyz || e.WMTS != tt.want.wmts || len(e.Rows) != tt.want.levels || e.Rows[0] != tt.want.rows0 ||
				e.Rows[len(e.Rows)-1] != tt.want.rowsLast {
				t.Errorf("got xyz %s, wmts %s, rows %v; want %s, %s, %d levels from %d to %d rows",
					e.XYZ, e.WMTS, e.Rows, tt.want.xyz, tt.want.wmts, tt.want.levels, tt.want.rows0, tt.want.rowsLast)
			}
			if e.ParametersID != tt.parametersID || len(e.Parameters) != len(tt.want.parameters) || e.Parameters["STYLES"] != tt.want.parameters["STYLES"] {
				t.Errorf("got parameters %s %v, want %s %v", e.ParametersID, e.Parameters, tt.parametersID, tt.want.parameters)
			}
			if e.Origin != tt.want.origin || e.Extent != tt.want.extent || len(e.Resolutions) != tt.want.levels {
				t.Errorf("got origin %v, extent %v, %d resolutions; want %v, %v, %d",
					e.Origin, e.Extent, len(e.Resolutions), tt.want.origin, tt.want.extent, tt.want.levels)
			}
			// Resolved against index.json's URL, the relative paths stay
			// below it: "./" keeps "demo:world" from reading as a scheme.
			base, _ := url.Parse("https://cdn.example/index.json")
			for _, ref := range []string{e.TileMap, e.Tiles, e.XYZ, e.WMTS} {
				u, err := url.Parse(ref)
				if err != nil || u.Scheme != "" {
					t.Errorf("%s: got scheme %q, err %v; want a relative reference", ref, u.Scheme, err)
					continue
				}
				r := base.ResolveReference(u)
				want, _ := url.PathUnescape(ref[1:])
				if r.Scheme != "https" || r.Host != "cdn.example" || r.Path != want {
					t.Errorf("%s resolves to %s, want path %s on https://cdn.example", ref, r, want)
				}
			}
		})
	}
	if u, err := url.Parse("demo:world/EPSG:4326"); err == nil && u.Scheme != "demo" {
		t.Errorf("without ./: got scheme %q; the test's premise is that it reads as scheme demo", u.Scheme)
	}
}

func TestSameIndexIgnoresGenerated(t *testing.T) {
	c := testCatalogue(t, testLayers)
	d, err := describe(testLayer(t, c, "demo:world"), "EPSG:900913", "image/png", "default", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	d2, err := describe(testLayer(t, c, "demo:world"), "EPSG:4326", "image/png", "default", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t1, t2 := time.Unix(0, 0), time.Unix(3600, 0)
	a, _ := index([]*description{d}, t1)
	b, _ := index([]*description{d}, t2)
	other, _ := index([]*description{d, d2}, t1)
	tests := []struct {
		name          string
		stored, fresh []byte
		want          bool
	}{
		{"only the time differs", a, b, true},
		{"a tile set more", a, other, false},
		{"stored is not JSON", []byte("<html>"), a, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameIndex(tt.stored, tt.fresh); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
