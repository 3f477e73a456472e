package discovery

import (
	"encoding/json"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"tilecache/internal/edgepath"
	"tilecache/internal/grid"
	"tilecache/internal/tilestore"
)

// ogcWalker follows an OGC API – Tiles document tree as a client does,
// from the landing page by links, each URL mapped to its stored key by
// the edge's mapping.
type ogcWalker struct {
	t       testing.TB
	s       tilestore.Store
	table   edgepath.Table
	prefix  string
	baseURL string
}

// key maps a URL below baseURL to its stored key through the edge.
func (w ogcWalker) key(href string) string {
	w.t.Helper()
	rest, ok := strings.CutPrefix(href, w.baseURL)
	if !ok {
		w.t.Fatalf("%s: want a URL below %s", href, w.baseURL)
	}
	k, ok := edgepath.Map(rest, w.table)
	if !ok {
		w.t.Fatalf("%s: the edge refuses it", href)
	}
	plain, err := url.PathUnescape(k)
	if err != nil {
		w.t.Fatal(err)
	}
	return w.prefix + plain
}

// get reads the JSON document at href into v, after checking its type.
func (w ogcWalker) get(href string, v any) {
	w.t.Helper()
	data, meta := mustGet(w.t, w.s, w.key(href))
	if meta.ContentType != "application/json" {
		w.t.Errorf("%s: content type %q, want application/json", href, meta.ContentType)
	}
	if err := json.Unmarshal(data, v); err != nil {
		w.t.Fatalf("%s: %v", href, err)
	}
}

type parsedLinks struct {
	Links []ogcLink `json:"links"`
}

func (l parsedLinks) href(t testing.TB, rel, typ string) string {
	t.Helper()
	for _, k := range l.Links {
		if k.Rel == rel && k.Type == typ {
			return k.Href
		}
	}
	t.Fatalf("no %s link of type %s in %+v", rel, typ, l.Links)
	return ""
}

// tileset walks from the landing page to the map tile set of layerID in
// the grid set published as tms, and returns it with its tile matrix set.
func (w ogcWalker) tileset(layerID, tms string) (ogcTileset, ogcMatrixSet) {
	w.t.Helper()
	var landing parsedLinks
	w.get(w.baseURL+"/ogcapi", &landing)
	var colls struct {
		Collections []struct {
			ID string `json:"id"`
			parsedLinks
		} `json:"collections"`
	}
	w.get(landing.href(w.t, "data", "application/json"), &colls)
	i := slices.IndexFunc(colls.Collections, func(c struct {
		ID string `json:"id"`
		parsedLinks
	}) bool {
		return c.ID == layerID
	})
	if i < 0 {
		w.t.Fatalf("no collection %s in %+v", layerID, colls)
	}
	var coll parsedLinks
	w.get(colls.Collections[i].href(w.t, "self", "application/json"), &coll)
	var list struct {
		Tilesets []struct {
			ogcTileset
		} `json:"tilesets"`
	}
	w.get(coll.href(w.t, relTilesetsMap, "application/json"), &list)
	for _, entry := range list.Tilesets {
		set := parsedLinks{Links: entry.Links}
		if !strings.HasSuffix(set.href(w.t, "self", "application/json"), "/"+escapeSegment(tms)) {
			continue
		}
		var ts ogcTileset
		w.get(set.href(w.t, "self", "application/json"), &ts)
		var ms ogcMatrixSet
		w.get(parsedLinks{Links: ts.Links}.href(w.t, relTilingScheme, "application/json"), &ms)
		return ts, ms
	}
	w.t.Fatalf("collection %s has no tile set %s: %+v", layerID, tms, list)
	return ogcTileset{}, ogcMatrixSet{}
}

