package rest_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

// The tile endpoint, GET /tiles/{layer}/{gridSetId}/{formatId}/{z}/{x}/{y}.{ext}
// (docs/clients.md "The tile endpoint"): no authentication, the stored object with its
// Content-Type and Cache-Control, 404 text/plain when absent.

func TestTileEndpoint(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	seedJSON(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`)
	seedJSON(t, a, "topp:states", `{"seedRequest":{"zoomStart":0,"zoomStop":0,"parameters":{"entry":{"string":["STYLES","polygon"]}}}}`)
	testenv.Eventually(t, 10*time.Second, "the seeds to finish", func() bool { return len(list(t, a, "/rest/seed.json")) == 0 })

	get := func(path string) apptest.Response { t.Helper(); return a.DoAuth(t, "", "", "GET", path, "") }
	res := get("/tiles/demo:world/EPSG:4326/png/1/3/1.png")
	wantOK(t, res, "image/png")
	stored, _, _ := a.Get(t, "demo:world/EPSG:4326/png/default/1/3/1.png")
	if !bytes.Equal([]byte(res.Body), stored) || res.Header.Get("Cache-Control") != "public, max-age=60" {
		t.Errorf("got %d bytes, Cache-Control %q; want the stored tile with the layer's Cache-Control", len(res.Body), res.Header.Get("Cache-Control"))
	}
	res = a.DoAuth(t, "", "", "HEAD", "/tiles/demo:world/EPSG:4326/png/1/3/1.png", "")
	if res.Status != http.StatusOK || res.Body != "" || res.Header.Get("Content-Length") == "0" {
		t.Errorf("HEAD: got %d, %d bytes, length %q", res.Status, len(res.Body), res.Header.Get("Content-Length"))
	}
	// Parameters select the tile set, normalised by the layer's filters
	// (names case-insensitive, unknown names ignored).
	res = get("/tiles/topp:states/EPSG:4326/png/0/0/0.png?styles=polygon&foo=bar")
	wantOK(t, res, "image/png")
	want, _, _ := a.Get(t, "topp:states/EPSG:4326/png/"+tilestore.ParametersID(map[string]string{"STYLES": "polygon", "CQL_FILTER": ""})+"/0/0/0.png")
	if !bytes.Equal([]byte(res.Body), want) {
		t.Error("the parameters did not select their tile set")
	}
	wantError(t, get("/tiles/topp:states/EPSG:4326/png/0/0/0.png"), http.StatusNotFound, "Tile not found: /tiles/topp:states/EPSG:4326/png/0/0/0.png")
	wantBadRequest(t, get("/tiles/topp:states/EPSG:4326/png/0/0/0.png?STYLES=nope"), "STYLES", "nope")
	for _, path := range []string{
		"/tiles/demo:world/EPSG:4326/png/1/3/9.png",   // not stored
		"/tiles/nope/EPSG:4326/png/1/3/1.png",         // unknown layer
		"/tiles/demo:world/EPSG:3035/png/1/3/1.png",   // unknown grid set
		"/tiles/demo:world/EPSG:4326/gif/1/3/1.gif",   // format the layer lacks
		"/tiles/demo:world/EPSG:4326/png/1/3/1.jpeg",  // wrong extension
		"/tiles/demo:world/EPSG:4326/png/1/x/1.png",   // not a number
		"/tiles/demo:world/EPSG:4326/png/1/3/1",       // no extension
		"/tiles/demo:world/EPSG:4326/png/1/3/1.png/x", // too deep
	} {
		res := get(path)
		if res.Status != http.StatusNotFound || res.Header.Get("Content-Type") != ctText {
			t.Errorf("GET %s: got %d %q, want 404 text/plain", path, res.Status, res.Header.Get("Content-Type"))
		}
	}
	res = a.Do(t, "POST", "/tiles/demo:world/EPSG:4326/png/1/3/1.png", "")
	if res.Status != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: got %d, Allow %q; want 405, GET, HEAD", res.Status, res.Header.Get("Allow"))
	}
	// Reads count as accesses of the tile's page.
	if err := a.Local.Recorder.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	pages, err := a.Local.Usage.Pages(t.Context(), "demo:world")
	if err != nil {
		t.Fatal(err)
	}
	var hits int64
	for _, p := range pages {
		hits += p.Hits
		if p.Hits > 0 && (p.Key.Z != 1 || p.Key.Set.FormatID != "png" || p.LastAccess.IsZero()) {
			t.Errorf("page %s: got %+v", p.Key.ID(), p)
		}
	}
	if hits != 1 {
		t.Errorf("got %d hits on demo:world, want 1 (the GET; HEAD and misses do not count)", hits)
	}
}

// TestStoredOnlyReadsNeedAnAccount: a stored-only read (X-Tilecache-Stored-Only,
// or Cache-Control: only-if-cached) tells whether a tile is stored without
// rendering it, so which areas of a render-on-miss layer were viewed: it
// is an account's read, challenged like the REST interface's, through
// /tiles and the store's own paths alike. A plain read stays anonymous.
func TestStoredOnlyReadsNeedAnAccount(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	seedJSON(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":0}}`)
	testenv.Eventually(t, 10*time.Second, "the seed to finish", func() bool { return len(list(t, a, "/rest/seed.json")) == 0 })
	const stored, missing = "/tiles/demo:world/EPSG:4326/png/0/0/0.png", "/tiles/demo:world/EPSG:4326/png/1/0/0.png"
	for _, path := range []string{stored, missing, "/demo:world/EPSG:4326/png/default/0/0/0.png", "/demo:world/EPSG:4326/png/default/1/0/0.png"} {
		for _, h := range [][]string{{"X-Tilecache-Stored-Only", "1"}, {"Cache-Control", "max-age=0, only-if-cached"}} {
			res := a.DoAuth(t, "", "", "GET", path, "", h...)
			if res.Status != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("anonymous %s %s: %d %q, want 401 with a challenge", h[0], path, res.Status, res.Body)
			}
		}
	}
	if res := a.DoAuth(t, "", "", "GET", stored, "", "X-Tilecache-Stored-Only", "1"); res.Body == "" || bytes.HasPrefix([]byte(res.Body), []byte("\x89PNG")) {
		t.Errorf("anonymous stored-only read answered the tile: %d", res.Status)
	}
	if res := a.Do(t, "GET", stored, "", "X-Tilecache-Stored-Only", "1"); res.Status != http.StatusOK {
		t.Errorf("an account's stored-only read of a stored tile: %d %q", res.Status, res.Body)
	}
	if res := a.Do(t, "GET", missing, "", "X-Tilecache-Stored-Only", "1"); res.Status != http.StatusGatewayTimeout {
		t.Errorf("an account's stored-only read of a missing tile: %d %q, want 504", res.Status, res.Body)
	}
	if res := a.DoAuth(t, "", "", "GET", stored, ""); res.Status != http.StatusOK {
		t.Errorf("anonymous plain read: %d %q", res.Status, res.Body)
	}
}
