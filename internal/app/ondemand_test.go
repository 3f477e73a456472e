package app_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

// wmsProxy is a proxy in front of the test WMS that counts GetMaps and
// shows each answer to a hook, if one is given.
type wmsProxy struct {
	URL     string // the layer's url: the proxy with the WMS's own path and query
	getMaps atomic.Int64
}

// newWMSProxy starts a proxy to the test WMS. answered, when not nil,
// sees each request's query and the WMS's answer (status, Content-Type,
// body) before the proxy passes it on.
func newWMSProxy(t *testing.T, answered func(q url.Values, status int, contentType string, body []byte)) *wmsProxy {
	t.Helper()
	u, err := url.Parse(testenv.RequireWMS(t))
	if err != nil {
		t.Fatal(err)
	}
	p := &wmsProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if strings.EqualFold(q.Get("REQUEST"), "GetMap") {
			p.getMaps.Add(1)
		}
		res, err := http.Get(u.Scheme + "://" + u.Host + r.RequestURI)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if answered != nil {
			answered(q, res.StatusCode, res.Header.Get("Content-Type"), body)
		}
		w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
		w.WriteHeader(res.StatusCode)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL + u.Path
	if u.RawQuery != "" {
		p.URL += "?" + u.RawQuery
	}
	return p
}

const onDemandLayers = `
  - name: od:world
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    renderOnMiss: {enabled: true, zoomStop: 6}
    parameterFilters:
      - {key: STYLES, default: "", values: [""]}
    source: {type: wms, url: "%[1]s", layers: "hillshade,polygons,lines,points"}
  - name: od:failing
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [2, 2]
    renderOnMiss: {enabled: true}
    source: {type: wms, url: "%[2]s/wms", layers: x, retries: -1, timeout: 400ms}
`