// TestOGCAPIAddressesStoredTiles publishes tile sets and follows the OGC
// API documents from the landing page as a client does: each tile's
// templated URL, through the edge's mapping, names exactly the stored key,
// and the tile matrix set places the tile where the grid set does.
func TestOGCAPIAddressesStoredTiles(t *testing.T) {
	forEachStore(t, func(t *testing.T, s tilestore.Store) {
		c := testCatalogue(t, testLayers)
		const baseURL = "https://cdn.example/base"
		p, _ := newTestPublisher(s, c, prefix, baseURL)
		w := ogcWalker{t: t, s: s, table: edgepath.TableOf(c), prefix: prefix, baseURL: baseURL}
		cases := []struct {
			layer, gridSet, tms, format string
			tiles                       [][3]int64 // z, x, y (rows from the bottom)
		}{
			{"demo:world", "EPSG:900913", grid.WebMercatorQuad, "image/png", [][3]int64{{0, 0, 0}, {3, 5, 2}, {9, 300, 400}}},
			{"demo:world", "EPSG:4326", grid.WorldCRS84Quad, "image/jpeg", [][3]int64{{0, 1, 0}, {4, 20, 9}}},
			{"topo", "LAEA", "LAEA", "image/png8", [][3]int64{{0, 4, 4}, {3, 38, 0}}},
			{"topo", "TopLeftWhole", "TopLeftWhole", "image/png8", [][3]int64{{0, 1, 0}, {2, 7, 3}}},
		}
		for _, tc := range cases {
			l := testLayer(t, c, tc.layer)
			set := tileSetOf(t, prefix, l.ID, tc.gridSet, tc.format, nil)
			for _, tile := range tc.tiles {
				mustPut(t, s, set.Key(int(tile[0]), tile[1], tile[2]), []byte("tile"), pngMeta)
			}
			if _, err := p.Ensure(t.Context(), tc.layer, tc.gridSet, tc.format, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range cases {
			l := testLayer(t, c, tc.layer)
			g := mustSubset(t, l.Subset, tc.gridSet).GridSet
			set := tileSetOf(t, prefix, l.ID, tc.gridSet, tc.format, nil)
			ts, ms := w.tileset(l.ID, tc.tms)
			if ts.DataType != "map" || ms.ID != tc.tms || ms.Identifier != tc.tms || len(ms.Matrices) != g.Levels() ||
				len(ms.Matrices10) != g.Levels() {
				t.Errorf("%s: tile set %+v, tile matrix set %s/%s with %d/%d levels; want a map tile set and %s with %d",
					set.Dir(), ts, ms.ID, ms.Identifier, len(ms.Matrices), len(ms.Matrices10), tc.tms, g.Levels())
			}
			var template string
			for _, k := range ts.Links {
				if k.Rel == "item" && k.Templated && k.Title == tc.format+" tiles" {
					template = k.Href
				}
			}
			if template == "" {
				t.Fatalf("%s: no templated item link for %s: %+v", set.Dir(), tc.format, ts.Links)
			}
			for _, tile := range tc.tiles {
				z, x, y := int(tile[0]), tile[1], tile[2]
				_, rows := g.Size(z)
				row := rows - 1 - y
				href := strings.NewReplacer("{tileMatrix}", strconv.Itoa(z), "{tileRow}", strconv.FormatInt(row, 10),
					"{tileCol}", strconv.FormatInt(x, 10)).Replace(template)
				if got, want := w.key(href), set.Key(z, x, y); got != want {
					t.Errorf("%s: tile %d/%d/%d: got key %s, want %s", href, z, x, y, got, want)
				}
				m := ms.Matrices[z]
				lim := ts.Limits[slices.IndexFunc(ts.Limits, func(l ogcLimits) bool { return l.TileMatrix == m.ID })]
				if row < lim.MinRow || row > lim.MaxRow || x < lim.MinCol || x > lim.MaxCol {
					t.Errorf("%s: tile %d/%d/%d (row %d) outside the limits %+v", set.Dir(), z, x, y, row, lim)
				}
				// The tile's box as a client computes it from the TMS 2.0
				// members (longitude first except in EPSG:4326) and from the
				// 1.0 ones.
				left, top := m.Origin[0], m.Origin[1]
				if strings.HasSuffix(ms.CRS, "/EPSG/0/4326") {
					left, top = top, left
				}
				span := m.CellSize * float64(m.TileWidth)
				got := grid.Extent{MinX: left + float64(x)*span, MaxX: left + float64(x+1)*span,
					MinY: top - float64(row+1)*span, MaxY: top - float64(row)*span}
				if want := g.TileExtent(z, x, y); !sameExtent(got, want, 1e-9*span) {
					t.Errorf("%s: tile %d/%d/%d covers %v by the tile matrix set, want %v", set.Dir(), z, x, y, got, want)
				}
				if ms.Matrices10[z].TopLeft != m.Origin || math.Abs(ms.Matrices10[z].Scale-m.Scale) > 0 {
					t.Errorf("%s: level %d: the 1.0 members %+v differ from the 2.0 ones %+v", set.Dir(), z, ms.Matrices10[z], m)
				}
			}
		}
	})
}

// TestOGCAPIRegisteredSets: the built-in grid sets are published as the
// OGC's registered tile matrix sets, with their URIs and the values of
// OGC 17-083r4 Annex D at level 0.
func TestOGCAPIRegisteredSets(t *testing.T) {
	merc, _ := grid.Builtin(grid.EPSG900913)
	geo, _ := grid.Builtin(grid.EPSG4326)
	for _, tc := range []struct {
		g            *grid.GridSet
		id, crs      string
		scale        float64
		origin       [2]float64
		cols, rows   int64
		registeredAs string
	}{
		{merc, grid.WebMercatorQuad, "http://www.opengis.net/def/crs/EPSG/0/3857", 559082264.0287178,
			[2]float64{-20037508.34, 20037508.34}, 1, 1, "http://www.opengis.net/def/tilematrixset/OGC/1.0/WebMercatorQuad"},
		{geo, grid.WorldCRS84Quad, crs84, 279541132.0143589, [2]float64{-180, 90}, 2, 1,
			"http://www.opengis.net/def/tilematrixset/OGC/1.0/WorldCRS84Quad"},
	} {
		ms := ogcMatrixSetOf(tc.id, tc.g)
		m := ms.Matrices[0]
		if ms.CRS != tc.crs || ms.URI != tc.registeredAs || m.Origin != tc.origin || m.Width != tc.cols || m.Height != tc.rows ||
			math.Abs(m.Scale-tc.scale) > 1e-6*tc.scale {
			t.Errorf("%s: got crs %s, uri %s, level 0 %+v; want %s, %s, scale %v, origin %v, %d×%d",
				tc.id, ms.CRS, ms.URI, m, tc.crs, tc.registeredAs, tc.scale, tc.origin, tc.cols, tc.rows)
		}
	}
}
