package rest_test

// GET /rest/diskquota/pages/{layer}.json, an extension of this project:
// the disk quota's page table of one tile set's level, as the usage store
// holds it, with each page's place in the clean-up's order.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"tilecache/internal/app/apptest"
	"tilecache/internal/awsconf"
	"tilecache/internal/layer"
	"tilecache/internal/quota"
	"tilecache/internal/rest"
	"tilecache/internal/state/bolt"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

type pagesDoc struct {
	Layer          string     `json:"layer"`
	GridSet        string     `json:"gridSet"`
	Format         string     `json:"format"`
	Parameters     string     `json:"parameters"`
	Zoom           int        `json:"zoom"`
	Policy         string     `json:"policy"`
	QuotaScope     string     `json:"quotaScope"`
	PageSize       int        `json:"pageSize"`
	PageCount      *int       `json:"pageCount"`
	LayerPageCount *int       `json:"layerPageCount"`
	RankedPages    int        `json:"rankedPages"`
	Truncated      bool       `json:"truncated"`
	Next           string     `json:"next"`
	Pages          []pageLine `json:"pages"`
}

type pageLine struct {
	X, Y       int64
	TileRange  [4]int64   `json:"tileRange"`
	Bounds     [4]float64 `json:"bounds"`
	Tiles      int64      `json:"tiles"`
	Bytes      int64      `json:"bytes"`
	Hits       int64      `json:"hits"`
	Created    *time.Time `json:"created"`
	LastAccess *time.Time `json:"lastAccess"`
	Rank       int        `json:"rank"`
}

// rankOf is the rank of page x,y in d.
func rankOf(d pagesDoc, x, y int64) int {
	for _, p := range d.Pages {
		if p.X == x && p.Y == y {
			return p.Rank
		}
	}
	return 0
}

func getPages(t *testing.T, a *apptest.App, query string) pagesDoc {
	t.Helper()
	res := a.Do(t, "GET", "/rest/diskquota/pages/demo:world.json?"+query, "")
	wantOK(t, res, ctJSON)
	var d pagesDoc
	if err := json.Unmarshal([]byte(res.Body), &d); err != nil {
		t.Fatalf("decode %s: %v", res.Body, err)
	}
	return d
}

