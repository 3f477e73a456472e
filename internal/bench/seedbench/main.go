// Command seedbench seeds a fixed job through the whole local program
// (REST request, engine, lane workers, tile and task stores) and prints
// tiles per second, the seeder's CPU seconds and the process's peak RSS.
//
//	go run ./internal/bench/seedbench [-zoom 7] [-threads 4] [-runs 3] [-backend aws] [-wms URL]
//
// The job is EPSG:900913 levels 0..zoom of the whole world, 4×4 metatiles,
// PNG. It is drawn by the built-in test pattern, or with -wms by a WMS
// (layers hillshade,polygons,lines,points of infra/wms); then the upstream
// alone is measured too, in the same run: 1024² GetMaps per second at the
// seed's upstream concurrency. -wms-pid and -store-pid name processes
// (e.g. lighttpd, whose FastCGI children are counted with it, and MinIO)
// whose CPU seconds during each run are printed beside the seeder's.
//
// With -backend aws it runs against the stack of `eval "$(make -s devstack)"`
// (a fresh table and queue per run, a fresh key prefix in the bucket) and
// also prints the S3 requests, DynamoDB writes and SQS messages per 1,000
// tiles, as counted by the adapters.
//
// With -export it then exports the seeded levels to PMTiles (a task) and
// prints the export's rate and peak RSS; -memprofile FILE adds a heap
// profile taken at the export's peak heap (go tool pprof
// -sample_index=inuse_space).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/app"
	"tilecache/internal/auth"
	"tilecache/internal/bench/benchenv"
	"tilecache/internal/config"
	"tilecache/internal/tilestore"
)

// bench is one benchmark's settings.
type bench struct {
	zoom, threads, runs int
	backend             string
	wms                 string // WMS URL, or "" for the test pattern
	upstream            int    // the WMS layer's maxConcurrent
	upstreamFormat      string // the WMS layer's source format (GetMap FORMAT)
	format              string // the tile format seeded (with -wms)
	wmsLayers           string // LAYERS of the GetMaps
	wmsPID, storePID    int
	measure             string // "both", "seed" or "upstream" (with -wms)
	checkpoint          string // TILECACHE_CHECKPOINT_INTERVAL, "" for the default
	then                string // "", "truncate", "reseed" or "seed-holes": a second request over the seeded bounds, measured alone
	thenBbox            string // its bounds (EPSG:900913 metres), or the whole world
	export              bool   // after the seed (before -then), an export of it to PMTiles beside a listing and GET of the same objects
	bbox                string // the seed's bounds (EPSG:900913 metres), or the whole world
	memprofile          string // with -export: where to write a heap profile taken at the export's peak heap
}

