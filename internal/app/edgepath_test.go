package app_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
)

// TestEdgePaths: tilecache serve answers the WMTS, XYZ and OGC API – Tiles
// paths as the CDN's edge function does: the same bytes as the stored
// key's path, rows counted from the top, for the built-in grid sets (also
// under their registered tile matrix set ids) and a custom one (top-left
// aligned); coordinates outside the grid and numbers not written
// canonically are 404s.
func TestEdgePaths(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	for _, gs := range []string{"EPSG:900913", "EPSG:4326", "TopLeft4326"} {
		waitFinished(t, a, ids(seedReq(t, a, "demo:world", fmt.Sprintf(`{"seedRequest":{"gridSetId":%q,"zoomStart":0,"zoomStop":3}}`, gs))), 60*time.Second)
	}
	for _, tt := range []struct {
		gs, tms    string
		z          int
		x, y, rows int64
	}{
		{"EPSG:900913", "WebMercatorQuad", 3, 5, 1, 8},
		{"EPSG:900913", "WebMercatorQuad", 0, 0, 0, 1},
		{"EPSG:4326", "WorldCRS84Quad", 2, 7, 0, 4},
		{"TopLeft4326", "TopLeft4326", 3, 15, 2, 8},
	} {
		stored := fmt.Sprintf("/demo:world/%s/png/default/%d/%d/%d.png", tt.gs, tt.z, tt.x, tt.rows-1-tt.y)
		status, _, want := getTile(t, a.URL, stored)
		if status != 200 || len(want) == 0 {
			t.Fatalf("%s: %d", stored, status)
		}
		for _, path := range []string{
			fmt.Sprintf("/xyz/demo:world/%s/png/default/%d/%d/%d.png", tt.gs, tt.z, tt.x, tt.y),
			fmt.Sprintf("/wmts/demo:world/%s/png/default/%d/%d/%d.png", tt.gs, tt.z, tt.x, tt.y),
			fmt.Sprintf("/xyz/demo:world/%s/png/default/%d/%d/%d.png", tt.tms, tt.z, tt.x, tt.y),
			fmt.Sprintf("/ogcapi/collections/demo:world/map/tiles/%s/%d/%d/%d.png", tt.tms, tt.z, tt.y, tt.x),
		} {
			status, h, got := getTile(t, a.URL, path)
			if status != 200 || !bytes.Equal(got, want) || h.Get("Content-Type") != "image/png" {
				t.Errorf("%s: %d %q, %d bytes; want the %d bytes of %s", path, status, h.Get("Content-Type"), len(got), len(want), stored)
			}
		}
	}
	for _, path := range []string{
		"/xyz/demo:world/EPSG:900913/png/default/3/8/0.png",                   // column outside
		"/xyz/demo:world/EPSG:900913/png/default/3/0/8.png",                   // row outside
		"/wmts/demo:world/EPSG:4326/png/default/22/0/0.png",                   // level outside
		"/xyz/demo:world/EPSG:900913/png/default/3/05/1.png",                  // not canonical
		"/xyz/demo:world/EPSG:3857/png/default/0/0/0.png",                     // no such grid set
		"/xyz/demo:world/EPSG:900913/png/default/0/0.png",                     // too short
		"/ogcapi/collections/demo:world/map/tiles/WebMercatorQuad/3/8/0.png",  // row outside
		"/ogcapi/collections/demo:world/map/tiles/WebMercatorQuad/3/0/0.webp", // no such format
	} {
		if status, _, body := getTile(t, a.URL, path); status != 404 {
			t.Errorf("%s: %d %.100q, want 404", path, status, body)
		}
	}
}

// TestServeRefusesServiceObjects: the prepared area a seed by geometry
// stores under _tilecache/areas/ is not served, however its path is
// written, as at the CDN's edge.
func TestServeRefusesServiceObjects(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	rows := seedReq(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":1,"format":"image/png",
		"geometry":`+triangleGeoJSON()+`}}`)
	waitFinished(t, a, ids(rows), 60*time.Second)
	areas := a.Keys(t, "_tilecache/areas/")
	if len(areas) != 1 {
		t.Fatalf("stored areas %v, want one", areas)
	}
	if _, _, found := a.Get(t, areas[0]); !found {
		t.Fatalf("the area %s is not stored", areas[0])
	}
	name := strings.TrimPrefix(areas[0], "_tilecache/areas/")
	for _, path := range []string{"/_tilecache/areas/" + name, "/%5Ftilecache/areas/" + name, "/_tilecache%2Fareas%2F" + name, "//_tilecache/areas/" + name, "/tiles/_tilecache/areas/" + name} {
		if status, _, body := getTile(t, a.URL, path); status != 404 {
			t.Errorf("%s: %d %.100q, want 404", path, status, body)
		}
	}
}
