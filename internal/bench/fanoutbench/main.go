// Command fanoutbench measures how seeding scales with worker processes
// on the local AWS stack (MinIO, DynamoDB Local, the SQS server):
//
//	fanoutbench -wms URL [-workers 1,2,4,8,16] [-delay 300ms] [-cap 8]
//	fanoutbench -seed 1000000 [-seed-workers 4]
//
// Each run gets a fresh table, queue and key prefix. The API program runs
// in this process (it takes the seed request, answers the status and the
// usage report, works no lane); the workers are processes of their own,
// this program run with -worker: the program's worker path (app.NewWorker
// and Program.Run) consuming the lane queue with TILECACHE_WORKERS lane
// workers each (1 by default, as one Lambda invocation works one lane).
//
// Scaling (-wms): a job of the same size per worker (EPSG:900913 level
// -zoom, the whole width, -rows-per-worker tile rows per worker, 4×4
// metatiles) from the WMS behind a proxy that holds every GetMap for
// -delay (a distant upstream) and counts the GetMaps in flight at its side.
// The layer's maxConcurrent is -cap, the global upstream cap: the task
// store runs at most that many of the layer's lanes at once, across every
// process. Printed per worker count: tiles/s, scaling efficiency (tiles/s
// ÷ (workers × tiles/s of one)), the peak of GetMaps in flight, DynamoDB
// writes per 1,000 tiles, the CPU of the workers and the WMS, how busy the
// machine was; written as JSON and an SVG plot under -out.
//
// Seed (-seed N): N tiles (a multiple of 4,000, at most 1,024,000: level
// 10, 1,000 columns, whole metatile rows) of the test pattern through SQS with -seed-workers
// workers; checks that the job is DONE, that every tile is stored (a
// listing) and that the usage equals the listed bytes, and prints the rate.
//
// Everything listens on 127.0.0.1; every wait is bounded (-timeout per run).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-worker" {
		if err := worker(); err != nil {
			fmt.Fprintln(os.Stderr, "fanoutbench worker:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.workers, "workers", "1,2,4,8,16", "worker counts to measure")
	flag.StringVar(&o.wms, "wms", "", "the WMS to seed from (scaling)")
	flag.IntVar(&o.wmsPID, "wms-pid", 0, "count the CPU of this process and its children as the WMS's")
	flag.StringVar(&o.stackPIDs, "stack-pids", "", "count the CPU of these processes (comma-separated: MinIO, DynamoDB Local, the SQS server) as the AWS stack's")
	flag.StringVar(&o.wmsLayers, "wms-layers", "polygons", "LAYERS of the GetMaps")
	flag.DurationVar(&o.delay, "delay", 300*time.Millisecond, "time the proxy holds every GetMap")
	flag.IntVar(&o.cap, "cap", 8, "the layer's maxConcurrent: GetMaps in flight at most, across every worker")
	flag.IntVar(&o.zoom, "zoom", 8, "the level seeded (scaling)")
	flag.IntVar(&o.rowsPerWorker, "rows-per-worker", 8, "tile rows of the job per worker (scaling; the whole width of the level)")
	flag.IntVar(&o.lanesPerWorker, "lanes-per-worker", 1, "TILECACHE_WORKERS of each worker process; the request's threadCount is workers × this")
	flag.IntVar(&o.runs, "runs", 1, "passes over the worker counts (interleaved); medians are reported")
	flag.Int64Var(&o.seed, "seed", 0, "instead of scaling: seed this many test-pattern tiles through SQS")
	flag.IntVar(&o.seedWorkers, "seed-workers", 4, "worker processes of -seed")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "longest wait for one run's seed")
	flag.Int64Var(&o.blockSize, "block-size", 1, "diskBlockSize of the usage count (1: every byte, so that the check is exact to the byte)")
	flag.StringVar(&o.out, "out", ".devstack/bench-fanout", "directory of the JSON results and the SVG plot")
	flag.StringVar(&o.label, "label", "run", "name of the run (fanout-<label>.json)")
	replot := flag.String("plot", "", "only draw the plot of this earlier result (fanout-<label>.json) into -out")
	flag.Parse()
	if *replot != "" {
		if err := redraw(*replot, o.out); err != nil {
			fmt.Fprintln(os.Stderr, "fanoutbench:", err)
			os.Exit(1)
		}
		return
	}
	for _, f := range strings.Split(o.stackPIDs, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			o.stack = append(o.stack, n)
		}
	}
	var err error
	if o.seed > 0 {
		err = o.seedRun()
	} else {
		err = o.scaling()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fanoutbench:", err)
		os.Exit(1)
	}
}

