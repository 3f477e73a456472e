package discovery

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/tilestore"
)

const prefix = "pre"

// docKeys returns the document keys of a tile set of the test prefix.
func docKeys(layerID, gridSetID, formatID string, names ...string) []string {
	var keys []string
	for _, n := range names {
		keys = append(keys, prefix+"/"+layerID+"/"+gridSetID+"/"+formatID+"/default/"+n)
	}
	return keys
}

func sorted(keys []string) []string { return slices.Sorted(slices.Values(keys)) }

// ogcKeys returns the keys of OGC API documents: "" is the landing page,
// any other name a document under ogcapi/ (".json" added).
func ogcKeys(names ...string) []string {
	var out []string
	for _, n := range names {
		if n == "" {
			out = append(out, prefix+"/"+ogcLandingName)
		} else {
			out = append(out, prefix+"/"+ogcDir+n+".json")
		}
	}
	return out
}

// storedOGC lists the stored OGC API documents (under ogcapi/).
func storedOGC(t testing.TB, s tilestore.Store) []string {
	t.Helper()
	var out []string
	if err := s.List(t.Context(), prefix+"/"+ogcDir, func(o tilestore.Object) error {
		out = append(out, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return sorted(out)
}

// wantOGC returns the OGC API documents of the default-parameter tile sets
// "layerID/gridSet/format/parametersId" of an index: the root's four, a
// collection, its list and a tile set per grid set for each layer, and a
// tile matrix set per grid set (the built-in ones under their registered
// ids).
func wantOGC(index []string) []string {
	tms := map[string]string{"EPSG:900913": "WebMercatorQuad", "EPSG:4326": "WorldCRS84Quad"}
	seen := map[string]bool{}
	out := ogcKeys("collections", "conformance", "tileMatrixSets")
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, ogcKeys(k)...)
		}
	}
	for _, e := range index {
		seg := strings.Split(e, "/")
		if seg[3] != "default" {
			continue
		}
		id := tms[seg[1]]
		if id == "" {
			id = seg[1]
		}
		add("collections/" + seg[0])
		add("collections/" + seg[0] + "/map/tiles")
		add("collections/" + seg[0] + "/map/tiles/" + id)
		add("tileMatrixSets/" + id)
	}
	return sorted(out)
}

func checkKeys(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("%s: got changed keys\n  %q\nwant\n  %q", what, sorted(got), sorted(want))
	}
}

// storedIndex returns the tile sets listed by the stored index.json as
// "layerId/gridSet/formatId/parametersId".
func storedIndex(t testing.TB, s tilestore.Store) []string {
	t.Helper()
	data, _ := mustGet(t, s, prefix+"/"+indexName)
	entries, err := parseIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.LayerID+"/"+e.GridSet+"/"+e.FormatID+"/"+e.ParametersID)
	}
	return out
}

func TestEnsureIsIdempotent(t *testing.T) {
	forEachStore(t, func(t *testing.T, s tilestore.Store) {
		c := testCatalogue(t, testLayers)
		p, _ := newTestPublisher(s, c, prefix, "")
		got, err := p.Ensure(t.Context(), "demo:world", "EPSG:900913", "image/png", nil)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Concat(docKeys("demo:world", "EPSG:900913", "png", tileMapName, tileJSONName, tileJSONXYZName),
			[]string{prefix + "/" + indexName, prefix + "/" + tmsName, prefix + "/" + wmtsName, prefix + "/" + wmscName, prefix + "/demo:world/" + wmtsName},
			ogcKeys("", "collections", "collections/demo:world", "collections/demo:world/map/tiles",
				"collections/demo:world/map/tiles/WebMercatorQuad", "conformance", "tileMatrixSets", "tileMatrixSets/WebMercatorQuad"))
		checkKeys(t, "first Ensure", got, want)
		for _, k := range want {
			_, meta := mustGet(t, s, k)
			wantType := "application/json"
			if strings.HasSuffix(k, ".xml") {
				wantType = "text/xml; charset=utf-8"
			}
			if meta.ContentType != wantType || meta.CacheControl != "public, max-age=300" {
				t.Errorf("%s: got meta %+v, want %s, public, max-age=300", k, meta, wantType)
			}
		}

		got, err = p.Ensure(t.Context(), "demo:world", "EPSG:900913", "image/png", nil)
		if err != nil || len(got) != 0 {
			t.Errorf("second Ensure: got %q, %v; want no change", got, err)
		}
		// Another process, later: the index's time alone is no change.
		later, _ := newTestPublisher(s, c, prefix, "")
		later.now = func() time.Time { return time.Now().Add(time.Hour) }
		if got, err := later.Ensure(t.Context(), "demo:world", "EPSG:900913", "image/png", nil); err != nil || len(got) != 0 {
			t.Errorf("Ensure by another publisher: got %q, %v; want no change", got, err)
		}
		if got, err := later.RebuildIndex(t.Context()); err != nil || len(got) != 0 {
			t.Errorf("RebuildIndex: got %q, %v; want no change", got, err)
		}
	})
}

