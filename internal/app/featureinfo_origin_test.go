package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"tilecache/internal/app/backends"
	"tilecache/internal/app/backends/embedded"
	"tilecache/internal/app/tileorigin"
	"tilecache/internal/config"
	"tilecache/internal/edgepath"
)

// TestTileOriginAnswersFeatureInfo: the tile function (the CDN's origin)
// answers the path the edge's OGC bindings function gives a WMTS KVP
// GetFeatureInfo (edgepath.OWS, whose key the case table shares with
// ows.js) with the upstream's answer, and still refuses every other path
// under the service's own objects.
func TestTileOriginAnswersFeatureInfo(t *testing.T) {
	t.Parallel()
	var gfi atomic.Int64
	up := featureInfoUpstream(t, &gfi)
	dir := t.TempDir()
	layers := filepath.Join(dir, "layers.yaml")
	if err := os.WriteFile(layers, fmt.Appendf(nil, featureInfoLayers, strings.TrimPrefix(up.URL, "http://"), secretWord), 0o644); err != nil {
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
	query := "SERVICE=WMTS&REQUEST=GetFeatureInfo&VERSION=1.0.0&LAYER=info&STYLE=default&FORMAT=image/png" +
		"&TILEMATRIXSET=EPSG:900913&TILEMATRIX=1&TILEROW=1&TILECOL=1&I=200&J=10&INFOFORMAT=text/plain"
	a, _ := edgepath.OWS("/gwc/service/wmts", query, func(string) (string, bool) { return "", false })
	if !strings.HasPrefix(a.Key, edgepath.FeatureInfoPrefix+"/") {
		t.Fatalf("OWS gives %+v, want a feature info path", a)
	}
	for _, c := range []struct {
		path, want string
		status     int
	}{
		{a.Key, "features of roads at 200,10 in 0,-20037508.34,20037508.34,0 EPSG:900913 (text/plain)\n", 200},
		{"/_tilecache/seed/x", "", 404},
		{edgepath.FeatureInfoPrefix + "/gwc/service/tms/" + url.PathEscape("a=b"), "", 404},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		o.Handler.ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != c.status || (c.want != "" && string(body) != c.want) {
			t.Errorf("%s: %d %q, want %d %q", c.path, rec.Code, body, c.status, c.want)
		}
	}
	if gfi.Load() != 1 {
		t.Errorf("the upstream was asked %d times, want once", gfi.Load())
	}
}
