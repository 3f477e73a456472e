// Command scalebench measures how the disk-quota clean-up scales with the
// number of tile pages in the DynamoDB usage store (make bench-scale,
// infra/bench-scale.sh). For each size it creates a fresh table (as
// dynamo.CreateTable does), loads that many synthetic pages spread
// over a few layers (BatchWriteItem, 25 items a call, several writers),
// and runs one clean-up of the global quota set to free 1 % of the bytes
// in a child process of its own: the child reports the time, the items
// DynamoDB returned to it (counted by a client middleware), the pages
// deleted and its peak RSS (VmHWM). The table printed is also written as
// JSON (and, given a previous run's JSON, as SVG plots of the two).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"tilecache/internal/awsconf"
	"tilecache/internal/layer"
	"tilecache/internal/quota"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/tilestore"
)

// layers is how many layers the pages are spread over.
const layers = 4

func main() {
	sizes := flag.String("sizes", "10000,100000", "page counts, comma-separated")
	label := flag.String("label", "run", "name of this run in the output (before, after)")
	out := flag.String("out", "", "directory for the JSON results and SVG plots (none when empty)")
	compare := flag.String("compare", "", "JSON results of an earlier run to plot beside this one")
	policy := flag.String("policy", quota.PolicyLRU, "expiration policy of the clean-up (LRU or LFU)")
	writers := flag.Int("writers", 8, "BatchWriteItem calls in flight while loading")
	maxLoad := flag.Duration("max-load", 3*time.Minute, "skip the sizes whose load would take longer, estimated from the previous size's")
	child := flag.String("child", "", "internal: run -op on this table and print its figures as JSON")
	op := flag.String("op", "cleanup", "internal: what the child runs: cleanup, report, recount (of the first layer), remove (of the second)")
	childPages := flag.Int("pages", 0, "internal: the pages the table was loaded with")
	opsMax := flag.Int("ops-max", 0, "run the report, recount and removal only for sizes up to this many pages (0: every size)")
	status := flag.String("status", "", "measure the task status instead: FINISHED,LAYERS,LANES (e.g. 10000,8,128)")
	statusAge := flag.Duration("status-age", time.Hour, "with -status: how long ago the finished tasks finished")
	statusTable := flag.String("status-table", "", "with -status: time List on this table, set up by an earlier -status-keep run, and set up nothing")
	statusKeep := flag.Bool("status-keep", false, "with -status: keep the table made (its name is printed) for -status-table runs")
	statusCalls := flag.Int("status-calls", 15, "with -status: timed List calls after the first")
	cpuProfile := flag.String("cpuprofile", "", "with -status: write a CPU profile of the timed List calls to this file")
	statusBolt := flag.Bool("status-bolt", false, "with -status: measure the embedded store (a bbolt file) instead of DynamoDB")
	plotOnly := flag.String("plot", "", "draw the plots of this JSON result (and -compare's) into -out, and run nothing")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	if *child != "" {
		if err := runChild(ctx, *child, *op, *policy, *childPages, log); err != nil {
			fmt.Fprintln(os.Stderr, "scalebench:", err)
			os.Exit(1)
		}
		return
	}
	if *status != "" {
		var fin, ls, ln int
		if _, err := fmt.Sscanf(*status, "%d,%d,%d", &fin, &ls, &ln); err != nil {
			fmt.Fprintln(os.Stderr, "scalebench: -status wants FINISHED,LAYERS,LANES:", err)
			os.Exit(2)
		}
		var cfg aws.Config
		var err error
		if !*statusBolt {
			if cfg, err = awsconf.Load(ctx, os.LookupEnv); err != nil {
				fmt.Fprintln(os.Stderr, "scalebench:", err)
				os.Exit(1)
			}
		}
		f, err := runStatus(ctx, cfg, statusRun{Finished: fin, Layers: ls, Lanes: ln, Age: *statusAge,
			Table: *statusTable, Keep: *statusKeep, Calls: *statusCalls, CPUProfile: *cpuProfile, Bolt: *statusBolt})
		if err != nil {
			fmt.Fprintln(os.Stderr, "scalebench:", err)
			os.Exit(1)
		}
		printStatus(os.Stdout, f)
		return
	}
	if *plotOnly != "" {
		res, err := readResult(*plotOnly)
		if err == nil {
			err = save(*out, res.Label, *compare, res)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "scalebench:", err)
			os.Exit(1)
		}
		return
	}
	var ns []int
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 100 {
			fmt.Fprintf(os.Stderr, "scalebench: bad size %q\n", f)
			os.Exit(2)
		}
		ns = append(ns, n)
	}
	rows, err := run(ctx, ns, *policy, *writers, *maxLoad, *opsMax)
	printTable(os.Stdout, *label, *policy, rows)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		os.Exit(1)
	}
	if *out != "" {
		if err := save(*out, *label, *compare, result{Label: *label, Policy: *policy, Rows: rows}); err != nil {
			fmt.Fprintln(os.Stderr, "scalebench:", err)
			os.Exit(1)
		}
	}
}

