package app_test

// The edge suite: what an anonymous client can make a deployment that
// renders on miss do. Each test drives `tilecache serve` (in process, or
// as processes on the local AWS stack) through its public paths only, in
// front of a counting WMS (a real HTTP server answering GetMaps), and
// counts GetMaps, answers, latencies and what the log holds.

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

// edgeWMS is a WMS that answers GetMaps of the requested size: opaque red,
// fully transparent (blank), or an HTTP 500 whose body names an internal
// host; while held (hold), each only when the test lets one through
// (pass). It counts GetMaps and the most in flight at once.
type edgeWMS struct {
	srv      *httptest.Server
	getMaps  atomic.Int64
	inFlight atomic.Int64
	peak     atomic.Int64
	held     atomic.Bool
	waiting  atomic.Int64  // GetMaps held now (pass counts one out as it lets it through)
	gate     chan struct{} // a held GetMap answers when it receives from it
	done     chan struct{} // closed when the test ends: nothing is held any more
	mode     atomic.Value  // "red", "blank", "fail" or "exception"
	pngs     sync.Map      // "w×h mode" → encoded image
}

func newEdgeWMS(t *testing.T) *edgeWMS {
	t.Helper()
	u := &edgeWMS{gate: make(chan struct{}), done: make(chan struct{})}
	u.mode.Store("red")
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	t.Cleanup(func() { close(u.done) }) // first: held GetMaps end
	return u
}

// hold makes every GetMap from now on wait, in flight, until the test lets
// it through (pass), the request ends or the test does.
func (u *edgeWMS) hold() { u.held.Store(true) }

// pass lets one held GetMap through, waiting for one to be held.
func (u *edgeWMS) pass(t *testing.T) {
	t.Helper()
	select {
	case u.gate <- struct{}{}:
		u.waiting.Add(-1)
	case <-time.After(30 * time.Second):
		t.Fatalf("no GetMap held to let through in 30 s (%d held, %d in flight, %d GetMaps)", u.waiting.Load(), u.inFlight.Load(), u.getMaps.Load())
	}
}

// passInTurn answers held GetMaps one at a time, the first renders of
// them each once share GetMaps are held (the most the misses may have in
// flight), until n misses are answered (answered counts them). After
// those, it lets the held ones through only once every other miss is
// answered: the misses still waiting for a slot give up (503). So misses
// wait for a slot while renders end one after another, then wait in vain,
// and more in flight than share fails the peak check.
func (u *edgeWMS) passInTurn(t *testing.T, share, n, renders int64, answered *atomic.Int64) {
	t.Helper()
	for passed := int64(0); answered.Load() < n; passed++ {
		testenv.Eventually(t, 30*time.Second, "a full share of GetMaps held, or every other miss answered", func() bool {
			h := u.waiting.Load()
			return (h >= share && passed < renders) || (h > 0 && answered.Load()+h >= n) || answered.Load() >= n
		})
		if u.waiting.Load() > 0 {
			u.pass(t)
		}
	}
}

func (u *edgeWMS) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !strings.EqualFold(q.Get("REQUEST"), "GetMap") {
		http.Error(w, "GetMap only", http.StatusBadRequest)
		return
	}
	u.getMaps.Add(1)
	n := u.inFlight.Add(1)
	defer u.inFlight.Add(-1)
	for p := u.peak.Load(); n > p && !u.peak.CompareAndSwap(p, n); p = u.peak.Load() {
	}
	if u.held.Load() {
		u.waiting.Add(1)
		select {
		case <-u.gate: // pass counted it out
		case <-r.Context().Done():
			u.waiting.Add(-1)
		case <-u.done:
			u.waiting.Add(-1)
		}
	}
	mode := u.mode.Load().(string)
	switch mode {
	case "fail":
		http.Error(w, "ORA-00942: table or view does not exist at db01.corp.internal:1521", http.StatusInternalServerError)
		return
	case "exception":
		w.Header().Set("Content-Type", "application/vnd.ogc.se_xml")
		fmt.Fprint(w, `<ServiceExceptionReport><ServiceException>msWMSLoadGetMapParams(): db01.corp.internal refused</ServiceException></ServiceExceptionReport>`)
		return
	}
	width, _ := strconv.Atoi(q.Get("WIDTH"))
	height, _ := strconv.Atoi(q.Get("HEIGHT"))
	key := fmt.Sprint(width, "x", height, " ", mode)
	b, ok := u.pngs.Load(key)
	if !ok {
		img := image.NewNRGBA(image.Rect(0, 0, width, height))
		if mode == "red" {
			for i := 0; i < len(img.Pix); i += 4 {
				img.Pix[i], img.Pix[i+3] = 200, 255
			}
		}
		var buf bytes.Buffer
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := enc.Encode(&buf, img); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		b, _ = u.pngs.LoadOrStore(key, buf.Bytes())
	}
	w.Header().Set("Content-Type", "image/png")
	w.Write(b.([]byte))
}