func main() {
	var b bench
	flag.IntVar(&b.zoom, "zoom", 7, "seed EPSG:900913 levels 0..zoom of the whole world")
	flag.IntVar(&b.threads, "threads", runtime.NumCPU()*2, "threadCount of the request")
	flag.IntVar(&b.runs, "runs", 3, "repetitions; the median is reported")
	flag.StringVar(&b.backend, "backend", "embedded", "embedded or aws")
	flag.StringVar(&b.wms, "wms", "", "seed from this WMS instead of the test pattern")
	flag.IntVar(&b.upstream, "upstream", 4, "with -wms: requests in flight to the WMS at most (the layer's maxConcurrent)")
	flag.StringVar(&b.upstreamFormat, "upstream-format", "image/png", "with -wms: the FORMAT of the GetMaps (image/png, or e.g. image/tiff); the tiles stay PNG")
	flag.StringVar(&b.format, "format", "image/png", "with -wms: the tile format, image/png or application/vnd.mapbox-vector-tile (one GetMap per tile in that format)")
	flag.StringVar(&b.wmsLayers, "wms-layers", "hillshade,polygons,lines,points", "with -wms: LAYERS of the GetMaps")
	flag.IntVar(&b.wmsPID, "wms-pid", 0, "count the CPU of this process and its children as the WMS's")
	flag.IntVar(&b.storePID, "store-pid", 0, "count the CPU of this process as the object store's")
	flag.StringVar(&b.measure, "measure", "both", "with -wms: both (the seed and the upstream alone), seed or upstream")
	flag.StringVar(&b.checkpoint, "checkpoint", "", "TILECACHE_CHECKPOINT_INTERVAL of the seeding program (default: the program's)")
	flag.StringVar(&b.then, "then", "", "after the seed, run and measure a truncate, reseed or seed-holes (a seed after one tile of every other metatile was deleted) of the same levels, "+
		"or an export of them to PMTiles (export; beside a listing and GET of the same objects, 16 at a time)")
	flag.StringVar(&b.bbox, "bbox", "", "bounds of the seed, minx,miny,maxx,maxy in EPSG:900913 metres (default: the whole world), e.g. a corner of it so that deep levels stay small")
	flag.BoolVar(&b.export, "export", false, "after the seed (before -then), measure an export of the seeded levels to PMTiles beside a listing and GET of the same objects, 16 at a time")
	flag.StringVar(&b.thenBbox, "then-bbox", "", "bounds of -then, minx,miny,maxx,maxy in EPSG:900913 metres (default: the whole world)")
	flag.StringVar(&b.memprofile, "memprofile", "", "with -export or -then export: write a heap profile taken at the export's peak heap to this file")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole benchmark to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "seedbench:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	switch b.measure {
	case "both", "seed", "upstream":
	default:
		fmt.Fprintf(os.Stderr, "seedbench: -measure %q is not one of both, seed, upstream\n", b.measure)
		os.Exit(2)
	}
	if b.measure == "upstream" && b.wms == "" {
		fmt.Fprintln(os.Stderr, "seedbench: -measure upstream needs -wms")
		os.Exit(2)
	}
	if err := b.run(); err != nil {
		fmt.Fprintln(os.Stderr, "seedbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// result is one run's figures.
type result struct {
	tiles              int64
	bytes              int64 // stored, listed after the seed
	wall               time.Duration
	cpu, wmsCPU, stCPU float64 // seconds
	costs              string
	thenRate           float64 // tiles/s of the -then request
	thenCosts          string
}

func (b bench) run() error {
	var rates, cpus, wmsCPUs, stCPUs, upRates, thenRates []float64
	var thenCosts string
	var tiles, stored int64
	for i := range b.runs {
		if b.wms != "" && b.measure != "seed" {
			up, err := b.upstreamRate()
			if err != nil {
				return err
			}
			upRates = append(upRates, up)
			fmt.Printf("run %d: upstream alone %.1f GetMaps/s of 1024² at concurrency %d (≙ %.0f tiles/s)\n", i+1, up, b.upstream, up*16)
			if b.measure == "upstream" {
				continue
			}
		}
		r, err := b.once()
		if err != nil {
			return err
		}
		tiles, stored = r.tiles, r.bytes
		rates = append(rates, float64(r.tiles)/r.wall.Seconds())
		if b.then != "" {
			thenRates, thenCosts = append(thenRates, r.thenRate), r.thenCosts
		}
		cpus, wmsCPUs, stCPUs = append(cpus, r.cpu), append(wmsCPUs, r.wmsCPU), append(stCPUs, r.stCPU)
		fmt.Printf("run %d: %d tiles in %v (%.0f tiles/s), CPU s: seeder %.1f (%.2f ms a tile), WMS %.1f, store %.1f, %d bytes stored%s\n",
			i+1, r.tiles, r.wall.Round(time.Millisecond), rates[i], r.cpu, r.cpu*1000/float64(max(r.tiles, 1)), r.wmsCPU, r.stCPU, r.bytes, r.costs)
	}
	if b.measure == "upstream" {
		fmt.Printf("seedbench: upstream alone median %.1f GetMaps/s (≙ %.0f tiles/s)\n", median(upRates), median(upRates)*16)
		return nil
	}
	src := "test pattern"
	if b.wms != "" {
		src = "WMS " + b.wms + " (" + b.upstreamFormat + ")"
		if b.format != "image/png" {
			src = "WMS " + b.wms + " (" + b.format + ")"
		}
	}
	fmt.Printf("seedbench: %s backend, %s, EPSG:900913 z0-%d, %d tiles, threadCount %d, GOMAXPROCS %d: median %.0f tiles/s, "+
		"CPU s seeder %.1f (%.2f ms a tile) / WMS %.1f / store %.1f, %d bytes stored, peak RSS %s\n",
		b.backend, src, b.zoom, tiles, b.threads, runtime.GOMAXPROCS(0), median(rates), median(cpus), median(cpus)*1000/float64(max(tiles, 1)),
		median(wmsCPUs), median(stCPUs), stored, benchenv.Status("VmHWM"))
	if len(thenRates) > 0 {
		fmt.Printf("seedbench: then %s median %.0f tiles/s%s\n", b.then, median(thenRates), thenCosts)
	}
	if len(upRates) > 0 {
		fmt.Printf("seedbench: upstream alone median %.1f GetMaps/s (≙ %.0f tiles/s); seed/upstream-alone %.2f",
			median(upRates), median(upRates)*16, median(rates)/(median(upRates)*16))
		if b.wmsPID > 0 { // without it the WMS's CPU is unknown
			fmt.Printf("; (seeder+store CPU)/WMS CPU %.2f", (median(cpus)+median(stCPUs))/max(median(wmsCPUs), 1e-9))
		}
		fmt.Println()
	}
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

const wmsLayer = `
layers:
  - name: bench:wms
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png, application/vnd.mapbox-vector-tile]
    metatiling: [4, 4]
    source:
      type: wms
      url: %s
      layers: %s
      maxConcurrent: %d
      format: %s
      allowPrivateUpstream: true  # the benchmark's WMS runs on this host
`

func (b bench) once() (result, error) {
	dir, err := os.MkdirTemp("", "seedbench-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	users := filepath.Join(dir, "users")
	if err := auth.AddAccount(users, "bench", "bench", bcrypt.MinCost); err != nil {
		return result{}, err
	}
	env := map[string]string{"TILECACHE_DATA": dir, "TILECACHE_USERS": users, "TILECACHE_SEED_THREADS": fmt.Sprint(max(b.threads, 16))}
	if b.checkpoint != "" {
		env["TILECACHE_CHECKPOINT_INTERVAL"] = b.checkpoint
	}
	layerName := "demo:world"
	if b.wms != "" {
		layers := filepath.Join(dir, "layers.yaml")
		if err := os.WriteFile(layers, fmt.Appendf(nil, wmsLayer, b.wms, b.wmsLayers, b.upstream, b.upstreamFormat), 0o644); err != nil {
			return result{}, err
		}
		env["TILECACHE_LAYERS"], layerName = layers, "bench:wms"
	}
	if b.backend == "aws" {
		cleanup, err := benchenv.AWSResources("seedbench", env)
		if err != nil {
			return result{}, err
		}
		defer cleanup()
	}
	// The AWS SDK's variables (the local stack's endpoints and
	// credentials) come from the environment, as in a deployment.
	cfg, err := config.Load(func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, true
		}
		if strings.HasPrefix(k, "AWS_") {
			return os.LookupEnv(k)
		}
		return "", false
	})
	if err != nil {
		return result{}, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := app.New(ctx, cfg, log)
	if err != nil {
		return result{}, err
	}
	defer l.Close()
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	srv := httptest.NewServer(l.Handler)
	defer srv.Close()

	cpu0, wms0, st0 := benchenv.SelfCPU(), benchenv.TreeCPU(b.wmsPID), benchenv.TreeCPU(b.storePID)
	start := time.Now()
	format := "image/png"
	if b.wms != "" {
		format = b.format
	}
	seedBounds := ""
	if b.bbox != "" {
		seedBounds = `,"bounds":{"coords":{"double":[` + b.bbox + `]}}`
	}
	body := fmt.Sprintf(`{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":%d,"format":%q,"threadCount":%d%s}}`, b.zoom, format, b.threads, seedBounds)
	rows, err := call(srv.URL+"/rest/seed/"+layerName+".json", body)
	if err != nil {
		return result{}, err
	}
	var total int64
	for _, r := range rows {
		total += r[1]
	}
	for {
		rows, err := call(srv.URL+"/rest/seed.json", "")
		if err != nil {
			return result{}, err
		}
		active := false
		for _, r := range rows {
			if r[4] == 0 || r[4] == 1 {
				active = true
			}
			if r[4] == -1 {
				return result{}, fmt.Errorf("task %d aborted", r[3])
			}
		}
		if !active {
			break
		}
		time.Sleep(pollWait(rows))
	}
	r := result{tiles: total, wall: time.Since(start)}
	r.cpu, r.wmsCPU, r.stCPU = benchenv.SelfCPU()-cpu0, benchenv.TreeCPU(b.wmsPID)-wms0, benchenv.TreeCPU(b.storePID)-st0
	r.costs = costs(l, total)
	err = l.Tiles.List(ctx, tilestore.LayerPrefix(env["TILECACHE_KEY_PREFIX"], layerName), func(o tilestore.Object) error {
		r.bytes += o.Size
		return nil
	})
	if err != nil {
		return result{}, fmt.Errorf("list the seeded tiles: %w", err)
	}
	if b.export {
		if _, _, err := b.exportFollowUp(srv.URL, layerName, l, env["TILECACHE_KEY_PREFIX"]); err != nil {
			return result{}, err
		}
	}
	if b.then != "" {
		if r.thenRate, r.thenCosts, err = b.followUp(srv.URL, layerName, l, env["TILECACHE_KEY_PREFIX"]); err != nil {
			return result{}, err
		}
	}
	cancel()
	<-done
	return r, nil
}

// followUp runs the -then request over the seeded levels and prints its
// rate and its requests per 1,000 tiles (counted from its start).
func (b bench) followUp(base, layerName string, l *app.Program, keyPrefix string) (float64, string, error) {
	if b.then == "export" {
		return b.exportFollowUp(base, layerName, l, keyPrefix)
	}
	typ := b.then
	if b.then == "seed-holes" {
		n, err := punchHoles(l, keyPrefix, layerName)
		if err != nil {
			return 0, "", err
		}
		fmt.Printf("holes: deleted %d tiles, one in every other metatile of levels 2 and up\n", n)
		typ = "seed"
	}
	before := snapshot(l)
	bounds := ""
	if b.thenBbox != "" {
		bounds = `,"bounds":{"coords":{"double":[` + b.thenBbox + `]}}`
	}
	body := fmt.Sprintf(`{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":%d,"format":"image/png","type":%q,"threadCount":%d%s}}`,
		b.zoom, typ, b.threads, bounds)
	start := time.Now()
	rows, err := call(base+"/rest/seed/"+layerName+".json", body)
	if err != nil {
		return 0, "", err
	}
	var total int64
	for _, r := range rows {
		total += r[1]
	}
	for {
		rows, err := call(base+"/rest/seed.json", "")
		if err != nil {
			return 0, "", err
		}
		active := false
		for _, r := range rows {
			active = active || r[4] == 0 || r[4] == 1
		}
		if !active {
			break
		}
		time.Sleep(pollWait(rows))
	}
	wall := time.Since(start)
	rate := float64(total) / wall.Seconds()
	costs := since(l, before, total)
	fmt.Printf("then %s: %d tile positions in %v (%.0f tiles/s)%s\n", b.then, total, wall.Round(time.Millisecond), rate, costs)
	return rate, costs, nil
}

// pollWait is how long to wait before polling the status again, as a
// client that reads the time remaining would: a quarter of the longest
// estimate, between 100 ms and a second. Polls are few (each is a query of
// the task store, whose CPU would show in the figures) and the wall time is
// late by about 100 ms when the estimate holds.
func pollWait(rows [][5]int64) time.Duration {
	left := int64(-1) // seconds; -1 while no task has an estimate
	for _, r := range rows {
		if r[4] == 0 || r[4] == 1 {
			left = max(left, r[2])
		}
	}
	if left < 0 {
		return time.Second / 4
	}
	return min(max(time.Duration(left)*time.Second/4, 100*time.Millisecond), time.Second)
}

func call(url, body string) ([][5]int64, error) {
	method := http.MethodGet
	if body != "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth("bench", "bench")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, b)
	}
	var doc struct {
		Rows [][5]int64 `json:"long-array-array"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("decode %s: %w", b, err)
	}
	return doc.Rows, nil
}

// punchHoles deletes, behind the program's back, one tile (the second of
// the second row, not the lower-left one) of every other 4×4 metatile of
// levels 2 and up of the seeded tile set: every other metatile partly
// stored, as an expiry or a truncate by geometry leaves them.
func punchHoles(l *app.Program, keyPrefix, layerID string) (int, error) {
	ctx := context.Background()
	var holes []string
	err := l.Tiles.List(ctx, tilestore.LayerPrefix(keyPrefix, layerID), func(o tilestore.Object) error {
		if _, z, x, y, ok := tilestore.ParseLayerKey(keyPrefix, layerID, o.Key); ok && z >= 2 && (x/4+y/4)%2 == 0 && x%4 == 1 && y%4 == 1 {
			holes = append(holes, o.Key)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("list the seeded tiles: %w", err)
	}
	for start := 0; start < len(holes); start += tilestore.DeleteBatch {
		if _, err := l.Tiles.Delete(ctx, holes[start:min(start+tilestore.DeleteBatch, len(holes))]); err != nil {
			return 0, fmt.Errorf("delete the holes: %w", err)
		}
	}
	return len(holes), nil
}