// row is one size's figures.
type row struct {
	Pages        int     `json:"pages"`
	LoadSeconds  float64 `json:"loadSeconds"`
	Seconds      float64 `json:"seconds"`      // the clean-up
	ItemsRead    int64   `json:"itemsRead"`    // items DynamoDB returned to the clean-up
	Requests     int64   `json:"requests"`     // DynamoDB calls of the clean-up
	PagesDeleted int64   `json:"pagesDeleted"` // pages the clean-up deleted
	BytesFreed   int64   `json:"bytesFreed"`
	PeakRSSMiB   float64 `json:"peakRssMiB"` // of the child process that ran the clean-up
	// The other operations, each in a child of its own after the clean-up:
	// the usage report, a recount of one layer's pages (ReplaceLayer, the
	// counts regenerated as a tile listing would find them) and the
	// removal of another layer's (RemoveLayer).
	Report  *opFigures `json:"report,omitempty"`
	Recount *opFigures `json:"recount,omitempty"`
	Remove  *opFigures `json:"remove,omitempty"`
}

// opFigures are one operation's figures.
type opFigures struct {
	Pages      int     `json:"pages"` // pages of the layer it worked on
	Seconds    float64 `json:"seconds"`
	ItemsRead  int64   `json:"itemsRead"`
	Requests   int64   `json:"requests"`
	PeakRSSMiB float64 `json:"peakRssMiB"`
}

type result struct {
	Label  string `json:"label"`
	Policy string `json:"policy"`
	Rows   []row  `json:"rows"`
}

// run loads and cleans up each size in turn.
func run(ctx context.Context, sizes []int, policy string, writers int, maxLoad time.Duration, opsMax int) ([]row, error) {
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" {
		return nil, fmt.Errorf(`no DynamoDB endpoint: run it through make bench-scale, or eval "$(make -s devstack)" first`)
	}
	cfg, err := awsconf.Load(ctx, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	client := dynamodb.NewFromConfig(cfg)
	var rows []row
	var perPage time.Duration // load time per page of the last size
	for _, n := range sizes {
		if perPage > 0 && time.Duration(n)*perPage > maxLoad {
			fmt.Fprintf(os.Stderr, "scalebench: %d pages skipped: loading would take about %s (over -max-load %s)\n",
				n, (time.Duration(n) * perPage).Round(time.Second), maxLoad)
			continue
		}
		r, err := runSize(ctx, client, n, policy, writers, opsMax == 0 || n <= opsMax)
		if err != nil {
			return rows, fmt.Errorf("%d pages: %w", n, err)
		}
		perPage = time.Duration(r.LoadSeconds * float64(time.Second) / float64(n))
		rows = append(rows, r)
		fmt.Fprintf(os.Stderr, "scalebench: %d pages: loaded in %.1fs, clean-up %.2fs, %d items read, %d pages deleted, peak RSS %.1f MiB\n",
			n, r.LoadSeconds, r.Seconds, r.ItemsRead, r.PagesDeleted, r.PeakRSSMiB)
		if data, err := json.Marshal(r); err == nil {
			fmt.Fprintf(os.Stderr, "scalebench: %d pages: %s\n", n, data)
		}
	}
	return rows, nil
}