func TestQuotaPages(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	// z6 and z7 of a box around a corner of four pages at z7 (a page is
	// 64×64 tiles, 90° at z7 of EPSG:4326), and the top-left grid set's z1.
	seedJSON(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","bounds":{"coords":{"double":[-91,-1,-89,1]}},"zoomStart":6,"zoomStop":7,"format":"image/png","threadCount":2}}`)
	seedJSON(t, a, "demo:world", `{"seedRequest":{"gridSetId":"TopLeft4326","zoomStart":1,"zoomStop":1,"format":"image/png"}}`)
	testenv.Eventually(t, 120*time.Second, "the seeds to finish", func() bool { return len(list(t, a, "/rest/seed.json")) == 0 })

	// Reads of one page, through the access log intake.
	last := time.Now().UTC().Truncate(time.Millisecond)
	res := a.Do(t, "POST", "/rest/diskquota/access.json", fmt.Sprintf(`{"id":"pages-1","reads":[{"layer":"demo:world","gridSetId":"EPSG:4326",`+
		`"formatId":"png","parametersId":"default","z":7,"pageX":1,"pageY":0,"hits":5,"last":%q}]}`, last.Format(time.RFC3339Nano)),
		"Content-Type", "application/json")
	if res.Status != http.StatusOK || !strings.Contains(res.Body, `"pages":1`) {
		t.Fatalf("access batch: %d %s", res.Status, res.Body)
	}

	// The page table, read from the store directly.
	stored, err := a.Local.Usage.Pages(t.Context(), "demo:world")
	if err != nil {
		t.Fatal(err)
	}
	compare := func(d pagesDoc, policy string, z int) {
		t.Helper()
		ordered := slices.Clone(stored)
		quota.Order(ordered, policy)
		var want []quota.Page
		rank := map[quota.PageKey]int{}
		for i, p := range ordered {
			rank[p.Key] = i + 1
			if p.Key.Set.GridSetID == "EPSG:4326" && p.Key.Set.FormatID == "png" && p.Key.Z == z {
				want = append(want, p)
			}
		}
		if d.Policy != policy || d.LayerPageCount == nil || *d.LayerPageCount != len(stored) || d.RankedPages != len(stored) ||
			d.PageCount == nil || *d.PageCount != len(want) || len(d.Pages) != len(want) || d.Truncated || d.Next != "" {
			t.Fatalf("z%d %s: got policy %s, %d of %v pages (layer %v, %d ranked), truncated %v, next %q; want %d of the store's %d pages",
				z, policy, d.Policy, len(d.Pages), d.PageCount, d.LayerPageCount, d.RankedPages, d.Truncated, d.Next, len(want), len(stored))
		}
		for i, p := range want {
			g := d.Pages[i]
			if g.X != p.Key.X || g.Y != p.Key.Y || g.Tiles != p.Tiles || g.Bytes != p.Bytes || g.Hits != p.Hits || g.Rank != rank[p.Key] ||
				g.Created == nil || !g.Created.Equal(p.Created) || (g.LastAccess == nil) != p.LastAccess.IsZero() ||
				(g.LastAccess != nil && !g.LastAccess.Equal(p.LastAccess)) {
				t.Errorf("z%d page %d: got %+v, want %+v ranked %d", z, i, g, p, rank[p.Key])
			}
		}
	}

	d := getPages(t, a, "gridSet=EPSG:4326&format=image/png&zoom=7")
	if d.Layer != "demo:world" || d.GridSet != "EPSG:4326" || d.Format != "png" || d.Parameters != "default" || d.Zoom != 7 ||
		d.QuotaScope != "global" || d.PageSize != 64 {
		t.Errorf("z7 header: %+v", d)
	}
	compare(d, "LFU", 7)
	// The box [-91,-1,-89,1] at z7 covers tile columns and rows 63–64:
	// pages x 0–1, y 0–1, and the stored tiles are the pages' sum.
	var xy []string
	var tiles int64
	for _, p := range d.Pages {
		xy = append(xy, fmt.Sprintf("%d,%d", p.X, p.Y))
		tiles += p.Tiles
		if p.X == 1 && p.Y == 0 {
			if p.TileRange != [4]int64{64, 0, 127, 63} || p.Bounds != [4]float64{-90, -90, 0, 0} || p.Hits != 5 ||
				p.LastAccess == nil || !p.LastAccess.Equal(last) {
				t.Errorf("page 1,0: got %+v, want tiles 64–127 × 0–63 covering [-90,-90,0,0], 5 hits last read %v", p, last)
			}
		}
	}
	slices.Sort(xy)
	if want := []string{"0,0", "0,1", "1,0", "1,1"}; !slices.Equal(xy, want) {
		t.Errorf("z7 pages: got %v, want %v", xy, want)
	}
	if n := int64(len(a.TileKeys(t, "demo:world/EPSG_4326/png/default/7/"))) + int64(len(a.TileKeys(t, "demo:world/EPSG:4326/png/default/7/"))); n == 0 || tiles != n {
		t.Errorf("z7: pages hold %d tiles, the store %d", tiles, n)
	}
	compare(getPages(t, a, "gridSet=EPSG:4326&format=png&parameters=default&zoom=6"), "LFU", 6)

	// The top-left grid's one page at z1 covers its 4×2 tiles, the world.
	tl := getPages(t, a, "gridSet=TopLeft4326&format=png&zoom=1")
	if len(tl.Pages) != 1 || tl.Pages[0].TileRange != [4]int64{0, 0, 3, 1} || tl.Pages[0].Bounds != [4]float64{-180, -90, 180, 90} || tl.Pages[0].Tiles != 8 {
		t.Errorf("TopLeft4326 z1: got %+v, want one page of 8 tiles, 0–3 × 0–1, the world", tl.Pages)
	}

	// A layer quota with LRU: its policy ranks; the page just read expires last.
	if res := a.Do(t, "PUT", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"layerQuotas":[{"layer":"demo:world","expirationPolicyName":"LRU","quota":{"value":"1","units":"GiB"}}]}}`); res.Status != http.StatusOK {
		t.Fatalf("PUT quota: %d %s", res.Status, res.Body)
	}
	d = getPages(t, a, "gridSet=EPSG:4326&format=image/png&zoom=7")
	if d.QuotaScope != "layer" {
		t.Errorf("scope: got %q, want layer", d.QuotaScope)
	}
	compare(d, "LRU", 7)
	if p := d.Pages[len(d.Pages)-1]; p.X != 1 || p.Y != 0 || p.Rank != len(stored) {
		t.Errorf("LRU: the last page listed is %d,%d ranked %d; want the page read, 1,0, last of %d", p.X, p.Y, p.Rank, len(stored))
	}
	for i := 1; i < len(d.Pages); i++ {
		if d.Pages[i].Rank <= d.Pages[i-1].Rank {
			t.Errorf("pages not in rank order: %d then %d", d.Pages[i-1].Rank, d.Pages[i].Rank)
		}
	}

	// limit: the first pages by page id, lowest rank first, ranked among
	// the layer's first limit pages; truncated, and the next answer after
	// them.
	byID := slices.Clone(d.Pages)
	slices.SortFunc(byID, func(a, b pageLine) int {
		return strings.Compare(fmt.Sprintf("%d|%d", a.X, a.Y), fmt.Sprintf("%d|%d", b.X, b.Y))
	})
	var ids []string
	for _, p := range byID {
		ids = append(ids, fmt.Sprintf("%d,%d", p.X, p.Y))
	}
	var listed []string
	for after := ""; ; {
		lim := getPages(t, a, "gridSet=EPSG:4326&format=image/png&zoom=7&limit=2&after="+after)
		if len(lim.Pages) > 2 || lim.PageCount != nil || lim.LayerPageCount != nil || lim.RankedPages != 2 || lim.Truncated != (lim.Next != "") {
			t.Fatalf("limit=2 after %q: got %+v", after, lim)
		}
		for i, p := range lim.Pages {
			listed = append(listed, fmt.Sprintf("%d,%d", p.X, p.Y))
			want := rankOf(d, p.X, p.Y)
			if want > 2 {
				want = 0
			}
			if p.Rank != want || (i > 0 && rankOf(d, p.X, p.Y) < rankOf(d, lim.Pages[i-1].X, lim.Pages[i-1].Y)) {
				t.Errorf("limit=2: page %d,%d ranked %d (want %d) or not after %d,%d", p.X, p.Y, p.Rank, want, lim.Pages[i-1].X, lim.Pages[i-1].Y)
			}
		}
		if lim.Next == "" {
			break
		}
		if !slices.Contains(listed[len(listed)-len(lim.Pages):], lim.Next) {
			t.Fatalf("limit=2: next %q is not a page of the answer %v", lim.Next, listed)
		}
		after = lim.Next
	}
	slices.Sort(listed)
	if slices.Sort(ids); !slices.Equal(listed, ids) {
		t.Errorf("limit=2, pages listed over the calls: %v, want %v", listed, ids)
	}
	if e := getPages(t, a, "gridSet=EPSG:900913&format=image/jpeg&zoom=3"); len(e.Pages) != 0 || e.PageCount == nil || *e.PageCount != 0 || e.Pages == nil {
		t.Errorf("a tile set without tiles: got %+v, want an empty list", e)
	}

	for _, c := range []struct {
		path   string
		status int
		says   string
	}{
		{"/rest/diskquota/pages/nope.json?gridSet=EPSG:4326&format=png&zoom=1", 404, "Unknown layer nope"},
		{"/rest/diskquota/pages/demo:world.json?format=png&zoom=1", 400, "gridSet is required: one of layer demo:world's grid sets (EPSG:4326, EPSG:900913, TopLeft4326)"},
		{"/rest/diskquota/pages/demo:world.json?gridSet=EPSG:3035&format=png&zoom=1", 400, "gridSet EPSG:3035 is not a grid set of layer demo:world"},
		{"/rest/diskquota/pages/demo:world.json?gridSet=EPSG:4326&format=gif&zoom=1", 400, "format gif is not a format of layer demo:world (image/png, image/jpeg)"},
		{"/rest/diskquota/pages/demo:world.json?gridSet=EPSG:4326&zoom=1", 400, "format \"\" is not a format"},
		{"/rest/diskquota/pages/demo:world.json?gridSet=EPSG:4326&format=png&zoom=40", 400, "zoom 40 is not a level of grid set EPSG:4326 (0 to "},
		{"/rest/diskquota/pages/demo:world.json?gridSet=EPSG:4326&format=png&zoom=-1", 400, "zoom -1 is not a level"},
		{"/rest/diskquota/pages/demo:world.json?gridSet=EPSG:4326&format=png", 400, "zoom \"\" is not a level"},
		{"/rest/diskquota/pages/demo:world.json?gridSet=EPSG:4326&format=png&zoom=1&parameters=abc", 400, "parameters abc: layer demo:world has no parameters"},
		{"/rest/diskquota/pages/topp:states.json?gridSet=EPSG:4326&format=png&zoom=1&parameters=abc", 400, "parameters abc is neither default nor 40 lower-case hexadecimal digits"},
		{"/rest/diskquota/pages/demo:world.json?gridSet=EPSG:4326&format=png&zoom=1&limit=0", 400, "limit 0 must be a whole number from 1 to 10000"},
		{"/rest/diskquota/pages/demo:world.json?gridSet=EPSG:4326&format=png&zoom=1&limit=10001", 400, "limit 10001 must be"},
		{"/rest/diskquota/pages/demo:world.json?gridSet=EPSG:4326&format=png&zoom=1&after=3", 400, "after 3 is not a page: the next of an answer"},
		{"/rest/diskquota/pages/demo:world.json?gridSet=EPSG:4326&format=png&zoom=1&after=-1,2", 400, "after -1,2 is not a page"},
	} {
		res := a.Do(t, "GET", c.path, "")
		if res.Status != c.status || !strings.Contains(res.Body, c.says) || res.Header.Get("Content-Type") != ctText {
			t.Errorf("GET %s: got %d %q, want %d naming %q", c.path, res.Status, res.Body, c.status, c.says)
		}
	}
	for _, m := range []string{"PUT", "POST", "DELETE"} {
		res := a.Do(t, m, "/rest/diskquota/pages/demo:world.json", "")
		wantError(t, res, http.StatusMethodNotAllowed, "Method "+m+" not allowed on /rest/diskquota/pages/demo:world.json")
	}
	if res := a.Do(t, "GET", "/rest/diskquota/pages/demo:world.xml?gridSet=EPSG:4326&format=png&zoom=1", ""); res.Status != http.StatusNotFound {
		t.Errorf("the .xml form: got %d, want 404", res.Status)
	}
	if res := a.DoAuth(t, "", "", "GET", "/rest/diskquota/pages/demo:world.json?gridSet=EPSG:4326&format=png&zoom=1", ""); res.Status != http.StatusUnauthorized {
		t.Errorf("without credentials: got %d, want 401", res.Status)
	}
}

// pageReads are the reads of pages a usage store offers.
type pageReads interface {
	Pages(ctx context.Context, layer string) ([]quota.Page, error)
	LevelPages(ctx context.Context, set tilestore.SetName, z int, after string, limit int) ([]quota.Page, string, error)
	PagesInOrder(ctx context.Context, layer, policy, cursor string, limit int) ([]quota.Page, string, error)
}

// countingPages is the usage store of the handler, counting the pages each
// of its reads returned.
type countingPages struct {
	store pageReads
	read  atomic.Int64
}

func (c *countingPages) Pages(ctx context.Context, layer string) ([]quota.Page, error) {
	ps, err := c.store.Pages(ctx, layer)
	c.read.Add(int64(len(ps)))
	return ps, err
}

func (c *countingPages) LevelPages(ctx context.Context, set tilestore.SetName, z int, after string, limit int) ([]quota.Page, string, error) {
	ps, next, err := c.store.LevelPages(ctx, set, z, after, limit)
	c.read.Add(int64(len(ps)))
	return ps, next, err
}

func (c *countingPages) PagesInOrder(ctx context.Context, layer, policy, cursor string, limit int) ([]quota.Page, string, error) {
	ps, next, err := c.store.PagesInOrder(ctx, layer, policy, cursor, limit)
	c.read.Add(int64(len(ps)))
	return ps, next, err
}

// levelFixture is 6,000 pages of demo:world's EPSG:4326 png tiles: every
// page of levels 0 to 11 and 3,264 of level 12, created over a day, one in
// three read since.
func levelFixture() []quota.Page {
	rnd := rand.New(rand.NewPCG(50, 4))
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	set := tilestore.SetName{Layer: "demo:world", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}
	var out []quota.Page
	for z := 0; len(out) < 6000; z++ {
		cols, rows := max(1, (int64(2)<<z)/64), max(1, (int64(1)<<z)/64)
		for x := int64(0); x < cols && len(out) < 6000; x++ {
			for y := int64(0); y < rows && len(out) < 6000; y++ {
				// Created at one of 48 times, so that pages tie on it.
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

// pagesStore is a usage store the pages handler can read, with what it
// needs to be filled.
type pagesStore interface {
	pageReads
	quota.ConfigStore
	ApplyDeltas(ctx context.Context, deltas []quota.PageDelta, now time.Time) error
	RecordAccess(ctx context.Context, accesses []quota.Access) error
}

// fillPages stores pages: in bulk where the store can (DynamoDB: the
// layer is then marked as holding its order keys, as it is after its first
// read in order, which checks every page once), else created in batches
// of one creation time, then their reads.
func fillPages(t *testing.T, s pagesStore, pages []quota.Page) {
	t.Helper()
	if bulk, ok := s.(interface {
		ImportPages(ctx context.Context, pages []quota.Page, writers int) error
	}); ok {
		if err := bulk.ImportPages(t.Context(), pages, 4); err != nil {
			t.Fatal(err)
		}
		return
	}
	byTime := map[time.Time][]quota.PageDelta{}
	var reads []quota.Access
	for _, p := range pages {
		byTime[p.Created] = append(byTime[p.Created], quota.PageDelta{Page: p.Key, Tiles: p.Tiles, Bytes: p.Bytes})
		if p.Hits > 0 {
			reads = append(reads, quota.Access{Page: p.Key, Hits: p.Hits, Last: p.LastAccess})
		}
	}
	for at, ds := range byTime {
		if err := s.ApplyDeltas(t.Context(), ds, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordAccess(t.Context(), reads); err != nil {
		t.Fatal(err)
	}
}

// TestQuotaPagesReadOneLevel: at 6,000 pages in the layer, a call reads
// (through the usage store's port) the level's pages by key prefix and
// the layer's first limit pages in expiration order: at most 2×limit+2
// pages, not the layer's every page; paging with after lists each of the
// level's pages once, each ranked where its rank is within limit.
func TestQuotaPagesReadOneLevel(t *testing.T) {
	cat, err := layer.Parse([]byte(apptest.Layers), "layers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fixture := levelFixture()
	for _, backend := range []string{"embedded", "aws"} {
		t.Run(backend, func(t *testing.T) {
			var store pagesStore
			var dynamoItems *atomic.Int64
			if backend == "embedded" {
				db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				store = db.Usage()
			} else {
				store, dynamoItems = dynamoUsage(t)
			}
			fillPages(t, store, fixture)
			stored, err := store.Pages(t.Context(), "demo:world")
			if err != nil || len(stored) != len(fixture) {
				t.Fatalf("the store holds %d pages (%v), want %d", len(stored), err, len(fixture))
			}
			quota.Order(stored, quota.Default().GlobalPolicy)
			rank := map[quota.PageKey]int{}
			for i, p := range stored {
				rank[p.Key] = i + 1
			}
			pages := &countingPages{store: store}
			srv := httptest.NewServer(asAdmin(rest.New(rest.Services{Layers: cat, Quota: store}, rest.Options{Pages: pages}, slog.New(slog.DiscardHandler))))
			t.Cleanup(srv.Close)

			for _, c := range []struct{ zoom, limit, levelPages int }{{7, 1000, 8}, {11, 100, 2048}, {12, 1000, 3264}, {12, 10000, 3264}} {
				seen := map[quota.PageKey]bool{}
				after := ""
				for calls := 0; ; calls++ {
					if calls > c.levelPages/c.limit+1 {
						t.Fatalf("z%d limit %d: %d calls and not at the end", c.zoom, c.limit, calls)
					}
					before, beforeItems := pages.read.Load(), int64(0)
					if dynamoItems != nil {
						beforeItems = dynamoItems.Load()
					}
					d := getPagesFrom(t, srv.URL, fmt.Sprintf("gridSet=EPSG:4326&format=png&zoom=%d&limit=%d&after=%s", c.zoom, c.limit, after))
					read, bound := pages.read.Load()-before, int64(2*c.limit+2)
					if read > bound {
						t.Errorf("z%d limit %d: the call read %d pages of the layer's %d; want at most %d", c.zoom, c.limit, read, len(stored), bound)
					}
					if dynamoItems != nil {
						if items := dynamoItems.Load() - beforeItems; items > bound+2 {
							t.Errorf("z%d limit %d: DynamoDB returned %d items; want at most %d", c.zoom, c.limit, items, bound+2)
						}
					}
					if len(d.Pages) > c.limit || d.Truncated != (d.Next != "") || d.RankedPages != min(c.limit, len(stored)) {
						t.Fatalf("z%d limit %d: %d pages, truncated %v, next %q, %d ranked", c.zoom, c.limit, len(d.Pages), d.Truncated, d.Next, d.RankedPages)
					}
					prev := 0
					for i, p := range d.Pages {
						k := quota.PageKey{Set: stored[0].Key.Set, Z: c.zoom, X: p.X, Y: p.Y}
						want := rank[k]
						if want > c.limit {
							want = 0 // not among the pages ranked
						}
						if seen[k] || p.Rank != want {
							t.Errorf("z%d limit %d: page %d,%d listed again (%v) or ranked %d, want %d", c.zoom, c.limit, p.X, p.Y, seen[k], p.Rank, want)
						}
						seen[k] = true
						if i > 0 && rank[k] < prev {
							t.Errorf("z%d limit %d: page %d,%d (rank %d) listed after rank %d", c.zoom, c.limit, p.X, p.Y, rank[k], prev)
						}
						prev = rank[k]
					}
					if d.Next == "" {
						if after == "" && (d.PageCount == nil || *d.PageCount != c.levelPages) {
							t.Errorf("z%d limit %d: pageCount %v, want %d", c.zoom, c.limit, d.PageCount, c.levelPages)
						}
						break
					}
					after = d.Next
				}
				if len(seen) != c.levelPages {
					t.Errorf("z%d limit %d: %d pages listed, want the level's %d", c.zoom, c.limit, len(seen), c.levelPages)
				}
			}
		})
	}
}

// getPagesFrom gets the pages of demo:world from srv.
func getPagesFrom(t *testing.T, srv, query string) pagesDoc {
	t.Helper()
	res, err := http.Get(srv + "/rest/diskquota/pages/demo:world.json?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s %v", query, res.StatusCode, body, err)
	}
	var d pagesDoc
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return d
}

// dynamoUsage is a usage store in a table of its own in the local AWS
// stack (skipped without it), and the count of items DynamoDB returned to
// its client.
func dynamoUsage(t *testing.T) (pagesStore, *atomic.Int64) {
	t.Helper()
	testenv.RequireDynamoDB(t)
	cfg, err := awsconf.Load(t.Context(), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	items := new(atomic.Int64)
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = true // DynamoDB Local
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("count-items",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleInitialize(ctx, in)
					switch r := out.Result.(type) {
					case *dynamodb.QueryOutput:
						items.Add(int64(max(r.Count, r.ScannedCount)))
					case *dynamodb.ScanOutput:
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
	table := testenv.Name(t, "pages")
	if err := dynamo.CreateTable(t.Context(), client, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table})
	})
	return dynamo.New(client, table).Usage(), items
}