func TestEnsureRewritesWhenTheLayerChanges(t *testing.T) {
	forEachStore(t, func(t *testing.T, s tilestore.Store) {
		p, _ := newTestPublisher(s, testCatalogue(t, testLayers), prefix, "")
		if _, err := p.Ensure(t.Context(), "demo:world", "EPSG:900913", "image/png", nil); err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(testLayers, "attribution: tilecache test pattern", "attribution: \"&copy; tilecache\"", 1)
		p2, _ := newTestPublisher(s, testCatalogue(t, changed), prefix, "")
		got, err := p2.Ensure(t.Context(), "demo:world", "EPSG:900913", "image/png", nil)
		if err != nil {
			t.Fatal(err)
		}
		// tms.xml has no attribution: unchanged; the WMTS capabilities
		// give it as the layer's abstract, OGC API as the collection's
		// description.
		checkKeys(t, "Ensure after the attribution changed", got,
			slices.Concat(docKeys("demo:world", "EPSG:900913", "png", tileMapName, tileJSONName, tileJSONXYZName),
				[]string{prefix + "/" + indexName, prefix + "/" + wmtsName, prefix + "/" + wmscName, prefix + "/demo:world/" + wmtsName},
				ogcKeys("collections", "collections/demo:world")))
		data, _ := mustGet(t, s, prefix+"/demo:world/EPSG:900913/png/default/"+tileJSONName)
		var tj struct{ Attribution string }
		if err := json.Unmarshal(data, &tj); err != nil || tj.Attribution != "&copy; tilecache" {
			t.Errorf("TileJSON attribution: got %q, %v; want &copy; tilecache", tj.Attribution, err)
		}
	})
}