// runSize creates a table, loads n pages, runs the clean-up in a child and
// drops the table.
func runSize(ctx context.Context, client *dynamodb.Client, n int, policy string, writers int, ops bool) (row, error) {
	r := row{Pages: n}
	table := fmt.Sprintf("scalebench-%d-%d", n, time.Now().UnixNano())
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		return r, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		client.DeleteTable(dctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}()
	store := dynamo.New(client, table).Usage()
	pages := Synthetic(n, 1)
	start := time.Now()
	if err := store.ImportPages(ctx, pages, writers); err != nil {
		return r, err
	}
	r.LoadSeconds = time.Since(start).Seconds()
	pages = nil
	// Usage is counted (no layer awaits a recount), in 4 KiB blocks.
	if err := store.Rebase(ctx, 4096, nil); err != nil {
		return r, err
	}
	exe, err := os.Executable()
	if err != nil {
		return r, err
	}
	child := func(op string, v any) error {
		cmd := exec.CommandContext(ctx, exe, "-child", table, "-op", op, "-policy", policy, "-pages", strconv.Itoa(n))
		cmd.Stderr = os.Stderr
		outb, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%s child: %w", op, err)
		}
		if err := json.Unmarshal(outb, v); err != nil {
			return fmt.Errorf("%s child's answer %q: %w", op, outb, err)
		}
		return nil
	}
	var c row
	if err := child("cleanup", &c); err != nil {
		return r, err
	}
	c.Pages, c.LoadSeconds = r.Pages, r.LoadSeconds
	if !ops {
		return c, nil
	}
	for _, o := range []struct {
		op  string
		dst **opFigures
	}{{"report", &c.Report}, {"recount", &c.Recount}, {"remove", &c.Remove}} {
		var f opFigures
		if err := child(o.op, &f); err != nil {
			return c, err
		}
		*o.dst = &f
	}
	return c, nil
}

// Synthetic returns n pages over the bench's layers: created over 30
// days, two in three read since (hits 1-1000), 4 KiB to 4 MiB each.
func Synthetic(n int, seed uint64) []quota.Page { return synthetic(n, seed, -1) }

// synthetic returns Synthetic's pages, only those of layer number only
// when it is not negative.
func synthetic(n int, seed uint64, only int) []quota.Page {
	rnd := rand.New(rand.NewPCG(seed, 37))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]quota.Page, 0, n)
	for i := 0; i < n; i++ {
		set := tilestore.SetName{Layer: fmt.Sprintf("bench:layer%d", i%layers), GridSetID: "EPSG:900913", FormatID: "png", ParametersID: "default"}
		// Page i of a layer: distinct (z, x, y) on levels 8-18.
		j := int64(i / layers)
		z := 8 + int(j%11)
		k := quota.PageKey{Set: set, Z: z, X: j / 11 % 4096, Y: j / 11 / 4096}
		created := t0.Add(time.Duration(rnd.Int64N(int64(30 * 24 * time.Hour))))
		p := quota.Page{Key: k, Tiles: 1 + rnd.Int64N(4096), Created: created}
		p.Bytes = p.Tiles * 4096 * (1 + rnd.Int64N(4))
		if rnd.IntN(3) > 0 {
			p.LastAccess = created.Add(time.Duration(rnd.Int64N(int64(30 * 24 * time.Hour))))
			p.Hits = 1 + rnd.Int64N(1000)
		}
		if only < 0 || i%layers == only {
			out = append(out, p)
		}
	}
	return out
}

// benchLayers is the catalogue of the clean-up: one layer, not one of the
// pages' (their tiles are deleted by the page's whole 64×64 range).
const benchLayers = `
layers:
  - name: other
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
`

// fixedConfig is a quota configuration that does not change.
type fixedConfig quota.Config

func (f fixedConfig) QuotaConfig(context.Context) (quota.Config, error) { return quota.Config(f), nil }

