package discovery

import (
	"encoding/json"
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"tilecache/internal/edgepath"
	"tilecache/internal/grid"
	"tilecache/internal/tilestore"
)

// TestDocumentsAddressStoredTiles stores a few tiles under their keys,
// publishes the documents, and checks that every URL template of the
// documents, expanded for those tiles, names exactly the stored key, and
// that the TMS origin and units-per-pixel give the grid's tile extents.
func TestDocumentsAddressStoredTiles(t *testing.T) {
	forEachStore(t, func(t *testing.T, s tilestore.Store) {
		c := testCatalogue(t, testLayers)
		const prefix = "pre"
		// The CDN serves the store's prefix at the root of the base URL.
		const baseURL = "https://cdn.example/base"
		p, _ := newTestPublisher(s, c, prefix, baseURL)
		cases := []struct {
			layer, gridSet, format string
			params                 map[string]string
			tiles                  [][3]int64 // z, x, y
		}{
			{"demo:world", "EPSG:900913", "image/png", nil, [][3]int64{{0, 0, 0}, {3, 5, 2}, {9, 300, 400}}},
			{"demo:world", "EPSG:4326", "image/jpeg", map[string]string{"STYLES": "grid"}, [][3]int64{{0, 1, 0}, {4, 20, 9}}},
			{"topo", "LAEA", "image/png8", nil, [][3]int64{{0, 4, 4}, {3, 38, 0}}},
			{"topo", "TopLeftWhole", "image/png8", nil, [][3]int64{{0, 1, 0}, {2, 7, 3}}},
			{"topo", "EPSG:900913", "image/png8", nil, [][3]int64{{2, 2, 2}, {9, 260, 330}}},
		}
		for _, tc := range cases {
			l := testLayer(t, c, tc.layer)
			set := tileSetOf(t, prefix, l.ID, tc.gridSet, tc.format, tc.params)
			for _, tile := range tc.tiles {
				mustPut(t, s, set.Key(int(tile[0]), tile[1], tile[2]), []byte("tile"), pngMeta)
			}
			if tc.params != nil {
				mustPut(t, s, tilestore.ParametersKey(prefix, l.ID, set.ParametersID), []byte("STYLES=grid\n"),
					tilestore.Meta{ContentType: "text/plain; charset=utf-8"})
			}
			if _, err := p.Ensure(t.Context(), tc.layer, tc.gridSet, tc.format, tc.params); err != nil {
				t.Fatalf("Ensure(%s, %s, %s) error: %v", tc.layer, tc.gridSet, tc.format, err)
			}
		}

		indexData, _ := mustGet(t, s, prefix+"/"+indexName)
		var idx indexDoc
		if err := json.Unmarshal(indexData, &idx); err != nil {
			t.Fatal(err)
		}
		if len(idx.TileSets) != len(cases) {
			t.Errorf("index lists %d tile sets, want %d", len(idx.TileSets), len(cases))
		}
		// A path relative to index.json names the key below the prefix;
		// an absolute URL names the key below baseURL.
		relKey := func(ref string) string {
			t.Helper()
			if !strings.HasPrefix(ref, "./") {
				t.Fatalf("%s: want a path starting with ./", ref)
			}
			return prefix + "/" + unescape(t, ref[2:])
		}
		absKey := func(ref string) string {
			t.Helper()
			rest, ok := strings.CutPrefix(ref, baseURL+"/")
			if !ok {
				t.Fatalf("%s: want a URL below %s", ref, baseURL)
			}
			return prefix + "/" + unescape(t, rest)
		}
		// An edge path (XYZ, rows from the top) names the key the edge
		// maps it to.
		table := edgepath.TableOf(c)
		edgeKey := func(path string) string {
			t.Helper()
			k, ok := edgepath.Map(path, table)
			if !ok {
				t.Fatalf("%s: the edge refuses it", path)
			}
			return prefix + unescape(t, k)
		}
		for _, tc := range cases {
			l := testLayer(t, c, tc.layer)
			set := tileSetOf(t, prefix, l.ID, tc.gridSet, tc.format, tc.params)
			e := findEntry(t, idx.TileSets, set)
			g := mustSubset(t, l.Subset, tc.gridSet).GridSet
			if tc.params != nil && e.Parameters["STYLES"] != "grid" {
				t.Errorf("%s: parameters: got %v, want STYLES=grid", set.Dir(), e.Parameters)
			}
			tmData, _ := mustGet(t, s, relKey(e.TileMap))
			tm := parseTileMap(t, tmData)
			var tileJSONTemplate string
			if e.TileJSON != "" {
				data, _ := mustGet(t, s, relKey(e.TileJSON))
				var tj struct{ Tiles []string }
				if err := json.Unmarshal(data, &tj); err != nil || len(tj.Tiles) != 1 {
					t.Fatalf("%s: got tiles %v, err %v; want one template", e.TileJSON, tj.Tiles, err)
				}
				tileJSONTemplate = tj.Tiles[0]
			}
			var tileJSONXYZTemplate string
			if e.TileJSONXYZ != "" {
				data, _ := mustGet(t, s, relKey(e.TileJSONXYZ))
				var tj struct {
					Tiles  []string
					Scheme string
				}
				if err := json.Unmarshal(data, &tj); err != nil || len(tj.Tiles) != 1 || tj.Scheme != "xyz" {
					t.Fatalf("%s: got tiles %v, scheme %s, err %v; want one template, xyz", e.TileJSONXYZ, tj.Tiles, tj.Scheme, err)
				}
				tileJSONXYZTemplate = tj.Tiles[0]
			}
			for _, tile := range tc.tiles {
				z, x, y := int(tile[0]), tile[1], tile[2]
				want := set.Key(z, x, y)
				if !exists(t, s, want) {
					t.Fatalf("tile %s was not stored", want)
				}
				if got := relKey(expand(e.Tiles, z, x, y)); got != want {
					t.Errorf("index tiles %s at %d/%d/%d: got key %s, want %s", e.Tiles, z, x, y, got, want)
				}
				// Rows from the top for the XYZ forms.
				top := e.Rows[z] - 1 - y
				if got := edgeKey(expand(e.XYZ, z, x, top)[1:]); got != want {
					t.Errorf("index xyz %s at %d/%d/%d: got key %s, want %s", e.XYZ, z, x, y, got, want)
				}
				if tileJSONXYZTemplate != "" {
					if got := edgeKey(strings.TrimPrefix(expand(tileJSONXYZTemplate, z, x, top), baseURL)); got != want {
						t.Errorf("TileJSON xyz tiles %s at %d/%d/%d: got key %s, want %s", tileJSONXYZTemplate, z, x, y, got, want)
					}
				}
				if tileJSONTemplate != "" {
					if got := absKey(expand(tileJSONTemplate, z, x, y)); got != want {
						t.Errorf("TileJSON tiles %s at %d/%d/%d: got key %s, want %s", tileJSONTemplate, z, x, y, got, want)
					}
				}
				ts := tmsLevel(t, tm, z)
				href := ts.Href + "/" + strconv.FormatInt(x, 10) + "/" + strconv.FormatInt(y, 10) + "." + tm.TileFormat.Extension
				if got := absKey(href); got != want {
					t.Errorf("TMS TileSet href %s: got key %s, want %s", href, got, want)
				}
				// Tile extent as a TMS reader computes it.
				w := float64(tm.TileFormat.Width) * ts.UnitsPerPixel
				h := float64(tm.TileFormat.Height) * ts.UnitsPerPixel
				fromTMS := grid.Extent{MinX: tm.Origin.X + float64(x)*w, MinY: tm.Origin.Y + float64(y)*h,
					MaxX: tm.Origin.X + float64(x+1)*w, MaxY: tm.Origin.Y + float64(y+1)*h}
				fromIndex := grid.Extent{MinX: e.Origin[0] + float64(x)*w, MinY: e.Origin[1] + float64(y)*h,
					MaxX: e.Origin[0] + float64(x+1)*w, MaxY: e.Origin[1] + float64(y+1)*h}
				if e.Resolutions[z] != ts.UnitsPerPixel {
					t.Errorf("level %d: index resolution %v, TMS units-per-pixel %v", z, e.Resolutions[z], ts.UnitsPerPixel)
				}
				wantExt := g.TileExtent(z, x, y)
				for name, got := range map[string]grid.Extent{"TMS": fromTMS, "index": fromIndex} {
					if !sameExtent(got, wantExt, 1e-9*w) {
						t.Errorf("%s: tile %d/%d/%d from the %s document covers %v, want %v", set.Dir(), z, x, y, name, got, wantExt)
					}
				}
			}
		}
	})
}