type options struct {
	workers, stackPIDs       string
	stack                    []int
	wms, wmsLayers           string
	wmsPID                   int
	delay                    time.Duration
	cap, zoom, rowsPerWorker int
	lanesPerWorker, runs     int
	seed                     int64
	seedWorkers              int
	timeout                  time.Duration
	blockSize                int64
	out, label               string
}

// result is what a run writes as JSON.
type result struct {
	Label    string    `json:"label"`
	Kind     string    `json:"kind"` // scaling or seed
	Date     time.Time `json:"date"`
	Source   string    `json:"source"`
	Delay    string    `json:"delay,omitempty"`
	Cap      int       `json:"cap,omitempty"`
	GOMAXPRO int       `json:"gomaxprocs"`
	CPUs     int       `json:"cpus"`
	Rows     []row     `json:"rows"`
}

const wmsLayer = `
layers:
  - name: bench:wms
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [4, 4]
    source:
      type: wms
      url: %s
      layers: %s
      maxConcurrent: %d
      allowPrivateUpstream: true  # the benchmark's proxy runs on this host
`

const patternLayer = `
layers:
  - name: bench:pattern
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: testpattern}
`

// worldHalf is half the width of EPSG:900913's world, in metres.
const worldHalf = 20037508.342789244

// seedBody is a request for level z, the tiles of columns 0..cols-1 and
// rows 0..rows-1 (counted from the bottom), lanes lanes: bounds 1 m inside
// those tiles' edges.
func seedBody(z, cols, rows, lanes int) string {
	res := 2 * worldHalf / float64(int64(1)<<z)
	return fmt.Sprintf(`{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":%d,"zoomStop":%d,"format":"image/png","threadCount":%d,`+
		`"bounds":{"coords":{"double":[%.3f,%.3f,%.3f,%.3f]}}}}`,
		z, z, lanes, -worldHalf+1, -worldHalf+1, -worldHalf+float64(cols)*res-1, -worldHalf+float64(rows)*res-1)
}

