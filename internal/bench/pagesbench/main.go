// Command pagesbench measures GET /rest/diskquota/pages/{layer}.json (the
// coverage map's page table of one level) at many pages in one layer, on
// the embedded usage store (a bbolt file) and on DynamoDB (the local AWS
// stack: eval the output of infra/devstack/up.sh first): for a few levels,
// the pages the call read from the usage store (counted at the store's
// port, and for DynamoDB as the items DynamoDB returned to the client, by
// a client middleware) and the time per call (the median of -calls calls
// after one unmeasured call, which orders a layer never read in order).
//
//	go run ./internal/bench/pagesbench -pages 100000
//
// The pages are those of one layer's EPSG:4326 png tiles: every page of
// levels 0 up to the last whole level that fits, then the first pages of
// the next level (at 100,000: levels 0 to 13 whole, 56,304 pages of
// level 14), created over a day, one in three read since.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"tilecache/internal/auth"
	"tilecache/internal/awsconf"
	"tilecache/internal/layer"
	"tilecache/internal/quota"
	"tilecache/internal/rest"
	"tilecache/internal/state/bolt"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/tilestore"
)

const layers = `
layers:
  - name: bench:pages
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
`

func main() {
	n := flag.Int("pages", 100000, "pages of the layer")
	levels := flag.String("levels", "3,7,10,12,14", "levels asked for, comma-separated")
	limit := flag.Int("limit", 1000, "the limit parameter of the calls (the console asks for 10000)")
	calls := flag.Int("calls", 5, "measured calls per level")
	backends := flag.String("backends", "embedded,aws", "usage stores measured")
	flag.Parse()
	// An interrupt stops the calls; the table made is still deleted.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *n, *levels, *limit, *calls, *backends)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pagesbench:", err)
		os.Exit(1)
	}
}

// store is what the bench needs of a usage store.
type store interface {
	quota.ConfigStore
	Pages(ctx context.Context, layer string) ([]quota.Page, error)
	PagesInOrder(ctx context.Context, layer, policy, cursor string, limit int) ([]quota.Page, string, error)
}

// counting counts the pages the handler's reads returned. LevelPages is
// called through an interface check, so that the bench also runs against
// a handler that only reads Pages.
type counting struct {
	store
	read atomic.Int64
}

func (c *counting) Pages(ctx context.Context, layer string) ([]quota.Page, error) {
	ps, err := c.store.Pages(ctx, layer)
	c.read.Add(int64(len(ps)))
	return ps, err
}

func (c *counting) LevelPages(ctx context.Context, set tilestore.SetName, z int, after string, limit int) ([]quota.Page, string, error) {
	lp, ok := c.store.(interface {
		LevelPages(ctx context.Context, set tilestore.SetName, z int, after string, limit int) ([]quota.Page, string, error)
	})
	if !ok {
		return nil, "", fmt.Errorf("the store has no LevelPages")
	}
	ps, next, err := lp.LevelPages(ctx, set, z, after, limit)
	c.read.Add(int64(len(ps)))
	return ps, next, err
}

func (c *counting) PagesInOrder(ctx context.Context, layer, policy, cursor string, limit int) ([]quota.Page, string, error) {
	ps, next, err := c.store.PagesInOrder(ctx, layer, policy, cursor, limit)
	c.read.Add(int64(len(ps)))
	return ps, next, err
}

// synthetic returns the bench's n pages.
func synthetic(n int) []quota.Page {
	rnd := rand.New(rand.NewPCG(50, 100))
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	set := tilestore.SetName{Layer: "bench:pages", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}
	out := make([]quota.Page, 0, n)
	for z := 0; len(out) < n; z++ {
		cols, rows := max(1, (int64(2)<<z)/64), max(1, (int64(1)<<z)/64)
		for x := int64(0); x < cols && len(out) < n; x++ {
			for y := int64(0); y < rows && len(out) < n; y++ {
				p := quota.Page{Key: quota.PageKey{Set: set, Z: z, X: x, Y: y}, Tiles: 1 + rnd.Int64N(4096),
					Created: t0.Add(time.Duration(rnd.IntN(48)) * 30 * time.Minute)}
				p.Bytes = p.Tiles * 4096
				if rnd.IntN(3) == 0 {
					p.LastAccess, p.Hits = p.Created.Add(time.Duration(1+rnd.IntN(86400))*time.Second), 1+rnd.Int64N(500)
				}
				out = append(out, p)
			}
		}
	}
	return out
}

func run(ctx context.Context, n int, levelList string, limit, calls int, backends string) error {
	pages := synthetic(n)
	perLevel := map[int]int{}
	for _, p := range pages {
		perLevel[p.Key.Z]++
	}
	cat, err := layer.Parse([]byte(layers), "pagesbench")
	if err != nil {
		return err
	}
	fmt.Printf("%d pages in one layer; limit %d; median of %d calls\n", n, limit, calls)
	fmt.Printf("%-9s %5s %11s %12s %14s %11s\n", "store", "level", "level pages", "pages read", "items (Dynamo)", "ms/call")
	for _, backend := range strings.Split(backends, ",") {
		if err := measure(ctx, backend, pages, perLevel, cat, levelList, limit, calls); err != nil {
			return err
		}
	}
	return nil
}