// edgeLayers are the render-on-miss layers of the suite, on the WMS at
// %[1]s (its URL, which carries credentials and a key as secrets).
const edgeLayers = `
  - name: edge:world
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [2, 2]
    renderOnMiss: {enabled: true}
    parameterFilters:
      - {key: STYLES, default: "", values: [dark]}
      - {key: CQL_FILTER, default: "", regex: "[a-z0-9=]*"}
    source: {type: wms, url: "%[1]s", layers: x, retries: -1, timeout: 5s, maxConcurrent: 4}
  - name: edge:overlay
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    renderOnMiss: {enabled: true}
    source: {type: wms, url: "%[1]s", layers: x, retries: -1, timeout: 20s, transparent: true, skipBlank: transparent}
`

// edgeSecrets are what the WMS URL carries that no log or answer may show.
var edgeSecrets = []string{"pa55w0rd", "K3Y-s3cret"}

// edgeURL is the WMS URL of the layers: credentials and an API key.
func (u *edgeWMS) edgeURL() string {
	return strings.Replace(u.srv.URL, "http://", "http://edgeuser:pa55w0rd@", 1) + "/wms?apikey=K3Y-s3cret&map=world"
}

func startEdge(t *testing.T, env map[string]string) (*apptest.App, *edgeWMS, *apptest.LogBuffer) {
	t.Helper()
	return startEdgeAt(t, env, nil)
}

// startEdgeAt is startEdge with render on miss on clock (nil: real time).
func startEdgeAt(t *testing.T, env map[string]string, clock *testClock) (*apptest.App, *edgeWMS, *apptest.LogBuffer) {
	t.Helper()
	u := newEdgeWMS(t)
	var log apptest.LogBuffer
	o := apptest.Options{Layers: apptest.Layers + fmt.Sprintf(edgeLayers, u.edgeURL()), Env: env, Log: &log}
	if clock != nil {
		o.MissClock = clock.Now
	}
	a := apptest.Start(t, o)
	return a, u, &log
}

// testClock is real time plus what the test added (Add): a clock a test
// moves on past a memory or back-off rather than waiting for it to lapse.
type testClock struct{ ahead atomic.Int64 }

func (c *testClock) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

func (c *testClock) Add(d time.Duration) { c.ahead.Add(int64(d)) }