func (o options) scaling() error {
	if o.wms == "" {
		return fmt.Errorf("-wms is needed (or -seed)")
	}
	var counts []int
	for _, f := range strings.Split(o.workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-workers: %q is not a positive count", f)
		}
		counts = append(counts, n)
	}
	if o.zoom < 2 || o.zoom > 12 || o.rowsPerWorker < 1 || o.rowsPerWorker%4 != 0 || slices.Max(counts)*o.rowsPerWorker > 1<<o.zoom {
		return fmt.Errorf("-zoom %d with -rows-per-worker %d (whole 4×4 metatiles): the job of %d workers does not fit the level", o.zoom, o.rowsPerWorker, slices.Max(counts))
	}
	proxy, err := newDelayProxy(o.wms, o.delay)
	if err != nil {
		return err
	}
	defer proxy.close()
	fmt.Printf("fanoutbench: WMS %s (LAYERS=%s) behind a %v delay, maxConcurrent %d, level %d, %d×%d tiles a worker in 4×4 metatiles, %d lane(s) a worker, %d CPUs, load %s\n",
		o.wms, o.wmsLayers, o.delay, o.cap, o.zoom, 1<<o.zoom, o.rowsPerWorker, o.lanesPerWorker, runtime.NumCPU(), loadavg())
	byCount := map[int][]row{}
	for pass := range o.runs {
		for _, n := range counts {
			j := job{workers: n, lanesPerWorker: o.lanesPerWorker, layer: "bench:wms", cap: o.cap, proxy: proxy, wmsPID: o.wmsPID, stackPIDs: o.stack,
				layers:  fmt.Sprintf(wmsLayer, proxy.url, o.wmsLayers, o.cap),
				body:    seedBody(o.zoom, 1<<o.zoom, n*o.rowsPerWorker, n*o.lanesPerWorker),
				timeout: o.timeout, blockSize: o.blockSize}
			r, err := j.run()
			if err != nil {
				return fmt.Errorf("%d workers: %w", n, err)
			}
			byCount[n] = append(byCount[n], r)
			fmt.Printf("pass %d, %2d workers: %s %d tiles in %.1f s (%.1f tiles/s), peak GetMaps %d (cap %d), %d GetMaps, DynamoDB writes %.2f / 1,000 tiles, stored %d, usage %d tiles / %d B vs listed %d B, machine busy %.0f %% (AWS stack idle %.2f cores), load %s\n",
				pass+1, n, r.State, r.Tiles, r.Seconds, r.TilesPerSec, r.PeakGetMaps, o.cap, r.GetMaps, r.WritesPer1000, r.Stored, r.UsageTiles, r.UsageBytes, r.StoredBlocks, 100*r.MachineBusy, r.StackIdle, loadavg())
		}
	}
	res := result{Label: o.label, Kind: "scaling", Date: time.Now().UTC(), Source: "WMS LAYERS=" + o.wmsLayers, Delay: o.delay.String(), Cap: o.cap,
		GOMAXPRO: runtime.GOMAXPROCS(0), CPUs: runtime.NumCPU()}
	for _, n := range counts {
		res.Rows = append(res.Rows, medianRow(byCount[n]))
	}
	one := 0.0
	for _, r := range res.Rows {
		if r.Workers == 1 {
			one = r.TilesPerSec
		}
	}
	for i := range res.Rows {
		if one > 0 {
			res.Rows[i].Efficiency = res.Rows[i].TilesPerSec / (float64(res.Rows[i].Workers) * one)
		}
	}
	printTable(res)
	return o.save(res, true)
}

// medianRow is the run of median tiles/s among rows (the first of two middles).
func medianRow(rows []row) row {
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b row) int {
		switch {
		case a.TilesPerSec < b.TilesPerSec:
			return -1
		case a.TilesPerSec > b.TilesPerSec:
			return 1
		}
		return 0
	})
	return rows[(len(rows)-1)/2]
}

func printTable(res result) {
	fmt.Printf("\n| workers | lanes | tiles | s | tiles/s | efficiency | peak GetMaps (cap %d) | DynamoDB writes / 1,000 tiles | CPU ms / tile: workers / WMS / AWS stack (less idle) / API | machine busy | stored = tiles | usage exact |\n", res.Cap)
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|")
	for _, r := range res.Rows {
		ms := func(s float64) float64 { return 1000 * s / float64(max(r.Tiles, 1)) }
		fmt.Printf("| %d | %d | %d | %.1f | %.1f | %.2f | %d | %.2f | %.2f / %.2f / %.2f / %.2f | %.0f %% | %s | %s |\n",
			r.Workers, r.Lanes, r.Tiles, r.Seconds, r.TilesPerSec, r.Efficiency, r.PeakGetMaps, r.WritesPer1000,
			ms(r.WorkerCPU), ms(r.WMSCPU), ms(r.StackCPU), ms(r.APICPU), 100*r.MachineBusy,
			yesNo(r.Stored == r.Tiles && r.State == "DONE"), yesNo(r.UsageBytes == r.StoredBlocks && r.UsageTiles == r.Stored && !r.RecountPending))
	}
	fmt.Println()
	for _, r := range res.Rows {
		fmt.Printf("%d workers: DynamoDB writes / 1,000 tiles by operation: %s; S3 PUTs %.1f, SQS messages %.2f / 1,000 tiles\n",
			r.Workers, byOp(r.WritesByOp), r.S3PutsPer1000, r.SQSPer1000)
	}
}