// idle says no layer has tasks at work.
type idle struct{}

func (idle) ActiveLayers(context.Context, time.Time) (map[string]bool, error) { return nil, nil }

// discard is a tile store without tiles: the clean-up's tile deletes are
// not what the bench measures (they cost the same before and after).
type discard struct{}

func (discard) Put(context.Context, string, []byte, tilestore.Meta) error { return nil }
func (discard) Get(context.Context, string) ([]byte, tilestore.Meta, bool, error) {
	return nil, tilestore.Meta{}, false, nil
}
func (discard) Stat(context.Context, string) (tilestore.Object, bool, error) {
	return tilestore.Object{}, false, nil
}
func (discard) Delete(_ context.Context, keys []string) (int, error) { return 0, nil }
func (discard) List(context.Context, string, func(tilestore.Object) error) error {
	return nil
}

// counting counts the pages a clean-up deletes.
type counting struct {
	quota.UsageStore
	pages, bytes atomic.Int64
}

func (c *counting) DeletePage(ctx context.Context, k quota.PageKey) (quota.Page, bool, error) {
	p, found, err := c.UsageStore.DeletePage(ctx, k)
	if found {
		c.pages.Add(1)
		c.bytes.Add(p.Bytes)
	}
	return p, found, err
}

func (c *counting) DeletePageAsRead(ctx context.Context, p quota.Page) (quota.Page, bool, error) {
	p, found, err := c.UsageStore.DeletePageAsRead(ctx, p)
	if found {
		c.pages.Add(1)
		c.bytes.Add(p.Bytes)
	}
	return p, found, err
}

// itemCounter counts the DynamoDB calls of a client and the items they
// returned.
type itemCounter struct{ items, requests atomic.Int64 }

func (ic *itemCounter) add(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("scalebench-count",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			ic.requests.Add(1)
			switch r := out.Result.(type) {
			case *dynamodb.QueryOutput:
				ic.items.Add(int64(r.Count))
			case *dynamodb.ScanOutput:
				ic.items.Add(int64(r.Count))
			case *dynamodb.GetItemOutput:
				if len(r.Item) > 0 {
					ic.items.Add(1)
				}
			case *dynamodb.BatchGetItemOutput:
				for _, items := range r.Responses {
					ic.items.Add(int64(len(items)))
				}
			}
			return out, md, err
		}), middleware.After)
}

// runChild runs one clean-up of the global quota (set to free 1 % of the
// bytes) on table and prints its figures.
func runChild(ctx context.Context, table, op, policy string, pages int, log *slog.Logger) error {
	cfg, err := awsconf.Load(ctx, os.LookupEnv)
	if err != nil {
		return err
	}
	var ic itemCounter
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, ic.add) })
	store := &counting{UsageStore: dynamo.New(client, table).Usage()}
	ls, err := store.Layers(ctx)
	if err != nil {
		return err
	}
	var total int64
	for _, l := range ls {
		total += l.Bytes
	}
	qc := quota.Default()
	qc.Enabled, qc.GlobalPolicy, qc.GlobalQuota = true, policy, total-total/100
	cat, err := layer.Parse([]byte(benchLayers), "scalebench")
	if err != nil {
		return err
	}
	c := quota.NewCleaner(fixedConfig(qc), store, discard{}, cat, idle{}, quota.CleanerOptions{}, log)
	if op != "cleanup" {
		return runOp(ctx, op, store, c, &ic, pages)
	}
	ic.items.Store(0)
	ic.requests.Store(0)
	start := time.Now()
	if err := c.Run(ctx); err != nil {
		return err
	}
	r := row{Seconds: time.Since(start).Seconds(), ItemsRead: ic.items.Load(), Requests: ic.requests.Load(),
		PagesDeleted: store.pages.Load(), BytesFreed: store.bytes.Load(), PeakRSSMiB: peakRSS()}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// runOp runs one of the other operations and prints its figures.