// TestEdgeCanonicalPaths: a tile path whose numbers are not written as
// strconv.Itoa writes them, or whose extension is not its format's, is a
// 404 without a GetMap, on /tiles and on the key paths; the canonical
// spelling renders.
func TestEdgeCanonicalPaths(t *testing.T) {
	t.Parallel()
	a, u, _ := startEdge(t, nil)
	for _, p := range []string{
		"/tiles/edge:world/EPSG:4326/png/06/0/0.png",
		"/tiles/edge:world/EPSG:4326/png/6/+4/0.png",
		"/tiles/edge:world/EPSG:4326/png/6/8/004.png",
		"/tiles/edge:world/EPSG:4326/png/6/%208/0.png",
		"/tiles/edge:world/EPSG:4326/png/6/8/0.jpeg",
		"/tiles/edge:world/EPSG:4326/png/6/8/0.png.png",
		"/edge:world/EPSG:4326/png/default/06/12/0.png",
		"/edge:world/EPSG:4326/png/default/6/012/0.png",
		"/edge:world/EPSG:4326/png/default/6/12/-0.png",
		"/edge:world/EPSG:4326/png/default/6/12/0.jpeg",
	} {
		if status, _, _ := getTile(t, a.URL, p); status != 404 {
			t.Errorf("%s: got %d, want 404", p, status)
		}
	}
	if n := u.getMaps.Load(); n != 0 {
		t.Fatalf("%d GetMaps for non-canonical paths, want 0", n)
	}
	for _, p := range []string{"/tiles/edge:world/EPSG:4326/png/6/8/0.png", "/edge:world/EPSG:4326/png/default/6/12/0.png"} {
		if status, _, _ := getTile(t, a.URL, p); status != 200 {
			t.Errorf("%s: got %d, want 200", p, status)
		}
	}
	if n := u.getMaps.Load(); n != 2 {
		t.Errorf("%d GetMaps for two canonical misses in two metatiles, want 2", n)
	}
}

// TestEdgeBlankMetatileRemembered: misses in a metatile that rendered
// blank (a skipBlank layer: nothing stored) are 404 without another
// GetMap while its outcome is remembered, on both paths; once the memory
// lapses the next miss renders again.
func TestEdgeBlankMetatileRemembered(t *testing.T) {
	t.Parallel()
	var clock testClock
	a, u, _ := startEdgeAt(t, map[string]string{"TILECACHE_MISS_REMEMBER": "2s"}, &clock)
	u.mode.Store("blank")
	for i := range 8 {
		p := fmt.Sprintf("/tiles/edge:overlay/EPSG:4326/png/4/%d/%d.png", 4+i%4, 4+i/4)
		if i%2 == 1 {
			p = fmt.Sprintf("/edge:overlay/EPSG:4326/png/default/4/%d/%d.png", 4+i%4, 4+i/4)
		}
		if status, h, _ := getTile(t, a.URL, p); status != 404 || h.Get("Cache-Control") == "no-store" {
			t.Errorf("miss %d (%s): got %d %q, want a cacheable 404", i+1, p, status, h.Get("Cache-Control"))
		}
	}
	if n := u.getMaps.Load(); n != 1 {
		t.Errorf("8 misses in one blank metatile: %d GetMaps, want 1", n)
	}
	clock.Add(2100 * time.Millisecond) // the memory lapses
	if status, _, _ := getTile(t, a.URL, "/tiles/edge:overlay/EPSG:4326/png/4/5/5.png"); status != 404 || u.getMaps.Load() != 2 {
		t.Errorf("after the memory lapsed: got %d after %d GetMaps, want 404 after 2", status, u.getMaps.Load())
	}
	// A metatile rendered with some tiles: its blank ones stay 404 without
	// a render, and a truncated one renders again.
	u.mode.Store("red")
	if status, _, _ := getTile(t, a.URL, "/tiles/edge:overlay/EPSG:4326/png/4/8/4.png"); status != 200 {
		t.Fatalf("red metatile: got %d, want 200", status)
	}
	rows := seedReq(t, a, "edge:overlay", `{"seedRequest":{"zoomStart":4,"zoomStop":4,"type":"truncate"}}`)
	waitFinished(t, a, ids(rows), 30*time.Second)
	if status, _, _ := getTile(t, a.URL, "/tiles/edge:overlay/EPSG:4326/png/4/9/5.png"); status != 200 || u.getMaps.Load() != 4 {
		t.Errorf("a truncated metatile: got %d after %d GetMaps, want 200 after 4 (rendered again)", status, u.getMaps.Load())
	}
}