func TestEnsureSkipsAGridItCannotDescribe(t *testing.T) {
	forEachStore(t, func(t *testing.T, s tilestore.Store) {
		p, log := newTestPublisher(s, testCatalogue(t, testLayers), prefix, "")
		got, err := p.Ensure(t.Context(), "topo", "TopLeftPartial", "image/png8", nil)
		if err != nil || len(got) != 0 {
			t.Fatalf("got %q, %v; want nothing written and no error", got, err)
		}
		var keys []string
		if err := s.List(t.Context(), "", func(o tilestore.Object) error { keys = append(keys, o.Key); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(keys) != 0 {
			t.Errorf("got objects %q, want none", keys)
		}
		if !strings.Contains(log.String(), "no discovery documents for tile set") || !strings.Contains(log.String(), "bottom-left origin") {
			t.Errorf("log does not say why:\n%s", log)
		}
	})
}

func TestEnsureRejectsWhatIsNotConfigured(t *testing.T) {
	s := newFileStore(t)
	p, _ := newTestPublisher(s, testCatalogue(t, testLayers), prefix, "")
	tests := []struct{ name, layer, gridSet, format string }{
		{"layer", "nope", "EPSG:4326", "image/png"},
		{"grid set", "demo:world", "LAEA", "image/png"},
		{"format", "demo:world", "EPSG:4326", "image/gif"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Ensure(t.Context(), tt.layer, tt.gridSet, tt.format, nil)
			if !apperr.Is(err, apperr.NotFound) {
				t.Errorf("got %v, want a NotFound error", err)
			}
		})
	}
}

func TestRefresh(t *testing.T) {
	withoutJPEG := strings.Replace(testLayers, "formats: [image/png, image/jpeg]", "formats: [image/png]", 1)
	withoutTopo := testLayers[:strings.Index(testLayers, "  - name: topo")]
	// TopLeftWhole's extent made 1100 high: no longer describable.
	partial := strings.Replace(testLayers, "extent: [0, 0, 1024, 512]", "extent: [0, 0, 1024, 1100]", 1)
	tests := []struct {
		name        string
		before      [][3]string // layer, grid set, format given to Ensure
		tiles       []string    // keys of tiles stored without documents
		layers      string      // the layer file at Refresh
		wantChanged []string
		wantIndex   []string
	}{
		{
			name:   "removes the documents of a format no longer configured",
			before: [][3]string{{"demo:world", "EPSG:900913", "image/png"}, {"demo:world", "EPSG:900913", "image/jpeg"}},
			layers: withoutJPEG,
			wantChanged: slices.Concat(docKeys("demo:world", "EPSG:900913", "jpeg", tileMapName, tileJSONName, tileJSONXYZName),
				[]string{prefix + "/" + indexName, prefix + "/" + tmsName, prefix + "/" + wmtsName, prefix + "/" + wmscName, prefix + "/demo:world/" + wmtsName},
				// The tile set no longer links JPEG tiles, nor the API claims them.
				ogcKeys("collections/demo:world/map/tiles/WebMercatorQuad", "conformance")),
			wantIndex: []string{"demo:world/EPSG:900913/png/default"},
		},
		{
			name:   "removes the documents of a layer no longer configured",
			before: [][3]string{{"demo:world", "EPSG:4326", "image/png"}, {"topo", "LAEA", "image/png8"}},
			layers: withoutTopo,
			wantChanged: slices.Concat(docKeys("topo 50", "LAEA", "png8", tileMapName),
				[]string{prefix + "/" + indexName, prefix + "/" + tmsName, prefix + "/" + wmtsName, prefix + "/" + wmscName, prefix + "/topo 50/" + wmtsName},
				ogcKeys("collections", "collections/topo 50", "collections/topo 50/map/tiles",
					"collections/topo 50/map/tiles/LAEA", "tileMatrixSets", "tileMatrixSets/LAEA")),
			wantIndex: []string{"demo:world/EPSG:4326/png/default"},
		},
		{
			name:   "removes the documents of a grid set it can no longer describe",
			before: [][3]string{{"topo", "TopLeftWhole", "image/png8"}, {"topo", "LAEA", "image/png8"}},
			// The tiles keep the tile set found even without documents.
			tiles:  []string{prefix + "/topo 50/TopLeftWhole/png8/default/0/0/0.png"},
			layers: partial,
			wantChanged: slices.Concat(docKeys("topo 50", "TopLeftWhole", "png8", tileMapName),
				[]string{prefix + "/" + indexName, prefix + "/" + tmsName, prefix + "/" + wmtsName, prefix + "/" + wmscName, prefix + "/topo 50/" + wmtsName},
				ogcKeys("collections/topo 50/map/tiles", "collections/topo 50/map/tiles/TopLeftWhole",
					"tileMatrixSets", "tileMatrixSets/TopLeftWhole")),
			wantIndex: []string{"topo 50/LAEA/png8/default"},
		},
		{
			name:   "rewrites documents whose layer changed",
			before: [][3]string{{"demo:world", "EPSG:900913", "image/png"}, {"demo:world", "EPSG:4326", "image/png"}},
			layers: strings.Replace(testLayers, "title: Demo world", "title: The demo world", 1),
			wantChanged: slices.Concat(
				docKeys("demo:world", "EPSG:900913", "png", tileMapName, tileJSONName, tileJSONXYZName),
				docKeys("demo:world", "EPSG:4326", "png", tileMapName),
				[]string{prefix + "/" + indexName, prefix + "/" + tmsName, prefix + "/" + wmtsName, prefix + "/" + wmscName, prefix + "/demo:world/" + wmtsName},
				ogcKeys("collections", "collections/demo:world", "collections/demo:world/map/tiles",
					"collections/demo:world/map/tiles/WebMercatorQuad", "collections/demo:world/map/tiles/WorldCRS84Quad")),
			wantIndex: []string{"demo:world/EPSG:4326/png/default", "demo:world/EPSG:900913/png/default"},
		},
		{
			name:   "writes the documents of stored tiles that have none",
			before: [][3]string{{"demo:world", "EPSG:4326", "image/png"}},
			tiles:  []string{prefix + "/demo:world/EPSG:900913/jpeg/default/3/1/2.jpeg"},
			layers: testLayers,
			wantChanged: slices.Concat(docKeys("demo:world", "EPSG:900913", "jpeg", tileMapName, tileJSONName, tileJSONXYZName),
				[]string{prefix + "/" + indexName, prefix + "/" + tmsName, prefix + "/" + wmtsName, prefix + "/" + wmscName, prefix + "/demo:world/" + wmtsName},
				ogcKeys("collections/demo:world/map/tiles",
					"collections/demo:world/map/tiles/WebMercatorQuad", "conformance", "tileMatrixSets",
					"tileMatrixSets/WebMercatorQuad")),
			wantIndex: []string{"demo:world/EPSG:4326/png/default", "demo:world/EPSG:900913/jpeg/default"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, s tilestore.Store) {
				p, _ := newTestPublisher(s, testCatalogue(t, testLayers), prefix, "")
				for _, b := range tt.before {
					if _, err := p.Ensure(t.Context(), b[0], b[1], b[2], nil); err != nil {
						t.Fatal(err)
					}
				}
				for _, k := range tt.tiles {
					mustPut(t, s, k, []byte("tile"), pngMeta)
				}
				p2, _ := newTestPublisher(s, testCatalogue(t, tt.layers), prefix, "")
				got, err := p2.Refresh(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				checkKeys(t, "Refresh", got, tt.wantChanged)
				for _, k := range got {
					if strings.HasSuffix(k, tmsName) || strings.HasSuffix(k, indexName) || strings.HasSuffix(k, wmtsName) || strings.HasSuffix(k, wmscName) ||
						strings.HasPrefix(k, prefix+"/"+ogcDir) {
						continue
					}
					// A removed document is gone, a rewritten one is there.
					dir := strings.TrimPrefix(k[:strings.LastIndex(k, "/")], prefix+"/")
					if want := slices.Contains(tt.wantIndex, dir); exists(t, s, k) != want {
						t.Errorf("%s: got exists=%v, want %v", k, !want, want)
					}
				}
				if got := storedIndex(t, s); !slices.Equal(sorted(got), tt.wantIndex) {
					t.Errorf("index: got %q, want %q", got, tt.wantIndex)
				}
				if got, want := storedOGC(t, s), wantOGC(tt.wantIndex); !slices.Equal(got, want) {
					t.Errorf("OGC API documents: got %q, want %q", got, want)
				}
				if again, err := p2.Refresh(t.Context()); err != nil || len(again) != 0 {
					t.Errorf("second Refresh: got %q, %v; want no change", again, err)
				}
			})
		})
	}
}