// measure loads pages into a store of backend and times the calls of
// each level.
func measure(ctx context.Context, backend string, pages []quota.Page, perLevel map[int]int, cat *layer.Catalogue, levelList string, limit, calls int) error {
	var s store
	var items *atomic.Int64
	var cleanup func()
	var err error
	start := time.Now()
	switch backend {
	case "embedded":
		s, cleanup, err = boltStore(ctx, pages)
	case "aws":
		s, items, cleanup, err = dynamoStore(ctx, pages)
	default:
		return fmt.Errorf("unknown store %s", backend)
	}
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Fprintf(os.Stderr, "%s: loaded in %.1f s\n", backend, time.Since(start).Seconds())
	c := &counting{store: s}
	api := rest.New(rest.Services{Layers: cat, Quota: s}, rest.Options{Pages: c}, slog.New(slog.DiscardHandler))
	// No accounts here: every request is an administrator's.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), auth.Principal{Name: "bench", Role: auth.Admin})))
	}))
	defer srv.Close()
	for _, zs := range strings.Split(levelList, ",") {
		z, err := strconv.Atoi(zs)
		if err != nil {
			return fmt.Errorf("level %q: %w", zs, err)
		}
		url := fmt.Sprintf("%s/rest/diskquota/pages/bench:pages.json?gridSet=EPSG:4326&format=png&zoom=%d&limit=%d", srv.URL, z, limit)
		if err := get(ctx, url); err != nil { // unmeasured
			return err
		}
		var times []time.Duration
		var read, got int64
		for range calls {
			r0, i0 := c.read.Load(), int64(0)
			if items != nil {
				i0 = items.Load()
			}
			t := time.Now()
			if err := get(ctx, url); err != nil {
				return err
			}
			times = append(times, time.Since(t))
			read = c.read.Load() - r0
			if items != nil {
				got = items.Load() - i0
			}
		}
		slices.Sort(times)
		dyn := "-"
		if items != nil {
			dyn = strconv.FormatInt(got, 10)
		}
		fmt.Printf("%-9s %5d %11d %12d %14s %11.1f\n", backend, z, perLevel[z], read, dyn, float64(times[len(times)/2].Microseconds())/1000)
	}
	return nil
}

// get calls url and checks the answer is a page table.
func get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	var d struct{ Pages []json.RawMessage }
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &d) != nil {
		return fmt.Errorf("GET %s: %d %.200s", url, res.StatusCode, body)
	}
	return nil
}

// boltStore is a bbolt file in a temporary directory holding pages.
func boltStore(ctx context.Context, pages []quota.Page) (store, func(), error) {
	dir, err := os.MkdirTemp("", "pagesbench")
	if err != nil {
		return nil, nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { db.Close(); os.RemoveAll(dir) }
	u := db.Usage()
	byTime := map[time.Time][]quota.PageDelta{}
	var reads []quota.Access
	for _, p := range pages {
		byTime[p.Created] = append(byTime[p.Created], quota.PageDelta{Page: p.Key, Tiles: p.Tiles, Bytes: p.Bytes})
		if p.Hits > 0 {
			reads = append(reads, quota.Access{Page: p.Key, Hits: p.Hits, Last: p.LastAccess})
		}
	}
	for at, ds := range byTime {
		if err := u.ApplyDeltas(ctx, ds, at); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	if err := u.RecordAccess(ctx, reads); err != nil {
		cleanup()
		return nil, nil, err
	}
	return u, cleanup, nil
}

// dynamoStore is a fresh table of the local AWS stack holding pages (written
// with ImportPages), and the count of items DynamoDB returns to its client.
func dynamoStore(ctx context.Context, pages []quota.Page) (store, *atomic.Int64, func(), error) {
	cfg, err := awsconf.Load(ctx, os.LookupEnv)
	if err != nil {
		return nil, nil, nil, err
	}
	items := new(atomic.Int64)
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = true // DynamoDB Local
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("pagesbench-count",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleInitialize(ctx, in)
					switch r := out.Result.(type) {
					case *dynamodb.QueryOutput:
						items.Add(int64(max(r.Count, r.ScannedCount)))
					case *dynamodb.GetItemOutput:
						if len(r.Item) > 0 {
							items.Add(1)
						}
					}
					return out, md, err
				}), middleware.After)
		})
	})
	table := fmt.Sprintf("pagesbench-%d", time.Now().UnixNano())
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		return nil, nil, nil, err
	}
	cleanup := func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		client.DeleteTable(dctx, &dynamodb.DeleteTableInput{TableName: &table})
	}
	u := dynamo.New(client, table).Usage()
	if err := u.ImportPages(ctx, pages, 8); err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	return u, items, cleanup, nil
}
