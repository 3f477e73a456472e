package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/browsertest"
	"tilecache/internal/testkit/testenv"
)

// indexEntry is what the test reads of index.json.
type indexEntry struct {
	GridSet string `json:"gridSet"`
	Tiles   string `json:"tiles"`
}

// placedTile is a tile of the page (window.demoTiles): its URL and where
// it is drawn in the viewport.
type placedTile struct {
	Src              string
	Left, Top, Width float64
	Height           float64
	Loaded           bool
}

// TestDemoPageShowsTheStoredTiles opens the demo page the program writes to
// the root of the tile store in headless Chromium: it lists the tile sets
// of index.json, requests exactly stored keys with rows counted from the
// bottom (a northern tile at z1 is y = 1), draws their pixels, and logs no
// error.
func TestDemoPageShowsTheStoredTiles(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what a map client (GDAL, OWSLib, OpenLayers in Chromium) makes of the served documents and tiles")
	testenv.RequireChromium(t)
	a := apptest.Start(t, apptest.Options{})
	for _, body := range []string{
		`{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":2,"format":"image/png"}}`,
		`{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":1,"format":"image/png"}}`,
	} {
		waitFinished(t, a, ids(seedReq(t, a, "demo:world", body)), 60*time.Second)
	}
	var entries []indexEntry
	testenv.Eventually(t, 10*time.Second, "index.json to list both tile sets and the page to be written", func() bool {
		res := a.DoAuth(t, "", "", "GET", "/index.json", "")
		var idx struct {
			TileSets []indexEntry `json:"tileSets"`
		}
		if res.Status != 200 || json.Unmarshal([]byte(res.Body), &idx) != nil || len(idx.TileSets) != 2 {
			return false
		}
		entries = idx.TileSets
		return a.DoAuth(t, "", "", "GET", "/", "").Status == 200
	})
	set := func(gridSet string) int {
		i := slices.IndexFunc(entries, func(e indexEntry) bool { return e.GridSet == gridSet })
		if i < 0 {
			t.Fatalf("index.json has no %s entry: %+v", gridSet, entries)
		}
		return i
	}
	stored := a.TileKeys(t, "demo:world/")

	merc := set("EPSG:900913")
	page := browsertest.Open(t, fmt.Sprintf("%s/#set=%d&z=1", a.URL, merc), 60*time.Second)
	page.WaitFor(t, fmt.Sprintf(`body[data-ready="%d"]`, merc))
	tiles := wantTiles(t, a, page, stored, "demo:world/EPSG:900913/png/default/1/")
	// North is up: the tiles of row 1 (y counted from the bottom) are drawn
	// above those of row 0, and the screenshot shows their pixels.
	shot := screenshot(t, page)
	var north, south []placedTile
	for _, tl := range tiles {
		if strings.HasSuffix(tl.Src, "/1.png") {
			north = append(north, tl)
		} else {
			south = append(south, tl)
		}
		wantPixels(t, a, shot, tl)
	}
	if len(north) == 0 || len(south) == 0 {
		t.Fatalf("z1 view: got tiles %+v, want northern (y=1) and southern (y=0) ones", tiles)
	}
	for _, n := range north {
		for _, s := range south {
			if n.Top >= s.Top {
				t.Errorf("northern tile %s is drawn at top %v, not above southern tile %s at %v", n.Src, n.Top, s.Src, s.Top)
			}
		}
	}

	// The same view through the edge's paths, rows counted from the top:
	// XYZ from index.json's template, WMTS from the layer's capabilities.
	for _, source := range []string{"xyz", "wmts"} {
		page.Eval(t, fmt.Sprintf(`document.body.removeAttribute("data-ready"); location.hash = "set=%d&z=1&source=%s"; ""`, merc, source))
		page.WaitFor(t, fmt.Sprintf(`body[data-ready="%d"]`, merc))
		if got := page.Eval(t, `document.getElementById("source").value`); got != source {
			t.Errorf("source selector shows %q, want %q", got, source)
		}
		shot := screenshot(t, page)
		edge := wantEdgeTiles(t, page, a.URL+"/"+source+"/demo:world/EPSG:900913/png/default/1/", 2)
		if len(edge) != len(tiles) {
			t.Errorf("%s: the page shows %d tiles, the TMS source %d", source, len(edge), len(tiles))
		}
		for _, tl := range edge {
			// rows(1) - 1 - row from the top is the key's row.
			key := "demo:world/EPSG:900913/png/default/1/" + tl.key
			if !slices.Contains(stored, key) {
				t.Errorf("%s: the page shows %s, which maps to %s, not a stored key", source, tl.Src, key)
				continue
			}
			wantPixels(t, a, shot, placedTile{Src: a.URL + "/" + key, Left: tl.Left, Top: tl.Top, Width: tl.Width, Height: tl.Height})
		}
	}

	// The EPSG:4326 grid: level 0 is two columns, one row.
	geo := set("EPSG:4326")
	page.Eval(t, fmt.Sprintf(`location.hash = "set=%d&z=0&source=tms"; ""`, geo))
	page.WaitFor(t, fmt.Sprintf(`body[data-ready="%d"]`, geo))
	tiles = wantTiles(t, a, page, stored, "demo:world/EPSG:4326/png/default/0/")
	var srcs []string
	for _, tl := range tiles {
		srcs = append(srcs, tl.Src[strings.Index(tl.Src, "/0/"):])
		wantPixels(t, a, screenshot(t, page), tl)
	}
	slices.Sort(srcs)
	if want := []string{"/0/0/0.png", "/0/1/0.png"}; !slices.Equal(srcs, want) {
		t.Errorf("EPSG:4326 z0: got tiles %q, want %q", srcs, want)
	}
	if c := page.Console(); len(c) > 0 {
		t.Errorf("the page logged errors or threw: %q", c)
	}
	for _, r := range page.Requests() {
		if !strings.HasPrefix(r.URL, a.URL+"/") && !strings.HasPrefix(r.URL, "data:") {
			t.Errorf("request to another host: %s", r.URL)
		}
	}
}