func TestRebuildIndexAfterMassTruncate(t *testing.T) {
	forEachStore(t, func(t *testing.T, s tilestore.Store) {
		p, _ := newTestPublisher(s, testCatalogue(t, testLayers), prefix, "")
		for _, b := range [][3]string{{"demo:world", "EPSG:900913", "image/png"}, {"topo", "LAEA", "image/png8"}} {
			mustPut(t, s, tileSetOf(t, prefix, b[0], b[1], b[2], nil).Key(0, 0, 0), []byte("tile"), pngMeta)
			if _, err := p.Ensure(t.Context(), b[0], b[1], b[2], nil); err != nil {
				t.Fatal(err)
			}
		}
		// A mass truncation deletes every object of the layer.
		var keys []string
		if err := s.List(t.Context(), tilestore.LayerPrefix(prefix, "demo:world"), func(o tilestore.Object) error {
			keys = append(keys, o.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(t.Context(), keys); err != nil {
			t.Fatal(err)
		}
		got, err := p.RebuildIndex(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		checkKeys(t, "RebuildIndex", got, append([]string{prefix + "/" + indexName, prefix + "/" + tmsName, prefix + "/" + wmtsName, prefix + "/" + wmscName},
			ogcKeys("collections", "collections/demo:world", "collections/demo:world/map/tiles",
				"collections/demo:world/map/tiles/WebMercatorQuad", "tileMatrixSets", "tileMatrixSets/WebMercatorQuad")...))
		if got, want := storedOGC(t, s), wantOGC([]string{"topo 50/LAEA/png8/default"}); !slices.Equal(got, want) {
			t.Errorf("OGC API documents: got %q, want %q", got, want)
		}
		if got, want := storedIndex(t, s), []string{"topo 50/LAEA/png8/default"}; !slices.Equal(got, want) {
			t.Errorf("index: got %q, want %q", got, want)
		}
		tms, _ := mustGet(t, s, prefix+"/"+tmsName)
		if strings.Contains(string(tms), "demo:world") {
			t.Errorf("tms.xml still lists demo:world:\n%s", tms)
		}
	})
}

func TestIndexListsParametersFromTheSideObject(t *testing.T) {
	forEachStore(t, func(t *testing.T, s tilestore.Store) {
		c := testCatalogue(t, testLayers)
		p, _ := newTestPublisher(s, c, prefix, "")
		params := map[string]string{"STYLES": "grid"}
		id := tilestore.ParametersID(params)
		mustPut(t, s, tilestore.ParametersKey(prefix, "demo:world", id), []byte("#Written by tilecache\nSTYLES=grid\n"),
			tilestore.Meta{ContentType: "text/plain; charset=utf-8"})
		for _, ps := range []map[string]string{nil, params} {
			if _, err := p.Ensure(t.Context(), "demo:world", "EPSG:4326", "image/png", ps); err != nil {
				t.Fatal(err)
			}
		}
		data, _ := mustGet(t, s, prefix+"/"+indexName)
		entries, err := parseIndex(data)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, fmt.Sprintf("%s %v", e.ParametersID, e.Parameters))
		}
		if want := []string{"default map[]", id + " map[STYLES:grid]"}; !slices.Equal(got, want) {
			t.Errorf("index: got %q, want %q", got, want)
		}
	})
}

func TestConcurrentEnsuresAllReachTheIndex(t *testing.T) {
	s := newFileStore(t)
	c := testCatalogue(t, testLayers)
	p, _ := newTestPublisher(s, c, prefix, "")
	sets := [][3]string{
		{"demo:world", "EPSG:4326", "image/png"}, {"demo:world", "EPSG:4326", "image/jpeg"},
		{"demo:world", "EPSG:900913", "image/png"}, {"demo:world", "EPSG:900913", "image/jpeg"},
		{"topo", "LAEA", "image/png8"}, {"topo", "TopLeftWhole", "image/png8"}, {"topo", "EPSG:900913", "image/png8"},
	}
	var wg sync.WaitGroup
	for _, b := range sets {
		wg.Go(func() {
			if _, err := p.Ensure(t.Context(), b[0], b[1], b[2], nil); err != nil {
				t.Errorf("Ensure(%v) error: %v", b, err)
			}
		})
	}
	wg.Wait()
	if got := storedIndex(t, s); len(got) != len(sets) {
		t.Errorf("index lists %d tile sets, want %d: %q", len(got), len(sets), got)
	}
}
