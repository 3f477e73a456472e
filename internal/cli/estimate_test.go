package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"tilecache/internal/app/sources"
	"tilecache/internal/cli"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/queue/memqueue"
	"tilecache/internal/seed"
	"tilecache/internal/source"
	"tilecache/internal/state/bolt"
	"tilecache/internal/tilestore/filestore"
)

// estimateLayers has a layer of each source kind, all alike otherwise.
const estimateLayers = `
layers:
  - name: pattern:world
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: testpattern}
  - name: wms:world
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: wms, url: "http://127.0.0.1:1/wms", layers: world}
  - name: xyz:world
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: xyz, url: "http://127.0.0.1:1/{z}/{x}/{y}.png"}
`

// timedSource renders a metatile in renderTime (virtual time in a
// synctest bubble, so that the engine measures an exact render rate), with
// tiles of a few bytes; timedCapped also reports the upstream cap of the
// layer's real source (a WMS or a tile service), which the estimate counts
// upstream requests by.
type timedSource struct{}

const renderTime = 400 * time.Millisecond

func (timedSource) Render(ctx context.Context, req source.Request) ([]source.Tile, error) {
	select {
	case <-time.After(renderTime):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var out []source.Tile
	for x, y := range req.Tiles.All() {
		out = append(out, source.Tile{X: x, Y: y, Data: []byte("tile")})
	}
	return out, nil
}

type timedCapped struct {
	timedSource
	metatile.Capped
}

// estimateState is what the server knows of a layer when it estimates.
type estimateState string

const (
	fresh    estimateState = "fresh"    // nothing: no tiles stored, no rate measured (a new `make run`)
	measured estimateState = "measured" // a seed of the layer just ran: its render rate and tile sizes
	stale    estimateState = "stale"    // tiles stored, the rate forgotten (an hour later, or another process)
)

// estimateKey names an estimate the engine made.
type estimateKey struct {
	state estimateState
	layer string
	typ   string
	zoom  [2]int
}

// engineEstimates seeds each layer of estimateLayers on an engine over the
// embedded stores, in a synctest bubble, and returns the engine's
// estimates (in the server's JSON) of each key of want, made in its state.
func engineEstimates(t *testing.T, want []estimateKey) map[estimateKey][]byte {
	cat, err := layer.Parse([]byte(estimateLayers), "test")
	if err != nil {
		t.Fatal(err)
	}
	real, err := sources.Of(cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]source.Source{}
	for name, s := range real {
		sources[name] = timedSource{}
		if c, ok := s.(metatile.Capped); ok {
			sources[name] = timedCapped{Capped: c}
		}
	}
	out := map[estimateKey][]byte{}
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		db, err := bolt.Open(filepath.Join(dir, "tasks.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		tiles, err := filestore.New(filepath.Join(dir, "tiles"))
		if err != nil {
			t.Fatal(err)
		}
		e := seed.New(cat, sources, db.Tasks(), memqueue.New(), tiles, seed.Options{Usage: db.Usage()}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		estimate := func(state estimateState) {
			for _, k := range want {
				if k.state != state {
					continue
				}
				est, err := e.Planner.Estimate(t.Context(), gwc.SeedRequest{Layer: k.layer, GridSetID: "EPSG:4326", HasGridSetID: true,
					ZoomStart: &k.zoom[0], ZoomStop: &k.zoom[1], Type: k.typ, ThreadCount: ptr(4)})
				if err != nil {
					t.Fatalf("estimate %v: %v", k, err)
				}
				b, err := json.Marshal(est) // as the REST handler answers
				if err != nil {
					t.Fatalf("estimate %v: %v", k, err)
				}
				out[k] = b
			}
		}
		estimate(fresh)
		// A seed of z0-2 of each layer in one task: 4 metatiles of 42
		// tiles in 1.6 s, 26.25 tiles/s.
		ctx, stop := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { e.Worker.RunWorkers(ctx, 1) })
		for _, name := range cat.Names() {
			if _, err := e.Control.Submit(t.Context(), gwc.SeedRequest{Layer: name, GridSetID: "EPSG:4326", HasGridSetID: true,
				ZoomStart: ptr(0), ZoomStop: ptr(2), Type: "seed"}); err != nil {
				t.Fatal(err)
			}
		}
		for active := true; active; {
			time.Sleep(100 * time.Millisecond)
			ts, err := e.Control.List(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			active = false
			for _, tk := range ts {
				active = active || tk.Status.Active()
			}
		}
		stop()
		wg.Wait()
		estimate(measured)
		time.Sleep(61 * time.Minute)
		estimate(stale)
	})
	return out
}

func ptr[T any](v T) *T { return &v }

// estimateServer answers every estimate request with its current body
// and records the requests' bodies.
type estimateServer struct {
	*httptest.Server
	mu       sync.Mutex
	answer   []byte
	requests []string
}

func newEstimateServer(t *testing.T) *estimateServer {
	s := &estimateServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		w.Write(s.answer)
	}))
	t.Cleanup(s.Close)
	return s
}

