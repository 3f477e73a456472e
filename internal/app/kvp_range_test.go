package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/app/backends"
	"tilecache/internal/app/backends/embedded"
	"tilecache/internal/app/tileorigin"
	"tilecache/internal/config"
	"tilecache/internal/edgepath"
	"tilecache/internal/layer"
)

// KVP GetTiles of topp:states, whose EPSG:4326 subset is the box
// -124,22,-66,50 up to level 12: at level 3 it covers columns 2 to 5 and
// rows 1 to 3 from the top.
const statesKVP = "/gwc/service/wmts?SERVICE=WMTS&REQUEST=GetTile&VERSION=1.0.0&LAYER=topp:states&STYLE=&FORMAT=image/png&TILEMATRIXSET=EPSG:4326"

var kvpRangeCases = []struct {
	name, query string
	status      int
	locator     string // of the TileOutOfRange exception; "" for none
	restful     string // the RESTful path of the same tile
}{
	// Not stored (nothing is seeded): a miss as any other.
	{"inside", "&TILEMATRIX=3&TILEROW=2&TILECOL=3", 404, "", "/wmts/topp:states/EPSG:4326/png/default/3/3/2.png"},
	{"left of the bounds", "&TILEMATRIX=3&TILEROW=2&TILECOL=0", 400, "TileCol", "/wmts/topp:states/EPSG:4326/png/default/3/0/2.png"},
	{"below the bounds", "&TILEMATRIX=3&TILEROW=7&TILECOL=3", 400, "TileRow", "/wmts/topp:states/EPSG:4326/png/default/3/3/7.png"},
	{"past the last level", "&TILEMATRIX=13&TILEROW=1000&TILECOL=2000", 400, "TileMatrix", "/wmts/topp:states/EPSG:4326/png/default/13/2000/1000.png"},
}

var tileOutOfRange = regexp.MustCompile(`exceptionCode="TileOutOfRange" locator="([^"]*)"`)

// TestKVPTileOutsideSubset: on serve, a WMTS KVP GetTile inside the grid
// set but outside the layer's subset (its bounds, its levels) is the
// binding's OWS TileOutOfRange (400) naming the parameter, not a 404;
// the RESTful path of the same tile keeps its 404, and a tile inside that
// is not stored is the miss it was.
func TestKVPTileOutsideSubset(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	for _, c := range kvpRangeCases {
		res := a.Do(t, http.MethodGet, statesKVP+c.query, "")
		m := tileOutOfRange.FindStringSubmatch(res.Body)
		if res.Status != c.status || (c.locator != "" && (m == nil || m[1] != c.locator)) || (c.locator == "" && m != nil) {
			t.Errorf("%s: KVP %d %.300s, want %d locator %q", c.name, res.Status, res.Body, c.status, c.locator)
		}
		if res := a.Do(t, http.MethodGet, c.restful, ""); res.Status != 404 || strings.Contains(res.Body, "TileOutOfRange") {
			t.Errorf("%s: RESTful %s %d %.200s, want its 404", c.name, c.restful, res.Status, res.Body)
		}
	}
}

// TestTileOriginKVPTileOutsideSubset: the tile origin, which a KVP GetTile
// the bucket lacks fails over to with the path the edge mapped it to
// (edgepath.OWS, as ows.js maps it: the case table), answers a tile
// outside the layer's subset with TileOutOfRange, and the RESTful key path
// of the same tile with its 404.
func TestTileOriginKVPTileOutsideSubset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	layers := filepath.Join(dir, "layers.yaml")
	if err := os.WriteFile(layers, []byte(apptest.Layers), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TILECACHE_DATA": dir, "TILECACHE_LAYERS": layers}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	o, err := tileorigin.NewWith(t.Context(), tileorigin.Of(cfg), func(context.Context) (backends.Backends, error) { return embedded.Open(cfg.DataDir) },
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	cat, err := layer.Load(layers)
	if err != nil {
		t.Fatal(err)
	}
	values := edgepath.NewLive(cat).Values()
	kv := func(k string) (string, bool) { v, ok := values[k]; return v, ok }
	for _, c := range kvpRangeCases {
		path, query, _ := strings.Cut(statesKVP+c.query, "?")
		ans, _ := edgepath.OWS(path, query, kv)
		if ans.Status != 0 {
			t.Fatalf("%s: the edge answers %d %s", c.name, ans.Status, ans.Body)
		}
		rec := httptest.NewRecorder()
		o.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ans.Key, nil))
		body, _ := io.ReadAll(rec.Body)
		m := tileOutOfRange.FindSubmatch(body)
		if rec.Code != c.status || (c.locator != "" && (m == nil || string(m[1]) != c.locator)) || (c.locator == "" && m != nil) {
			t.Errorf("%s: %s: %d %.300s, want %d locator %q", c.name, ans.Key, rec.Code, body, c.status, c.locator)
		}
		key := strings.Replace(ans.Key, edgepath.KVPDot, ".", 1)
		rec = httptest.NewRecorder()
		o.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, key, nil))
		if rec.Code != 404 || strings.Contains(rec.Body.String(), "TileOutOfRange") {
			t.Errorf("%s: RESTful key %s: %d %s, want its 404", c.name, key, rec.Code, rec.Body)
		}
	}
}
