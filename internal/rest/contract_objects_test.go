package rest_test

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

// The store's objects under the CDN's paths (docs/clients.md "Serving tiles"): GET
// /{key without the key prefix}, no authentication, the stored object with
// its Content-Type and Cache-Control and CORS headers, 404 text/plain when
// absent; "/" is the object index.html.

func TestObjectEndpoint(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	seedJSON(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`)
	testenv.Eventually(t, 10*time.Second, "the seed to finish", func() bool { return len(list(t, a, "/rest/seed.json")) == 0 })
	get := func(method, path string) apptest.Response { t.Helper(); return a.DoAuth(t, "", "", method, path, "") }

	res := get("GET", "/demo:world/EPSG:4326/png/default/1/3/1.png")
	wantOK(t, res, "image/png")
	stored, _, _ := a.Get(t, "demo:world/EPSG:4326/png/default/1/3/1.png")
	if !bytes.Equal([]byte(res.Body), stored) || res.Header.Get("Cache-Control") != "public, max-age=60" {
		t.Errorf("got %d bytes, Cache-Control %q; want the stored tile with the layer's Cache-Control", len(res.Body), res.Header.Get("Cache-Control"))
	}
	if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin: got %q, want *", got)
	}
	// Percent-encoded paths name the same key, as a browser sends them.
	if res := get("GET", "/demo%3Aworld/EPSG%3A4326/png/default/1/3/1.png"); res.Status != http.StatusOK {
		t.Errorf("percent-encoded path: got %d, want 200", res.Status)
	}
	res = get("HEAD", "/demo:world/EPSG:4326/png/default/1/3/1.png")
	if res.Status != http.StatusOK || res.Body != "" || res.Header.Get("Content-Length") != strconv.Itoa(len(stored)) {
		t.Errorf("HEAD: got %d, %d bytes", res.Status, len(res.Body))
	}
	res = get("OPTIONS", "/demo:world/EPSG:4326/png/default/1/3/1.png")
	if res.Status != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Methods") != "GET, HEAD, OPTIONS" {
		t.Errorf("OPTIONS: got %d, Allow-Methods %q; want 204, GET, HEAD, OPTIONS", res.Status, res.Header.Get("Access-Control-Allow-Methods"))
	}
	for _, path := range []string{
		"/demo:world/EPSG:4326/png/default/1/3/9.png", // not stored
		"/demo:world/EPSG:4326/png/default/1/3",       // a directory, not an object
		"/demo:world/../demo:world/EPSG:4326/png/default/1/3/1.png",
		"/nothing-here",
	} {
		res := get("GET", path)
		if res.Status != http.StatusNotFound || res.Header.Get("Content-Type") != ctText {
			t.Errorf("GET %s: got %d %q, want 404 text/plain", path, res.Status, res.Header.Get("Content-Type"))
		}
	}
	res = get("POST", "/demo:world/EPSG:4326/png/default/1/3/1.png")
	if res.Status != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
		t.Errorf("POST: got %d, Allow %q; want 405, GET, HEAD, OPTIONS", res.Status, res.Header.Get("Allow"))
	}
	// "/" answers the object index.html with its stored type.
	a.Put(t, "index.html", []byte("<!doctype html>"), tilestore.Meta{ContentType: "text/html; charset=utf-8"})
	res = get("GET", "/")
	if res.Status != http.StatusOK || res.Body != "<!doctype html>" || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("GET /: got %d %q %q", res.Status, res.Header.Get("Content-Type"), res.Body)
	}
	// Reads of tiles count as accesses of their page.
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
	}
	if hits != 2 {
		t.Errorf("got %d hits on demo:world, want 2 (two GETs; HEAD and misses do not count)", hits)
	}
	// Objects share the console's origin: a document among them runs
	// sandboxed (an origin of its own), and no object is sniffed as
	// another type; tiles through /tiles alike.
	for _, path := range []string{"/", "/demo:world/EPSG:4326/png/default/1/3/1.png", "/tiles/demo:world/EPSG:4326/png/1/3/1.png"} {
		res := get("GET", path)
		if res.Status != http.StatusOK || res.Header.Get("X-Content-Type-Options") != "nosniff" ||
			res.Header.Get("Content-Security-Policy") != "sandbox allow-scripts allow-popups allow-downloads" {
			t.Errorf("GET %s: %d, nosniff %q, CSP %q; want 200, nosniff and a sandbox", path, res.Status,
				res.Header.Get("X-Content-Type-Options"), res.Header.Get("Content-Security-Policy"))
		}
	}
}