func runOp(ctx context.Context, op string, store quota.UsageStore, c *quota.Cleaner, ic *itemCounter, pages int) error {
	first, second := "bench:layer0", "bench:layer1"
	var f opFigures
	var counts []quota.PageDelta
	if op == "recount" {
		// What a listing of the layer's tiles would count: its pages as
		// loaded (those the clean-up deleted are found again).
		for _, p := range synthetic(pages, 1, 0) {
			counts = append(counts, quota.PageDelta{Page: p.Key, Tiles: p.Tiles, Bytes: p.Bytes})
		}
		slices.SortFunc(counts, func(a, b quota.PageDelta) int { return strings.Compare(a.Page.ID(), b.Page.ID()) })
		f.Pages = len(counts)
	}
	ls, err := store.Layers(ctx)
	if err != nil {
		return err
	}
	ic.items.Store(0)
	ic.requests.Store(0)
	start := time.Now()
	switch op {
	case "report":
		f.Pages = pages
		if _, err := c.Report(ctx); err != nil {
			return err
		}
	case "recount":
		var version int64
		for _, l := range ls {
			if l.Layer == first {
				version = l.Version
			}
		}
		if err := store.ReplaceLayer(ctx, first, version, counts, time.Now()); err != nil {
			return err
		}
	case "remove":
		f.Pages = (pages + layers - 2) / layers
		if err := store.RemoveLayer(ctx, second, false); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown operation %q", op)
	}
	f.Seconds, f.ItemsRead, f.Requests, f.PeakRSSMiB = time.Since(start).Seconds(), ic.items.Load(), ic.requests.Load(), peakRSS()
	return json.NewEncoder(os.Stdout).Encode(f)
}

// peakRSS returns the process's peak resident set (VmHWM) in MiB.
func peakRSS() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// printTable prints rows as an aligned table.
func printTable(w io.Writer, label, policy string, rows []row) {
	fmt.Fprintf(w, "clean-up freeing 1%% of the bytes (%s, %s; %d layers)\n", label, policy, layers)
	fmt.Fprintf(w, "%10s %9s %10s %12s %10s %13s %13s\n", "pages", "load s", "clean-up s", "items read", "requests", "pages deleted", "peak RSS MiB")
	for _, r := range rows {
		fmt.Fprintf(w, "%10d %9.1f %10.2f %12d %10d %13d %13.1f\n", r.Pages, r.LoadSeconds, r.Seconds, r.ItemsRead, r.Requests, r.PagesDeleted, r.PeakRSSMiB)
	}
	if len(rows) == 0 || rows[0].Report == nil {
		return
	}
	fmt.Fprintf(w, "\nother operations (%s): s per 100k pages of the layer, items read, peak RSS MiB\n", label)
	fmt.Fprintf(w, "%10s %12s %14s %12s %12s %14s %12s %12s %10s %10s\n", "pages", "report s", "report items",
		"recount pg", "recount s", "recount items", "recount RSS", "remove pg", "remove s", "remove RSS")
	per100k := func(f *opFigures) float64 { return f.Seconds * 100_000 / float64(max(f.Pages, 1)) }
	for _, r := range rows {
		if r.Report == nil || r.Recount == nil || r.Remove == nil {
			continue
		}
		fmt.Fprintf(w, "%10d %12.3f %14d %12d %12.1f %14d %12.1f %12d %10.1f %10.1f\n", r.Pages, r.Report.Seconds, r.Report.ItemsRead,
			r.Recount.Pages, per100k(r.Recount), r.Recount.ItemsRead, r.Recount.PeakRSSMiB, r.Remove.Pages, per100k(r.Remove), r.Remove.PeakRSSMiB)
	}
}

// save writes the results as JSON and, with an earlier run's, the plots.
func save(dir, label, compare string, res result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "scale-"+label+".json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	runs := []result{res}
	if compare != "" {
		prev, err := readResult(compare)
		if err != nil {
			return fmt.Errorf("read the run to compare: %w", err)
		}
		runs = []result{prev, res}
	}
	return writePlots(dir, runs)
}

// readResult reads a run's JSON results.
func readResult(path string) (result, error) {
	var r result
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("decode %s: %w", path, err)
	}
	return r, nil
}