// TestEdgeNothingLeaks: a WMS failing with its own words (an HTTP 500
// naming an internal host, an exception delivered as 200) is answered
// with a fixed one-line reason and no-store; neither the answers nor the
// log carry the secrets of the WMS URL.
func TestEdgeNothingLeaks(t *testing.T) {
	t.Parallel()
	a, u, log := startEdge(t, map[string]string{"TILECACHE_MISS_FAILURE_BACKOFF": "50ms"})
	for _, c := range []struct{ mode, path, want string }{
		{"fail", "/tiles/edge:world/EPSG:4326/png/3/0/0.png", "upstream error\n"},
		{"fail", "/edge:world/EPSG:4326/png/default/3/2/0.png", "upstream error\n"},
		{"exception", "/tiles/edge:world/EPSG:4326/png/3/4/0.png", "upstream answered no valid tile\n"},
	} {
		u.mode.Store(c.mode)
		status, h, body := getTile(t, a.URL, c.path)
		if status != 502 || string(body) != c.want || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s (%s): got %d %q %q, want 502 %q no-store", c.path, c.mode, status, body, h.Get("Cache-Control"), c.want)
		}
	}
	logged := log.String()
	if !strings.Contains(logged, "render on miss failed") {
		t.Fatalf("the failures were not logged:\n%s", logged)
	}
	for _, s := range edgeSecrets {
		if strings.Contains(logged, s) {
			t.Errorf("the log holds the secret %q of the WMS URL:\n%s", s, logged)
		}
	}
}

// TestEdgeFlood: 200 concurrent misses in 200 metatiles of a layer whose
// WMS allows 4 requests (2 for misses) and answers 16 GetMaps one by one
// as that share is in flight, then the last ones once every other miss is
// answered (passInTurn): every miss is answered quickly,
// rendered or 503 with Retry-After and no-store; the WMS never has more
// than the misses' share in flight; each rendered metatile cost one
// GetMap.
func TestEdgeFlood(t *testing.T) {
	t.Parallel()
	a, u, _ := startEdge(t, nil)
	u.hold()
	const n = 200
	var wg sync.WaitGroup
	took := make([]time.Duration, n)
	status := make([]int, n)
	var bad, answered atomic.Int64
	for i := range n {
		wg.Go(func() {
			start := time.Now()
			// Level 5 of EPSG:4326 has 32×16 metatiles of 2×2: miss i is in
			// metatile (i%32, i/32).
			s, h, _ := getTile(t, a.URL, fmt.Sprintf("/tiles/edge:world/EPSG:4326/png/5/%d/%d.png", 2*(i%32), 2*(i/32)))
			took[i], status[i] = time.Since(start), s
			if s == 503 && (h.Get("Retry-After") == "" || h.Get("Cache-Control") != "no-store") {
				bad.Add(1)
			}
			answered.Add(1)
		})
	}
	u.passInTurn(t, 2, n, 16, &answered)
	wg.Wait()
	ok, busy := 0, 0
	for _, s := range status {
		switch s {
		case 200:
			ok++
		case 503:
			busy++
		default:
			t.Errorf("a miss answered %d, want 200 or 503", s)
		}
	}
	slowest := slices.Max(took)
	t.Logf("flood of %d misses: %d rendered, %d busy (503); slowest answer %v; peak GetMaps in flight %d; GetMaps %d",
		n, ok, busy, slowest.Round(time.Millisecond), u.peak.Load(), u.getMaps.Load())
	if bad.Load() > 0 {
		t.Errorf("%d 503 answers without Retry-After or no-store", bad.Load())
	}
	if slowest > 15*time.Second {
		t.Errorf("the slowest miss took %v, want well within a CDN's origin timeout (3s wait for a slot + one render)", slowest)
	}
	if p := u.peak.Load(); p > 2 {
		t.Errorf("peak GetMaps in flight %d, want at most the misses' share of maxConcurrent 4 (2)", p)
	}
	if int(u.getMaps.Load()) != ok || ok == 0 {
		t.Errorf("%d GetMaps for %d rendered misses in distinct metatiles, want as many (and some)", u.getMaps.Load(), ok)
	}
}