// edgeTile is a tile the page shows from an edge path (rows from the
// top) and the "x/y.png" of its stored key (rows from the bottom).
type edgeTile struct {
	placedTile
	key string
}

// wantEdgeTiles returns the tiles the page shows from the edge paths of
// level dir (rows from the top), with the key each maps to given the
// level's rows, after checking each loaded at 256×256 and that every
// such request was answered 200.
func wantEdgeTiles(t *testing.T, page *browsertest.Page, dir string, rows int64) []edgeTile {
	t.Helper()
	js := `JSON.stringify(window.demoTiles())`
	var all []placedTile
	if err := json.Unmarshal([]byte(page.Eval(t, js)), &all); err != nil {
		t.Fatal(err)
	}
	var out []edgeTile
	for _, tl := range all {
		rest, ok := strings.CutPrefix(tl.Src, dir)
		if !ok {
			continue
		}
		var x, top int64
		if _, err := fmt.Sscanf(rest, "%d/%d.png", &x, &top); err != nil || top >= rows {
			t.Errorf("the page shows %s: not a tile of %s", tl.Src, dir)
			continue
		}
		if !tl.Loaded || tl.Width != 256 || tl.Height != 256 {
			t.Errorf("tile %s: loaded %v, %v×%v px; want loaded at 256×256", tl.Src, tl.Loaded, tl.Width, tl.Height)
		}
		out = append(out, edgeTile{tl, fmt.Sprintf("%d/%d.png", x, rows-1-top)})
	}
	if len(out) == 0 {
		t.Fatalf("the page shows no tile of %s: %+v", dir, all)
	}
	for _, r := range page.Requests() {
		if strings.HasPrefix(r.URL, dir) && r.Status != 200 {
			t.Errorf("tile request %s answered %d, want only stored tiles requested", r.URL, r.Status)
		}
	}
	return out
}