// dryRun prints the estimate answer as `tilecache TYP LAYER --dry-run`
// and as `tilecache estimate LAYER --type TYP` (which must print the
// same) and returns the output.
func (s *estimateServer) dryRun(t *testing.T, answer []byte, layer, typ, zoom string) string {
	t.Helper()
	s.mu.Lock()
	s.answer, s.requests = answer, nil
	s.mu.Unlock()
	flags := []string{"--gridset", "EPSG:4326", "--zoom", zoom, "--threads", "4", "--server", s.URL, "--user", "u", "--password", "p"}
	r := runCLI(t, cli.Env{}, append([]string{typ, layer, "--dry-run"}, flags...)...)
	if r.code != cli.ExitDone || r.stderr != "" {
		t.Fatalf("%s %s --dry-run: exit %d\n%s%s", typ, layer, r.code, r.stdout, r.stderr)
	}
	e := runCLI(t, cli.Env{}, append([]string{"estimate", layer, "--type", typ}, flags...)...)
	if e.code != cli.ExitDone || e.stdout != r.stdout {
		t.Errorf("estimate %s --type %s: exit %d, printed\n%s\nwant what --dry-run printed:\n%s", layer, typ, e.code, e.stdout, r.stdout)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, req := range s.requests {
		if !strings.HasPrefix(req, "POST /rest/estimate/"+layer+".json ") || !strings.Contains(req, `"type":"`+typ+`"`) {
			t.Errorf("request %q, want a POST of a %s of %s to /rest/estimate", req, typ, layer)
		}
	}
	return r.stdout
}

// artefacts are what a value printed with the wrong verb, a missing value
// or a division by zero would show.
var artefacts = []string{"%!", "<nil>", "NaN", "Inf"}

func checkArtefacts(t *testing.T, name, out string) {
	t.Helper()
	for _, a := range artefacts {
		if strings.Contains(out, a) {
			t.Errorf("%s: the output holds %q:\n%s", name, a, out)
		}
	}
}

// TestEstimatePrinted prints the engine's estimates of a seed, reseed and
// truncate of a layer of each source kind (test pattern, WMS, tile
// service), with nothing known of the layer yet, right after a seed (its
// render rate and tile sizes known) and an hour later (the rate
// forgotten), with and without prices, and checks every line.
func TestEstimatePrinted(t *testing.T) {
	var keys []estimateKey
	for _, state := range []estimateState{fresh, measured, stale} {
		for _, l := range []string{"pattern:world", "wms:world", "xyz:world"} {
			for _, typ := range []string{"seed", "reseed", "truncate"} {
				keys = append(keys, estimateKey{state, l, typ, [2]int{10, 10}})
			}
		}
	}
	// Cents and seconds, and years and millions.
	keys = append(keys, estimateKey{fresh, "pattern:world", "seed", [2]int{0, 0}}, estimateKey{measured, "pattern:world", "seed", [2]int{0, 0}},
		estimateKey{measured, "wms:world", "seed", [2]int{20, 21}})
	ests := engineEstimates(t, keys)
	srv := newEstimateServer(t)
	for _, k := range keys {
		name := string(k.state) + " " + k.typ + " " + k.layer
		zoom := strconv.Itoa(k.zoom[0]) + "-" + strconv.Itoa(k.zoom[1])
		got := srv.dryRun(t, ests[k], k.layer, k.typ, zoom)
		checkArtefacts(t, name, got)
		want, ok := wantEstimates[k]
		if !ok {
			t.Errorf("%s: printed\n%s", name, got)
			continue
		}
		if got != want {
			t.Errorf("%s: printed\n%s\nwant\n%s", name, got, want)
		}
		// The same estimate from a server that prices nothing.
		var est map[string]any
		if err := json.Unmarshal(ests[k], &est); err != nil {
			t.Fatal(err)
		}
		est["costUSD"] = nil
		unpriced, _ := json.Marshal(est)
		got = srv.dryRun(t, unpriced, k.layer, k.typ, zoom)
		checkArtefacts(t, name+" without prices", got)
		var lines []string
		for _, l := range strings.SplitAfter(want, "\n") {
			if !strings.HasPrefix(l, "AWS cost") && !strings.HasPrefix(l, "Lambda cost") {
				lines = append(lines, l)
			}
		}
		if w := strings.Join(lines, ""); got != w {
			t.Errorf("%s without prices: printed\n%s\nwant\n%s", name, got, w)
		}
	}
}

// The lines of what is unknown, and the notes of the engine.
const (
	bytesUnknown    = "bytes: unknown until the layer has tiles stored (the estimate takes their average size)"
	timeUnknown     = "time: unknown until a seed on this server measures the layer's render rate"
	lambdaUnknown   = "Lambda cost: unknown until a seed on this server measures the layer's render rate"
	noteNoRate      = "note: no render rate of the layer measured by this server in the last hour: time and Lambda cost unknown, and left out of the total"
	noteNoUpstream  = "note: the layer's source makes no upstream requests"
	noteUpperBounds = "note: a seed renders only metatiles with missing tiles, and looks for them only in levels that hold tiles: requests and PUTs are upper bounds"
	noteReseed      = "note: a reseed stores only tiles whose content changed: PUTs are an upper bound, and a reseed of unchanged tiles makes the listings and lookups only"
)

// table10 is the table of levels of z10 of EPSG:4326.
const table10 = `   zoom    tiles  metatiles
     10  2097152     131072
  total  2097152     131072`

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// wantEstimates is what each estimate prints. The measured render rate is
// 26.25 tiles/s a lane (42 tiles in 1.6 s), 105 tiles/s in 4 tasks; a
// truncate is one task. Upstream requests are none for the test pattern,
// one per metatile for a WMS and one per tile for a tile service.
var wantEstimates = map[estimateKey]string{
	{fresh, "pattern:world", "seed", [2]int{10, 10}}: lines(
		"SEED pattern:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 0, S3 PUTs 2097152, S3 reads 0, S3 listings 4097, S3 deletes 0, DynamoDB writes 6328, SQS messages 4",
		bytesUnknown,
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteNoUpstream,
		noteUpperBounds,
		noteNoRate),
	{fresh, "pattern:world", "reseed", [2]int{10, 10}}: lines(
		"RESEED pattern:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 0, S3 PUTs 2097152, S3 reads 0, S3 listings 4096, S3 deletes 0, DynamoDB writes 6328, SQS messages 4",
		bytesUnknown,
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteNoUpstream,
		noteReseed,
		noteNoRate),
	{fresh, "pattern:world", "truncate", [2]int{10, 10}}: lines(
		"TRUNCATE pattern:world, grid set EPSG:4326, image/png: 1 task",
		table10,
		"upstream requests 0, S3 PUTs 0, S3 reads 0, S3 listings 4096, S3 deletes 2097152, DynamoDB writes 6301, SQS messages 1",
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteNoUpstream,
		noteNoRate),
	{fresh, "wms:world", "seed", [2]int{10, 10}}: lines(
		"SEED wms:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 131072, S3 PUTs 2097152, S3 reads 0, S3 listings 4097, S3 deletes 0, DynamoDB writes 6328, SQS messages 4",
		bytesUnknown,
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteUpperBounds,
		noteNoRate),
	{fresh, "wms:world", "reseed", [2]int{10, 10}}: lines(
		"RESEED wms:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 131072, S3 PUTs 2097152, S3 reads 0, S3 listings 4096, S3 deletes 0, DynamoDB writes 6328, SQS messages 4",
		bytesUnknown,
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteReseed,
		noteNoRate),
	{fresh, "wms:world", "truncate", [2]int{10, 10}}: lines(
		"TRUNCATE wms:world, grid set EPSG:4326, image/png: 1 task",
		table10,
		"upstream requests 0, S3 PUTs 0, S3 reads 0, S3 listings 4096, S3 deletes 2097152, DynamoDB writes 6301, SQS messages 1",
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteNoRate),
	{fresh, "xyz:world", "seed", [2]int{10, 10}}: lines(
		"SEED xyz:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 2097152, S3 PUTs 2097152, S3 reads 0, S3 listings 4097, S3 deletes 0, DynamoDB writes 6328, SQS messages 4",
		bytesUnknown,
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteUpperBounds,
		noteNoRate),
	{fresh, "xyz:world", "reseed", [2]int{10, 10}}: lines(
		"RESEED xyz:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 2097152, S3 PUTs 2097152, S3 reads 0, S3 listings 4096, S3 deletes 0, DynamoDB writes 6328, SQS messages 4",
		bytesUnknown,
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteReseed,
		noteNoRate),
	{fresh, "xyz:world", "truncate", [2]int{10, 10}}: lines(
		"TRUNCATE xyz:world, grid set EPSG:4326, image/png: 1 task",
		table10,
		"upstream requests 0, S3 PUTs 0, S3 reads 0, S3 listings 4096, S3 deletes 2097152, DynamoDB writes 6301, SQS messages 1",
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteNoRate),
	{measured, "pattern:world", "seed", [2]int{10, 10}}: lines(
		"SEED pattern:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 0, S3 PUTs 2097152, S3 reads 0, S3 listings 4097, S3 deletes 0, DynamoDB writes 6328, SQS messages 68",
		"bytes about 8.6 GB (4096 bytes per tile on average)",
		"time about 5h33m at 105 tiles/s",
		"AWS cost about $12.35 at list prices of 2026-11 (S3 $10.51, DynamoDB under $0.01, SQS under $0.01, Lambda $1.84)",
		noteNoUpstream,
		noteUpperBounds),
	{measured, "pattern:world", "reseed", [2]int{10, 10}}: lines(
		"RESEED pattern:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 0, S3 PUTs 2097152, S3 reads 0, S3 listings 4096, S3 deletes 0, DynamoDB writes 6328, SQS messages 68",
		"bytes about 8.6 GB (4096 bytes per tile on average)",
		"time about 5h33m at 105 tiles/s",
		"AWS cost about $12.35 at list prices of 2026-11 (S3 $10.51, DynamoDB under $0.01, SQS under $0.01, Lambda $1.84)",
		noteNoUpstream,
		noteReseed),
	{measured, "pattern:world", "truncate", [2]int{10, 10}}: lines(
		"TRUNCATE pattern:world, grid set EPSG:4326, image/png: 1 task",
		table10,
		"upstream requests 0, S3 PUTs 0, S3 reads 0, S3 listings 4096, S3 deletes 2097152, DynamoDB writes 6301, SQS messages 267",
		"time about 22h12m at 26 tiles/s",
		"AWS cost about $12.35 at list prices of 2026-11 (S3 $10.51, DynamoDB under $0.01, SQS under $0.01, Lambda $1.84)",
		noteNoUpstream),
	{measured, "wms:world", "seed", [2]int{10, 10}}: lines(
		"SEED wms:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 131072, S3 PUTs 2097152, S3 reads 0, S3 listings 4097, S3 deletes 0, DynamoDB writes 6328, SQS messages 68",
		"bytes about 8.6 GB (4096 bytes per tile on average)",
		"time about 5h33m at 105 tiles/s",
		"AWS cost about $12.35 at list prices of 2026-11 (S3 $10.51, DynamoDB under $0.01, SQS under $0.01, Lambda $1.84)",
		noteUpperBounds),
	{measured, "wms:world", "reseed", [2]int{10, 10}}: lines(
		"RESEED wms:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 131072, S3 PUTs 2097152, S3 reads 0, S3 listings 4096, S3 deletes 0, DynamoDB writes 6328, SQS messages 68",
		"bytes about 8.6 GB (4096 bytes per tile on average)",
		"time about 5h33m at 105 tiles/s",
		"AWS cost about $12.35 at list prices of 2026-11 (S3 $10.51, DynamoDB under $0.01, SQS under $0.01, Lambda $1.84)",
		noteReseed),
	{measured, "wms:world", "truncate", [2]int{10, 10}}: lines(
		"TRUNCATE wms:world, grid set EPSG:4326, image/png: 1 task",
		table10,
		"upstream requests 0, S3 PUTs 0, S3 reads 0, S3 listings 4096, S3 deletes 2097152, DynamoDB writes 6301, SQS messages 267",
		"time about 22h12m at 26 tiles/s",
		"AWS cost about $12.35 at list prices of 2026-11 (S3 $10.51, DynamoDB under $0.01, SQS under $0.01, Lambda $1.84)"),
	{measured, "xyz:world", "seed", [2]int{10, 10}}: lines(
		"SEED xyz:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 2097152, S3 PUTs 2097152, S3 reads 0, S3 listings 4097, S3 deletes 0, DynamoDB writes 6328, SQS messages 68",
		"bytes about 8.6 GB (4096 bytes per tile on average)",
		"time about 5h33m at 105 tiles/s",
		"AWS cost about $12.35 at list prices of 2026-11 (S3 $10.51, DynamoDB under $0.01, SQS under $0.01, Lambda $1.84)",
		noteUpperBounds),
	{measured, "xyz:world", "reseed", [2]int{10, 10}}: lines(
		"RESEED xyz:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 2097152, S3 PUTs 2097152, S3 reads 0, S3 listings 4096, S3 deletes 0, DynamoDB writes 6328, SQS messages 68",
		"bytes about 8.6 GB (4096 bytes per tile on average)",
		"time about 5h33m at 105 tiles/s",
		"AWS cost about $12.35 at list prices of 2026-11 (S3 $10.51, DynamoDB under $0.01, SQS under $0.01, Lambda $1.84)",
		noteReseed),
	{measured, "xyz:world", "truncate", [2]int{10, 10}}: lines(
		"TRUNCATE xyz:world, grid set EPSG:4326, image/png: 1 task",
		table10,
		"upstream requests 0, S3 PUTs 0, S3 reads 0, S3 listings 4096, S3 deletes 2097152, DynamoDB writes 6301, SQS messages 267",
		"time about 22h12m at 26 tiles/s",
		"AWS cost about $12.35 at list prices of 2026-11 (S3 $10.51, DynamoDB under $0.01, SQS under $0.01, Lambda $1.84)"),
	{stale, "pattern:world", "seed", [2]int{10, 10}}: lines(
		"SEED pattern:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 0, S3 PUTs 2097152, S3 reads 0, S3 listings 4097, S3 deletes 0, DynamoDB writes 6328, SQS messages 4",
		"bytes about 8.6 GB (4096 bytes per tile on average)",
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteNoUpstream,
		noteUpperBounds,
		noteNoRate),
	{stale, "pattern:world", "reseed", [2]int{10, 10}}: lines(
		"RESEED pattern:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 0, S3 PUTs 2097152, S3 reads 0, S3 listings 4096, S3 deletes 0, DynamoDB writes 6328, SQS messages 4",
		"bytes about 8.6 GB (4096 bytes per tile on average)",
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteNoUpstream,
		noteReseed,
		noteNoRate),
	{stale, "pattern:world", "truncate", [2]int{10, 10}}: lines(
		"TRUNCATE pattern:world, grid set EPSG:4326, image/png: 1 task",
		table10,
		"upstream requests 0, S3 PUTs 0, S3 reads 0, S3 listings 4096, S3 deletes 2097152, DynamoDB writes 6301, SQS messages 1",
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteNoUpstream,
		noteNoRate),
	{stale, "wms:world", "seed", [2]int{10, 10}}: lines(
		"SEED wms:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 131072, S3 PUTs 2097152, S3 reads 0, S3 listings 4097, S3 deletes 0, DynamoDB writes 6328, SQS messages 4",
		"bytes about 8.6 GB (4096 bytes per tile on average)",
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteUpperBounds,
		noteNoRate),
	{stale, "wms:world", "reseed", [2]int{10, 10}}: lines(
		"RESEED wms:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 131072, S3 PUTs 2097152, S3 reads 0, S3 listings 4096, S3 deletes 0, DynamoDB writes 6328, SQS messages 4",
		"bytes about 8.6 GB (4096 bytes per tile on average)",
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteReseed,
		noteNoRate),
	{stale, "wms:world", "truncate", [2]int{10, 10}}: lines(
		"TRUNCATE wms:world, grid set EPSG:4326, image/png: 1 task",
		table10,
		"upstream requests 0, S3 PUTs 0, S3 reads 0, S3 listings 4096, S3 deletes 2097152, DynamoDB writes 6301, SQS messages 1",
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteNoRate),
	{stale, "xyz:world", "seed", [2]int{10, 10}}: lines(
		"SEED xyz:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 2097152, S3 PUTs 2097152, S3 reads 0, S3 listings 4097, S3 deletes 0, DynamoDB writes 6328, SQS messages 4",
		"bytes about 8.6 GB (4096 bytes per tile on average)",
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteUpperBounds,
		noteNoRate),
	{stale, "xyz:world", "reseed", [2]int{10, 10}}: lines(
		"RESEED xyz:world, grid set EPSG:4326, image/png: 4 tasks",
		table10,
		"upstream requests 2097152, S3 PUTs 2097152, S3 reads 0, S3 listings 4096, S3 deletes 0, DynamoDB writes 6328, SQS messages 4",
		"bytes about 8.6 GB (4096 bytes per tile on average)",
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteReseed,
		noteNoRate),
	{stale, "xyz:world", "truncate", [2]int{10, 10}}: lines(
		"TRUNCATE xyz:world, grid set EPSG:4326, image/png: 1 task",
		table10,
		"upstream requests 0, S3 PUTs 0, S3 reads 0, S3 listings 4096, S3 deletes 2097152, DynamoDB writes 6301, SQS messages 1",
		timeUnknown,
		"AWS cost about $10.51 at list prices of 2026-11 without Lambda (S3 $10.51, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteNoRate),
	{fresh, "pattern:world", "seed", [2]int{0, 0}}: lines(
		"SEED pattern:world, grid set EPSG:4326, image/png: 4 tasks",
		"   zoom  tiles  metatiles",
		"      0      2          1",
		"  total      2          1",
		"upstream requests 0, S3 PUTs 2, S3 reads 2, S3 listings 1, S3 deletes 0, DynamoDB writes 37, SQS messages 4",
		bytesUnknown,
		timeUnknown,
		"AWS cost under $0.01 at list prices of 2026-11 without Lambda (S3 under $0.01, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteNoUpstream,
		noteUpperBounds,
		noteNoRate),
	{measured, "pattern:world", "seed", [2]int{0, 0}}: lines(
		"SEED pattern:world, grid set EPSG:4326, image/png: 4 tasks",
		"   zoom  tiles  metatiles",
		"      0      2          1",
		"  total      2          1",
		"upstream requests 0, S3 PUTs 2, S3 reads 2, S3 listings 1, S3 deletes 0, DynamoDB writes 37, SQS messages 4",
		"bytes about 8.2 KB (4096 bytes per tile on average)",
		"time under a second at 105 tiles/s",
		"AWS cost under $0.01 at list prices of 2026-11 (S3 under $0.01, DynamoDB under $0.01, SQS under $0.01, Lambda under $0.01)",
		noteNoUpstream,
		noteUpperBounds),
	{measured, "wms:world", "seed", [2]int{20, 21}}: lines(
		"SEED wms:world, grid set EPSG:4326, image/png: 4 tasks",
		"   zoom           tiles     metatiles",
		"     20   2199023255552  137438953472",
		"     21   8796093022208  549755813888",
		"  total  10995116277760  687194767360",
		"upstream requests 687194767360, S3 PUTs 10995116277760, S3 reads 0, S3 listings 5068598280194, S3 deletes 0, DynamoDB writes 32985348870, SQS messages 349051312",
		"bytes about 45.0 PB (4096 bytes per tile on average)",
		"time about 3,318 years at 105 tiles/s",
		"AWS cost about $89,987,652.11 at list prices of 2026-11 (S3 $80,318,572.79, DynamoDB $20,615.84, SQS $418.86, Lambda $9,648,044.62)",
		noteUpperBounds),
}

// TestEstimatePrintedFromPartialAnswers: an answer without some fields (a
// server of another version) prints what it has and says what it lacks.
func TestEstimatePrintedFromPartialAnswers(t *testing.T) {
	srv := newEstimateServer(t)
	for _, c := range []struct{ answer, want string }{
		{`{}`, lines(
			"SEED demo:world: 0 tasks",
			"   zoom  tiles  metatiles",
			"  total      0          0",
			"upstream requests 0, S3 PUTs 0, S3 reads 0, S3 listings 0, S3 deletes 0, DynamoDB writes 0, SQS messages 0",
			bytesUnknown,
			timeUnknown)},
		{`{"type":"SEED","tasks":1,"tiles":5,"metatiles":1,"levels":[{"zoom":1,"tiles":5}],"costUSD":{"s3":0.25,"sqs":0}}`, lines(
			"SEED demo:world: 1 task",
			"   zoom  tiles  metatiles",
			"      1      5          0",
			"  total      5          1",
			"upstream requests 0, S3 PUTs 0, S3 reads 0, S3 listings 0, S3 deletes 0, DynamoDB writes 0, SQS messages 0",
			bytesUnknown,
			timeUnknown,
			"AWS cost about $0.25 at list prices without Lambda (S3 $0.25, SQS $0.00)",
			lambdaUnknown)},
	} {
		got := srv.dryRun(t, []byte(c.answer), "demo:world", "seed", "1")
		checkArtefacts(t, c.answer, got)
		if got != c.want {
			t.Errorf("answer %s: printed\n%s\nwant\n%s", c.answer, got, c.want)
		}
	}
}