func tileSetOf(t testing.TB, prefix, layerID, gridSetID, format string, params map[string]string) tilestore.TileSet {
	t.Helper()
	id, ext, ok := tilestore.Format(format)
	if !ok {
		t.Fatalf("unknown format %s", format)
	}
	return tilestore.TileSet{SetName: tilestore.SetName{GridSetID: gridSetID, FormatID: id, ParametersID: tilestore.ParametersID(params)},
		Prefix: prefix, LayerID: layerID, Ext: ext}
}

func mustSubset(t testing.TB, subset func(string) (*grid.Subset, bool), id string) *grid.Subset {
	t.Helper()
	s, ok := subset(id)
	if !ok {
		t.Fatalf("no subset %s", id)
	}
	return s
}

func findEntry(t testing.TB, entries []indexEntry, set tilestore.TileSet) indexEntry {
	t.Helper()
	for _, e := range entries {
		if e.LayerID == set.LayerID && e.GridSet == set.GridSetID && e.FormatID == set.FormatID && e.ParametersID == set.ParametersID {
			return e
		}
	}
	t.Fatalf("index has no entry for %s", set.Dir())
	return indexEntry{}
}

type parsedTileSet = struct {
	Href          string  `xml:"href,attr"`
	UnitsPerPixel float64 `xml:"units-per-pixel,attr"`
	Order         int     `xml:"order,attr"`
}

func tmsLevel(t testing.TB, tm parsedTileMap, z int) parsedTileSet {
	t.Helper()
	for _, s := range tm.TileSets.TileSets {
		if s.Order == z {
			return s
		}
	}
	t.Fatalf("TileMap %s has no TileSet of order %d", tm.Title, z)
	return parsedTileSet{}
}

func expand(template string, z int, x, y int64) string {
	return strings.NewReplacer("{z}", strconv.Itoa(z), "{x}", strconv.FormatInt(x, 10), "{y}", strconv.FormatInt(y, 10)).Replace(template)
}

func unescape(t testing.TB, p string) string {
	t.Helper()
	u, err := url.PathUnescape(p)
	if err != nil {
		t.Fatalf("unescape %s: %v", p, err)
	}
	return u
}

func sameExtent(a, b grid.Extent, tol float64) bool {
	return math.Abs(a.MinX-b.MinX) <= tol && math.Abs(a.MinY-b.MinY) <= tol &&
		math.Abs(a.MaxX-b.MaxX) <= tol && math.Abs(a.MaxY-b.MaxY) <= tol
}