// getTile GETs path without credentials (tiles are public).
func getTile(t *testing.T, base, path string) (int, http.Header, []byte) {
	t.Helper()
	res, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

// TestRenderOnMiss: against the test WMS, a cold tile answers 200 and its
// metatile's neighbours are stored; a hit does not call the WMS; 32
// concurrent requests for the 16 tiles of one metatile cause one GetMap;
// the CDN-shaped key path renders too; levels outside the layer's range
// and refused parameters never reach the WMS; usage equals the listing.
func TestRenderOnMiss(t *testing.T) {
	t.Parallel()
	wms := newWMSProxy(t, nil)
	failing := httptest.NewServer(http.NotFoundHandler())
	defer failing.Close()
	a := apptest.Start(t, apptest.Options{Layers: apptest.Layers + fmt.Sprintf(onDemandLayers, wms.URL, failing.URL)})
	// Usage is set up to be counted by the maintenance's first recount,
	// which a fast start may not have run yet: the renders below must not
	// ask for another.
	waitSettled(t, a)

	status, h, body := getTile(t, a.URL, "/tiles/od:world/EPSG:4326/png/3/5/2.png")
	if status != 200 || h.Get("Content-Type") != "image/png" {
		t.Fatalf("cold tile: got %d %q %.200q", status, h.Get("Content-Type"), body)
	}
	if img, err := png.Decode(bytes.NewReader(body)); err != nil || img.Bounds().Dx() != 256 || img.Bounds().Dy() != 256 {
		t.Fatalf("cold tile: not a 256² PNG: %v", err)
	}
	var want []string
	for x := 4; x <= 7; x++ {
		for y := 0; y <= 3; y++ {
			want = append(want, fmt.Sprintf("od:world/EPSG:4326/png/default/3/%d/%d.png", x, y))
		}
	}
	if got := keys(t, a, "od:world/"); !sameSet(got, want) {
		t.Fatalf("after one miss: stored %v, want the metatile's 16 tiles %v", got, want)
	}
	stored, _, _ := a.Get(t, "od:world/EPSG:4326/png/default/3/5/2.png")
	if !bytes.Equal(stored, body) {
		t.Errorf("the answered tile differs from the stored one")
	}
	if n := wms.getMaps.Load(); n != 1 {
		t.Fatalf("%d GetMaps for one cold tile, want 1", n)
	}
	// A neighbour is now a hit.
	if status, _, _ := getTile(t, a.URL, "/tiles/od:world/EPSG:4326/png/3/6/3.png"); status != 200 || wms.getMaps.Load() != 1 {
		t.Errorf("neighbour: got %d after %d GetMaps, want 200 from the store", status, wms.getMaps.Load())
	}

	// 32 concurrent requests, each of the 16 tiles of one metatile twice.
	var wg sync.WaitGroup
	var bad atomic.Int64
	for i := range 32 {
		wg.Go(func() {
			x, y := i%16%4, i%16/4
			status, _, _ := getTile(t, a.URL, fmt.Sprintf("/tiles/od:world/EPSG:4326/png/4/%d/%d.png", 8+x, 4+y))
			if status != 200 {
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	if bad.Load() != 0 || wms.getMaps.Load() != 2 {
		t.Errorf("32 concurrent misses in one metatile: %d not 200, %d GetMaps in all; want all 200 and 2", bad.Load(), wms.getMaps.Load())
	}

	// The CDN-shaped path (what the tile function answers behind the CDN).
	status, h, _ = getTile(t, a.URL, "/od:world/EPSG:4326/png/default/2/0/0.png")
	if status != 200 || h.Get("Content-Type") != "image/png" || wms.getMaps.Load() != 3 {
		t.Errorf("key path: got %d %q after %d GetMaps, want 200 image/png and 3", status, h.Get("Content-Type"), wms.getMaps.Load())
	}
	// An unknown parameters id is not a tile this cache can render.
	if status, _, _ := getTile(t, a.URL, "/od:world/EPSG:4326/png/0123456789abcdef0123456789abcdef01234567/2/0/0.png"); status != 404 {
		t.Errorf("unknown parameters id: got %d, want 404", status)
	}

	// Outside the layer's render-on-miss levels, and refused parameters.
	if status, _, _ := getTile(t, a.URL, "/tiles/od:world/EPSG:4326/png/7/0/0.png"); status != 404 {
		t.Errorf("level 7 (beyond zoomStop 6): got %d, want 404", status)
	}
	if status, _, body := getTile(t, a.URL, "/tiles/od:world/EPSG:4326/png/2/1/1.png?STYLES=evil"); status != 400 || !strings.Contains(string(body), "STYLES") {
		t.Errorf("refused parameter: got %d %q, want 400 naming STYLES", status, body)
	}
	if n := wms.getMaps.Load(); n != 3 {
		t.Errorf("%d GetMaps, want 3: a refused or out-of-range request reached the WMS", n)
	}
	if r := getUsage(t, a).layer("od:world"); r.RecountPending {
		t.Errorf("usage marked for a recount; renders on miss count exactly")
	}
	wantNoDrift(t, a, "on demand", "od:world", 4096)
}

// TestRenderOnMissUpstreamFailure: an upstream error answers 502 with a
// fixed one-line reason (never the upstream's words) and Cache-Control:
// no-store, stores nothing, and is remembered for the failure backoff (the
// next misses in it get the same answer without a call); after it, the
// upstream is asked again; an upstream that does not answer in time is a
// 504 "upstream timeout".
func TestRenderOnMissUpstreamFailure(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	var hang atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if hang.Load() {
			// No answer until the program gives up (its 400 ms timeout
			// closes the request), at most 10 s.
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Second):
			}
		}
		http.Error(w, "ORA-00942 at db01.corp.internal\x00 is down\nsecond line", http.StatusInternalServerError)
	}))
	defer up.Close()
	var clock testClock
	a := apptest.Start(t, apptest.Options{Layers: apptest.Layers + fmt.Sprintf(onDemandLayers, "http://127.0.0.1:1/wms", up.URL),
		Env: map[string]string{"TILECACHE_MISS_FAILURE_BACKOFF": "1s"}, MissClock: clock.Now})
	before := scrape(t, a)
	for i := range 3 {
		status, h, body := getTile(t, a.URL, "/tiles/od:failing/EPSG:4326/png/1/0/0.png")
		if status != 502 || h.Get("Cache-Control") != "no-store" || string(body) != "upstream error\n" {
			t.Errorf("try %d: got %d %q %q; want 502, no-store, \"upstream error\"", i+1, status, h.Get("Cache-Control"), body)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the upstream was called %d times for 3 misses within the backoff, want 1", n)
	}
	if got := keys(t, a, "od:failing/"); len(got) != 0 {
		t.Errorf("stored %v after failures, want nothing", got)
	}
	after := scrape(t, a)
	if d := after[`tilecache_upstream_errors_total{layer=od:failing}`] - before[`tilecache_upstream_errors_total{layer=od:failing}`]; d != 1 {
		t.Errorf("upstream errors grew by %v, want 1", d)
	}
	if d := after[`tilecache_misses_total{layer=od:failing,outcome=remembered_failure}`]; d != 2 {
		t.Errorf("misses answered from a remembered failure: %v, want 2", d)
	}
	clock.Add(1100 * time.Millisecond) // past the backoff: asked again
	hang.Store(true)
	if status, h, body := getTile(t, a.URL, "/tiles/od:failing/EPSG:4326/png/1/0/0.png"); status != 504 || h.Get("Cache-Control") != "no-store" ||
		string(body) != "upstream timeout\n" {
		t.Errorf("hanging upstream: got %d %q %q, want 504 no-store \"upstream timeout\"", status, h.Get("Cache-Control"), body)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the upstream was called %d times, want 2 (asked again after the backoff)", n)
	}
}

// TestRenderOnMissTwoProcesses: two `tilecache serve` on one AWS stack,
// the same 32 concurrent misses of one metatile split between them: one
// GetMap in all (the claim in the task store).
func TestRenderOnMissTwoProcesses(t *testing.T) {
	t.Parallel()
	awsPass(t)
	wms := newWMSProxy(t, nil)
	dir := t.TempDir()
	layers := filepath.Join(dir, "od-layers.yaml")
	if err := os.WriteFile(layers, []byte(apptest.Layers+fmt.Sprintf(onDemandLayers, wms.URL, "http://127.0.0.1:1")), 0o644); err != nil {
		t.Fatal(err)
	}
	extra := map[string]string{"TILECACHE_LAYERS": layers}
	procs := []*apptest.Process{apptest.StartProcess(t, dir, extra), apptest.StartProcess(t, dir, extra)}
	var wg sync.WaitGroup
	var bad atomic.Int64
	for i := range 32 {
		wg.Go(func() {
			x, y := i%16%4, i%16/4
			status, _, _ := getTile(t, procs[i%2].URL, fmt.Sprintf("/tiles/od:world/EPSG:4326/png/4/%d/%d.png", x, 4+y))
			if status != 200 {
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	if bad.Load() != 0 || wms.getMaps.Load() != 1 {
		t.Errorf("32 misses over two processes: %d not 200, %d GetMaps; want all 200 and 1", bad.Load(), wms.getMaps.Load())
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			return false
		}
	}
	return true
}

// TestRenderOnMissRacingTruncate: a truncate submitted while a render on
// miss of the same tiles waits for its upstream wins: once both are done
// no tile of the truncated level is stored, and the usage equals the
// listing (after the recount the overlap asks for).
func TestRenderOnMissRacingTruncate(t *testing.T) {
	t.Parallel()
	var tile bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 256, 256))
	draw.Draw(img, img.Bounds(), &image.Uniform{color.RGBA{200, 40, 40, 255}}, image.Point{}, draw.Src)
	if err := png.Encode(&tile, img); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	// The upstream answers once the truncate is done (release), or when
	// the request ends.
	release := make(chan struct{})
	var once sync.Once
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write(tile.Bytes())
	}))
	defer up.Close()
	defer once.Do(func() { close(release) }) // before Close, which waits for the requests
	a := apptest.Start(t, apptest.Options{StaleAfter: time.Second, Layers: apptest.Layers + `
  - name: od:race
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [2, 2]
    renderOnMiss: {enabled: true}
    source: {type: xyz, url: "` + up.URL + `/{z}/{x}/{y}.png", passThrough: false}
`})
	done := make(chan int)
	go func() {
		status, _, _ := getTile(t, a.URL, "/tiles/od:race/EPSG:4326/png/3/1/1.png")
		done <- status
	}()
	testenv.Eventually(t, 10*time.Second, "the render to reach the upstream", func() bool { return calls.Load() > 0 })
	rows := seedReq(t, a, "od:race", `{"seedRequest":{"zoomStart":3,"zoomStop":3,"type":"truncate"}}`)
	waitFinished(t, a, ids(rows), 30*time.Second)
	once.Do(func() { close(release) })
	if status := <-done; status != 200 {
		t.Errorf("the miss answered %d, want 200 (the client asked before the truncate)", status)
	}
	if got := keys(t, a, "od:race/EPSG:4326/png/default/3/"); len(got) != 0 {
		t.Errorf("after the truncate: %v stored, want nothing at level 3", got)
	}
	waitSettled(t, a)
	wantNoDrift(t, a, "render on miss racing a truncate", "od:race", 4096)
}