// screenshot decodes a screenshot of the page's viewport.
func screenshot(t *testing.T, page *browsertest.Page) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(page.Screenshot(t)))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// wantTiles returns the tile images the page shows from level dir, after
// checking that each is a stored key and that every tile request of the
// page was answered 200 or, for a key not stored, 404.
func wantTiles(t *testing.T, a *apptest.App, page *browsertest.Page, stored []string, dir string) []placedTile {
	t.Helper()
	js := `JSON.stringify(window.demoTiles())`
	var all, out []placedTile
	if err := json.Unmarshal([]byte(page.Eval(t, js)), &all); err != nil {
		t.Fatal(err)
	}
	for _, tl := range all {
		path, err := url.PathUnescape(strings.TrimPrefix(tl.Src, a.URL+"/"))
		if err != nil || !strings.HasPrefix(path, dir) {
			continue
		}
		if !slices.Contains(stored, path) {
			t.Errorf("the page shows %s, which is not a stored key", tl.Src)
		}
		if !tl.Loaded || tl.Width != 256 || tl.Height != 256 {
			t.Errorf("tile %s: loaded %v, %v×%v px; want loaded at 256×256", tl.Src, tl.Loaded, tl.Width, tl.Height)
		}
		out = append(out, tl)
	}
	if len(out) == 0 {
		t.Fatalf("the page shows no tile of %s: %+v", dir, all)
	}
	for _, r := range page.Requests() {
		if strings.Contains(r.URL, "/demo:world/") && r.Status != 200 {
			t.Errorf("tile request %s answered %d, want only stored tiles requested", r.URL, r.Status)
		}
	}
	return out
}

// wantPixels compares the screenshot with the stored tile where the page
// draws it, on a grid of sample points inside the visible part.
func wantPixels(t *testing.T, a *apptest.App, shot image.Image, tl placedTile) {
	t.Helper()
	key, _ := url.PathUnescape(strings.TrimPrefix(tl.Src, a.URL+"/"))
	data, _, ok := a.Get(t, key)
	if !ok {
		t.Fatalf("%s not stored", key)
	}
	tile, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	comparePixels(t, shot, tile, key, tl)
}

// comparePixels compares the screenshot with a tile where the page draws
// it (tl's rectangle), on a grid of sample points inside the visible part.
func comparePixels(t *testing.T, shot, tile image.Image, key string, tl placedTile) {
	t.Helper()
	b := shot.Bounds()
	compared, differ := 0, 0
	for sy := 8; sy < 256; sy += 16 {
		for sx := 8; sx < 256; sx += 16 {
			px, py := int(math.Round(tl.Left))+sx, int(math.Round(tl.Top))+sy
			if px < b.Min.X || py < b.Min.Y || px >= b.Max.X || py >= b.Max.Y {
				continue
			}
			// Leave out the map's controls (zoom buttons, attribution) and
			// the page's header and footer.
			if (px < 60 && py < 110) || py < 40 || py > b.Max.Y-40 {
				continue
			}
			compared++
			r1, g1, b1, _ := shot.At(px, py).RGBA()
			r2, g2, b2, a2 := tile.At(sx, sy).RGBA()
			if a2 != 0xffff {
				continue // the page's background shows through
			}
			if diff(r1, r2) > 3 || diff(g1, g2) > 3 || diff(b1, b2) > 3 {
				differ++
			}
		}
	}
	if compared < 20 {
		t.Errorf("tile %s: only %d sample points visible", key, compared)
	}
	if differ > 0 {
		t.Errorf("tile %s: %d of %d sample points differ from the stored tile", key, differ, compared)
	}
}

func diff(a, b uint32) uint32 {
	a, b = a>>8, b>>8
	if a > b {
		return a - b
	}
	return b - a
}