// TestEdgeParameters: a miss renders with a list filter's value, but not
// with a regex filter's value that no seed recorded (404, no GetMap);
// once a seed recorded it, misses with it render.
func TestEdgeParameters(t *testing.T) {
	t.Parallel()
	a, u, _ := startEdge(t, nil)
	if status, _, _ := getTile(t, a.URL, "/tiles/edge:world/EPSG:4326/png/2/0/0.png?STYLES=dark"); status != 200 || u.getMaps.Load() != 1 {
		t.Fatalf("a listed value: got %d after %d GetMaps, want 200 after 1", status, u.getMaps.Load())
	}
	for i := range 5 {
		p := fmt.Sprintf("/tiles/edge:world/EPSG:4326/png/2/0/0.png?CQL_FILTER=id%d", i)
		if status, _, _ := getTile(t, a.URL, p); status != 404 {
			t.Errorf("%s: got %d, want 404 (no seed recorded the value)", p, status)
		}
	}
	if n := u.getMaps.Load(); n != 1 {
		t.Fatalf("%d GetMaps, want 1: unrecorded regex values rendered", n)
	}
	rows := seedReq(t, a, "edge:world", `{"seedRequest":{"zoomStart":0,"zoomStop":0,"parameters":{"entry":[{"string":["CQL_FILTER","id3"]}]}}}`)
	waitFinished(t, a, ids(rows), 30*time.Second)
	if status, _, _ := getTile(t, a.URL, "/tiles/edge:world/EPSG:4326/png/2/0/0.png?CQL_FILTER=id3"); status != 200 {
		t.Errorf("a value a seed recorded: got %d, want 200", status)
	}
}

// TestEdgeTruncationPrecise: a truncate submitted during a render on miss
// removes the render's tiles only when its range holds them; a mass
// truncation during a render removes them all; usage stays exact.
func TestEdgeTruncationPrecise(t *testing.T) {
	t.Parallel()
	a, u, _ := startEdge(t, map[string]string{"TILECACHE_STALE_AFTER": "1s"}) // recounts soon
	u.hold()                                                                  // each render waits at the WMS until the truncation is done
	miss := func(p string) chan int {
		done := make(chan int, 1)
		go func() { s, _, _ := getTile(t, a.URL, p); done <- s }()
		testenv.Eventually(t, 10*time.Second, "the render to reach the WMS", func() bool { return u.inFlight.Load() > 0 })
		return done
	}
	// Level 3 of EPSG:4326: 16×8 tiles of 45°; the render is of x 0-1, y 0-1
	// (the south-west), the truncate of the north-east quarter only.
	done := miss("/tiles/edge:world/EPSG:4326/png/3/0/0.png")
	rows := seedReq(t, a, "edge:world", `{"seedRequest":{"zoomStart":3,"zoomStop":3,"type":"truncate","bounds":{"coords":{"double":[90,0,180,90]}}}}`)
	waitFinished(t, a, ids(rows), 30*time.Second)
	u.pass(t)
	if s := <-done; s != 200 {
		t.Fatalf("the miss answered %d, want 200", s)
	}
	if got := keys(t, a, "edge:world/EPSG:4326/png/default/3/"); len(got) != 4 {
		t.Errorf("after a truncate elsewhere: %v stored, want the render's 4 tiles", got)
	}
	done = miss("/tiles/edge:world/EPSG:4326/png/3/6/2.png")
	if res := a.Do(t, "POST", "/rest/masstruncate", "<truncateLayer><layerName>edge:world</layerName></truncateLayer>", "Content-Type", "text/xml"); res.Status != 200 {
		t.Fatalf("mass truncate: %d %s", res.Status, res.Body)
	}
	u.pass(t)
	if s := <-done; s != 200 {
		t.Fatalf("the miss answered %d, want 200", s)
	}
	if got := keys(t, a, "edge:world/"); len(got) != 0 {
		t.Errorf("after a mass truncation during a render: %v stored, want nothing", got)
	}
	waitSettled(t, a)
	wantNoDrift(t, a, "renders racing truncations", "edge:world", 4096)
}

