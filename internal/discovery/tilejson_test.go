package discovery

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/layer"
)

func TestTileJSON(t *testing.T) {
	c := testCatalogue(t, testLayers)
	tests := []struct {
		name, layer, gridSet, format, baseURL string
		wantOK                                bool
		wantTiles                             string
		wantZooms                             [2]int
		wantBounds                            [4]float64
		wantCenter                            [3]float64
		wantAttribution                       string
	}{
		{"whole world", "demo:world", "EPSG:900913", "image/png", "https://d123.cloudfront.net", true,
			"https://d123.cloudfront.net/demo:world/EPSG:900913/png/default/{z}/{x}/{y}.png", [2]int{0, 30},
			[4]float64{-180, -85.0511, 180, 85.0511}, [3]float64{0, 0, 0}, "tilecache test pattern"},
		{"part of the world, root-relative", "topo", "EPSG:900913", "image/png8", "", true,
			"/topo%2050/EPSG:900913/png8/default/{z}/{x}/{y}.png", [2]int{2, 9},
			[4]float64{-10.000001, 34.999999, 30, 60.000001}, [3]float64{10, 47.5, 3}, ""},
		{"EPSG:4326: none", "demo:world", "EPSG:4326", "image/png", "", false, "", [2]int{}, [4]float64{}, [3]float64{}, ""},
		{"custom grid: none", "topo", "LAEA", "image/png8", "", false, "", [2]int{}, [4]float64{}, [3]float64{}, ""},
	}
	for _, tt := range tests {
		for _, xyz := range []bool{false, true} {
			// The XYZ form: the edge's /xyz/ paths, rows from the top.
			wantScheme, wantTiles, wantNote := "tms", tt.wantTiles, "(TMS)"
			if xyz {
				wantScheme, wantNote = "xyz", "(XYZ)"
				wantTiles = strings.Replace(wantTiles, tt.baseURL+"/", tt.baseURL+"/xyz/", 1)
			}
			t.Run(fmt.Sprintf("%s/%s", tt.name, wantScheme), func(t *testing.T) {
				testTileJSON(t, testLayer(t, c, tt.layer), tt.gridSet, tt.format, tt.baseURL, xyz, tt.wantOK, wantScheme,
					wantTiles, wantNote, tt.wantZooms, tt.wantBounds, tt.wantCenter, tt.wantAttribution)
			})
		}
	}
}

func testTileJSON(t *testing.T, l *layer.Layer, gridSet, format, baseURL string, xyz, wantOK bool, wantScheme, wantTiles,
	wantNote string, wantZooms [2]int, wantBounds [4]float64, wantCenter [3]float64, wantAttribution string) {
	t.Helper()
	d, err := describe(l, gridSet, format, "default", nil, "prefix")
	if err != nil {
		t.Fatal(err)
	}
	data, ok, err := tileJSON(d, baseURL, xyz)
	if err != nil || ok != wantOK {
		t.Fatalf("got ok=%v, err=%v; want ok=%v", ok, err, wantOK)
	}
	if !ok {
		return
	}
	var doc struct {
		TileJSON    string     `json:"tilejson"`
		Name        string     `json:"name"`
		Description string     `json:"description"`
		Version     string     `json:"version"`
		Attribution string     `json:"attribution"`
		Scheme      string     `json:"scheme"`
		Tiles       []string   `json:"tiles"`
		MinZoom     int        `json:"minzoom"`
		MaxZoom     int        `json:"maxzoom"`
		Bounds      [4]float64 `json:"bounds"`
		Center      [3]float64 `json:"center"`
		Format      string     `json:"format"`
		TileSize    int        `json:"tileSize"`
	}
	dec := json.NewDecoder(bytesReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("TileJSON does not decode: %v\n%s", err, data)
	}
	if doc.TileJSON != "3.0.0" || doc.Scheme != wantScheme || doc.Version != "1.0.0" || doc.Format != "png" || doc.TileSize != 256 {
		t.Errorf("got tilejson %s, scheme %s, version %s, format %s, tileSize %d; want 3.0.0, %s, 1.0.0, png, 256",
			doc.TileJSON, doc.Scheme, doc.Version, doc.Format, doc.TileSize, wantScheme)
	}
	if doc.Name != l.Title || doc.Attribution != wantAttribution || !strings.Contains(doc.Description, wantNote) {
		t.Errorf("got name %q, attribution %q, description %q; want %q, %q, a description",
			doc.Name, doc.Attribution, doc.Description, l.Title, wantAttribution)
	}
	if !slices.Equal(doc.Tiles, []string{wantTiles}) {
		t.Errorf("tiles: got %q, want [%q]", doc.Tiles, wantTiles)
	}
	if doc.MinZoom != wantZooms[0] || doc.MaxZoom != wantZooms[1] {
		t.Errorf("zooms: got %d..%d, want %d..%d", doc.MinZoom, doc.MaxZoom, wantZooms[0], wantZooms[1])
	}
	if !approx(doc.Bounds[:], wantBounds[:]) || !approx(doc.Center[:], wantCenter[:]) {
		t.Errorf("got bounds %v, center %v; want %v, %v", doc.Bounds, doc.Center, wantBounds, wantCenter)
	}
}

// approx compares coordinates rounded to 6 decimals, within one unit of
// the last decimal.
func approx(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1.5e-6 {
			return false
		}
	}
	return true
}
