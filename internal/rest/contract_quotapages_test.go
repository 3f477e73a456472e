package rest_test

// GET /rest/diskquota/pages/{layer}.json, an extension of this project:
// the disk quota's page table of one tile set's level, as the usage store
// holds it, with each page's place in the clean-up's order.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/quota"
	"tilecache/internal/testenv"
)

type pagesDoc struct {
	Layer          string `json:"layer"`
	GridSet        string `json:"gridSet"`
	Format         string `json:"format"`
	Parameters     string `json:"parameters"`
	Zoom           int    `json:"zoom"`
	Policy         string `json:"policy"`
	QuotaScope     string `json:"quotaScope"`
	PageSize       int    `json:"pageSize"`
	PageCount      int    `json:"pageCount"`
	LayerPageCount int    `json:"layerPageCount"`
	Truncated      bool   `json:"truncated"`
	Pages          []struct {
		X, Y       int64
		TileRange  [4]int64   `json:"tileRange"`
		Bounds     [4]float64 `json:"bounds"`
		Tiles      int64      `json:"tiles"`
		Bytes      int64      `json:"bytes"`
		Hits       int64      `json:"hits"`
		Created    *time.Time `json:"created"`
		LastAccess *time.Time `json:"lastAccess"`
		Rank       int        `json:"rank"`
	} `json:"pages"`
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
		if d.Policy != policy || d.LayerPageCount != len(stored) || d.PageCount != len(want) || len(d.Pages) != len(want) || d.Truncated {
			t.Fatalf("z%d %s: got policy %s, %d of %d pages (layer %d), truncated %v; want %d of the store's %d pages",
				z, policy, d.Policy, len(d.Pages), d.PageCount, d.LayerPageCount, d.Truncated, len(want), len(stored))
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

	// limit: the lowest ranks, and truncated.
	lim := getPages(t, a, "gridSet=EPSG:4326&format=image/png&zoom=7&limit=2")
	if len(lim.Pages) != 2 || !lim.Truncated || lim.PageCount != 4 || lim.Pages[0].Rank != d.Pages[0].Rank || lim.Pages[1].Rank != d.Pages[1].Rank {
		t.Errorf("limit=2: got %d pages (of %d), truncated %v", len(lim.Pages), lim.PageCount, lim.Truncated)
	}
	if e := getPages(t, a, "gridSet=EPSG:900913&format=image/jpeg&zoom=3"); len(e.Pages) != 0 || e.PageCount != 0 || e.Pages == nil {
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