func byOp(ops map[string]float64) string {
	names := make([]string, 0, len(ops))
	for k := range ops {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		if ops[a] != ops[b] {
			if ops[a] > ops[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.2f", n, ops[n])
	}
	return strings.Join(parts, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// seedRun seeds o.seed test-pattern tiles with o.seedWorkers workers.
func (o options) seedRun() error {
	// Rows in whole metatiles: a seed covers the metatiles its bounds touch.
	if o.seed%4000 != 0 || o.seed > 1024*1000 {
		return fmt.Errorf("-seed %d: a multiple of 4,000 up to 1,024,000 (level 10, 1,000 columns, rows in whole 4×4 metatiles)", o.seed)
	}
	rows := int(o.seed / 1000)
	fmt.Printf("fanoutbench: %d test-pattern tiles (EPSG:900913 level 10, 1,000 × %d, 4×4 metatiles) through SQS, %d workers, %d lane(s) each, %d CPUs, load %s\n",
		o.seed, rows, o.seedWorkers, o.lanesPerWorker, runtime.NumCPU(), loadavg())
	j := job{workers: o.seedWorkers, lanesPerWorker: o.lanesPerWorker, layer: "bench:pattern", layers: patternLayer,
		body: seedBody(10, 1000, rows, o.seedWorkers*o.lanesPerWorker), timeout: o.timeout, blockSize: o.blockSize, stackPIDs: o.stack}
	r, err := j.run()
	if err != nil {
		return err
	}
	res := result{Label: o.label, Kind: "seed", Date: time.Now().UTC(), Source: "test pattern", GOMAXPRO: runtime.GOMAXPROCS(0), CPUs: runtime.NumCPU(), Rows: []row{r}}
	stored, exact := r.Stored == r.Tiles && r.Tiles == o.seed, r.UsageBytes == r.StoredBlocks && r.UsageTiles == r.Stored && !r.RecountPending
	fmt.Printf("seed: %s (%d tiles done by the last status), %d tiles in %.1f s (%.1f tiles/s); stored %d of %d (%s); usage %d tiles, %d B; listed %d tiles, %d B (%d B in %d-byte blocks): %s; recount pending %v\n",
		r.State, r.Done, r.Tiles, r.Seconds, r.TilesPerSec, r.Stored, r.Tiles, yesNo(stored), r.UsageTiles, r.UsageBytes, r.Stored, r.StoredBytes, r.StoredBlocks, o.blockSize,
		map[bool]string{true: "exact", false: "NOT exact"}[exact], r.RecountPending)
	fmt.Printf("seed: CPU s: workers %.1f (%.2f ms a tile), AWS stack %.1f (less %.2f cores idle), API %.1f; machine busy %.0f %%, DynamoDB writes %.2f / 1,000 tiles (%s), S3 PUTs %.1f, SQS messages %.2f / 1,000 tiles, worker peak RSS %.1f MiB\n",
		r.WorkerCPU, 1000*r.WorkerCPU/float64(max(r.Stored, 1)), r.StackCPU, r.StackIdle, r.APICPU, 100*r.MachineBusy, r.WritesPer1000, byOp(r.WritesByOp), r.S3PutsPer1000, r.SQSPer1000, r.WorkerPeakRSS)
	if err := o.save(res, false); err != nil {
		return err
	}
	if r.State != "DONE" || !stored || !exact {
		return fmt.Errorf("the seed is %s, %d of %d tiles stored, usage %s", r.State, r.Stored, o.seed, map[bool]string{true: "exact", false: "not exact"}[exact])
	}
	return nil
}

// save writes the result as JSON (fanout-<label>.json, or seed-<label>.json)
// and, for scaling, the plot.
func (o options) save(res result, plot bool) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	name := "fanout-" + o.label + ".json"
	if !plot {
		name = "seed-" + o.label + ".json"
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, name), append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Println("fanoutbench: wrote", filepath.Join(o.out, name))
	if !plot {
		return nil
	}
	svg := filepath.Join(o.out, "fanout-scaling.svg")
	if err := os.WriteFile(svg, []byte(plotScaling(res)), 0o644); err != nil {
		return err
	}
	fmt.Println("fanoutbench: wrote", svg)
	return nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// redraw draws the plot of an earlier result into dir.
func redraw(file, dir string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var res result
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("decode %s: %w", file, err)
	}
	svg := filepath.Join(dir, "fanout-scaling.svg")
	if err := os.WriteFile(svg, []byte(plotScaling(res)), 0o644); err != nil {
		return err
	}
	fmt.Println("fanoutbench: wrote", svg)
	return nil
}
