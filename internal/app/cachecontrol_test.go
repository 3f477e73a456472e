package app_test

import (
	"fmt"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
)

// expiringLayers: a layer whose tiles' Cache-Control depends on the level
// (GeoWebCache's expireClientsList), the last rule disabling the header,
// and one rendered on miss with a single expireClients.
const expiringLayers = apptest.Layers + `  - name: expiring
    gridSubsets: [{gridSet: EPSG:900913, zoomStop: 4}]
    formats: [image/png]
    metatiling: [2, 2]
    expireClientsList:
      - {minZoom: 0, expiration: 86400}
      - {minZoom: 2, expiration: 600}
      - {minZoom: 4, expiration: 0}
    source: {type: testpattern}
  - name: expiring on miss
    gridSubsets: [{gridSet: EPSG:900913, zoomStop: 3}]
    formats: [image/png]
    metatiling: [1, 1]
    expireClients: 120
    renderOnMiss: {enabled: true}
    source: {type: testpattern}
`

// TestTilesCacheControlPerLevel: a seed stores each tile with the
// Cache-Control of its level's expireClients rule, which the program then
// serves (as a CDN serving the bucket would); a tile rendered on miss
// gets its level's too.
func TestTilesCacheControlPerLevel(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{Layers: expiringLayers})
	wantDone(t, seedAndWait(t, a, "expiring", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":4,"format":"image/png"}}`))
	for _, tt := range []struct {
		z    int
		want string
	}{{0, "public, max-age=86400"}, {1, "public, max-age=86400"}, {2, "public, max-age=600"}, {3, "public, max-age=600"}, {4, ""}} {
		key := fmt.Sprintf("expiring/EPSG:900913/png/default/%d/0/0.png", tt.z)
		_, meta, ok := a.Get(t, key)
		if !ok || meta.CacheControl != tt.want {
			t.Errorf("%s: stored %v with Cache-Control %q, want %q", key, ok, meta.CacheControl, tt.want)
		}
		status, h, _ := getTile(t, a.URL, "/"+key)
		if status != 200 || h.Get("Cache-Control") != tt.want {
			t.Errorf("GET /%s: %d, Cache-Control %q, want 200, %q", key, status, h.Get("Cache-Control"), tt.want)
		}
	}
	status, h, _ := getTile(t, a.URL, "/expiring on miss/EPSG:900913/png/default/3/2/5.png")
	if status != 200 || h.Get("Cache-Control") != "public, max-age=120" {
		t.Errorf("a tile rendered on miss: %d, Cache-Control %q, want 200, public, max-age=120", status, h.Get("Cache-Control"))
	}
	_, meta, ok := a.Get(t, "expiring on miss/EPSG:900913/png/default/3/2/5.png")
	if !ok || meta.CacheControl != "public, max-age=120" {
		t.Errorf("the tile rendered on miss: stored %v with %q", ok, meta.CacheControl)
	}
}

// TestDisabledLayer: a layer with enabled: false (GeoWebCache's switch)
// keeps its definition but is not seeded (a 400 naming the switch) and
// does not render on miss; its tiles can still be truncated.
func TestDisabledLayer(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{Layers: apptest.Layers + `  - name: resting
    enabled: false
    gridSubsets: [{gridSet: EPSG:900913, zoomStop: 3}]
    formats: [image/png]
    renderOnMiss: {enabled: true}
    source: {type: testpattern}
`})
	res := a.Do(t, "POST", "/rest/seed/resting.json", `{"seedRequest":{"zoomStart":0,"zoomStop":1,"type":"seed"}}`)
	if res.Status != 400 || !strings.Contains(res.Body, "Layer resting is disabled (enabled: false in the layer file)") {
		t.Errorf("seed of a disabled layer: %d %q, want 400 naming the switch", res.Status, res.Body)
	}
	if status, _, _ := getTile(t, a.URL, "/resting/EPSG:900913/png/default/1/0/0.png"); status != 404 {
		t.Errorf("a miss of a disabled layer: %d, want 404", status)
	}
	wantDone(t, seedAndWait(t, a, "resting", `{"seedRequest":{"zoomStart":0,"zoomStop":1,"type":"truncate"}}`))
}