// TestEdgeMetricsNotAnonymous: /metrics answers 401 to anonymous clients
// and the metrics to an administrator; with TILECACHE_METRICS_ADDR it
// moves to its own listener and the main one answers 404.
func TestEdgeMetricsNotAnonymous(t *testing.T) {
	t.Parallel()
	a, _, _ := startEdge(t, nil)
	if status, _, _ := getTile(t, a.URL, "/metrics"); status != 401 {
		t.Errorf("anonymous /metrics: got %d, want 401", status)
	}
	if res := a.Do(t, "GET", "/metrics", ""); res.Status != 200 || !strings.Contains(res.Body, "go_goroutines") {
		t.Errorf("administrator's /metrics: got %d, want 200 with the metrics", res.Status)
	}
	dir := t.TempDir()
	addr := freeLoopback(t)
	p := apptest.StartLocalProcess(t, apptest.PlainBinary(t), dir, apptest.Layers, map[string]string{"TILECACHE_METRICS_ADDR": addr})
	if status, _, _ := getTile(t, p.URL, "/metrics"); status != 404 {
		t.Errorf("/metrics on the main listener with TILECACHE_METRICS_ADDR: got %d, want 404", status)
	}
	if status, _, body := getTile(t, "http://"+addr, "/metrics"); status != 200 || !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("/metrics on its own listener: got %d, want 200 with the metrics", status)
	}
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	return addr
}

// TestEdgeTwoProcesses: two `tilecache serve` on one AWS stack. A blank
// metatile missed 8 times, alternating between them, is rendered once
// (its outcome is remembered in the task store); a flood of misses split
// between them never has more GetMaps in flight than the layer's misses
// share (the slots are claims in the task store).
func TestEdgeTwoProcesses(t *testing.T) {
	t.Parallel()
	awsPass(t)
	u := newEdgeWMS(t)
	dir := t.TempDir()
	layers := filepath.Join(dir, "edge-layers.yaml")
	if err := os.WriteFile(layers, []byte(apptest.Layers+fmt.Sprintf(edgeLayers, u.edgeURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	extra := map[string]string{"TILECACHE_LAYERS": layers}
	procs := []*apptest.Process{apptest.StartProcess(t, dir, extra), apptest.StartProcess(t, dir, extra)}
	u.mode.Store("blank")
	for i := range 8 {
		p := fmt.Sprintf("/tiles/edge:overlay/EPSG:4326/png/4/%d/%d.png", 4+i%4, 4+i/4)
		if status, _, _ := getTile(t, procs[i%2].URL, p); status != 404 {
			t.Errorf("miss %d: got %d, want 404", i+1, status)
		}
	}
	if n := u.getMaps.Load(); n != 1 {
		t.Errorf("8 misses of one blank metatile over two processes: %d GetMaps, want 1", n)
	}
	u.mode.Store("red")
	u.hold()
	before := u.getMaps.Load()
	const n = 40
	var wg sync.WaitGroup
	var ok, busy, answered atomic.Int64
	for i := range n {
		wg.Go(func() {
			defer answered.Add(1)
			s, _, _ := getTile(t, procs[i%2].URL, fmt.Sprintf("/tiles/edge:world/EPSG:4326/png/5/%d/%d.png", 2*(i%32), 2+2*(i/32)))
			switch s {
			case 200:
				ok.Add(1)
			case 503:
				busy.Add(1)
			default:
				t.Errorf("a miss answered %d, want 200 or 503", s)
			}
		})
	}
	u.passInTurn(t, 2, n, 10, &answered)
	wg.Wait()
	t.Logf("two processes, %d misses: %d rendered, %d busy; peak GetMaps in flight %d", n, ok.Load(), busy.Load(), u.peak.Load())
	if p := u.peak.Load(); p > 2 {
		t.Errorf("peak GetMaps in flight %d over two processes, want at most 2", p)
	}
	if got := u.getMaps.Load() - before; got != ok.Load() {
		t.Errorf("%d GetMaps for %d rendered misses in distinct metatiles, want as many", got, ok.Load())
	}
}
