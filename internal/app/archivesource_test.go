package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/color"
	"image/png"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/archive"
	"tilecache/internal/archive/archivetest"
	"tilecache/internal/archive/mbtiles"
	"tilecache/internal/archive/pmtiles"
	"tilecache/internal/archive/rangeread"
	"tilecache/internal/source/upstream"
	"tilecache/internal/testkit/browsertest"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

// TestArchiveSource: a layer whose source is an MBTiles file GDAL wrote
// is seeded from it, every stored tile the archive's bytes under the key
// of its row from the bottom; a layer whose source is a PMTiles file
// renders a miss from it, the answer the archive's tile.
func TestArchiveSource(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "reading an archive as a source")
	gdal := archivetest.RequireGDAL(t)
	dir := t.TempDir()
	world := filepath.Join(dir, "world.png")
	if err := os.WriteFile(world, archivetest.Quadrants(512, [4]color.RGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {255, 255, 0, 255}}), 0o600); err != nil {
		t.Fatal(err)
	}
	mbPath := filepath.Join(dir, "gdal.mbtiles")
	const m = "20037508.342789244"
	gdal.Run(t, gdal.Translate, "-q", "-of", "MBTiles", "-a_srs", "EPSG:3857", "-a_ullr", "-"+m, m, m, "-"+m, world, mbPath)

	pmPath := filepath.Join(dir, "a.pmtiles")
	var pm bytes.Buffer
	w, err := pmtiles.Create("", &pm, pmtiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for x := range int64(4) {
		for y := range int64(4) {
			if err := w.Put(ctx, 2, x, y, archivetest.SolidPNG(color.RGBA{byte(60 * x), byte(60 * y), 99, 255})); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(ctx, archive.Metadata{Format: "png", MinZoom: 2, MaxZoom: 2}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pmPath, pm.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	a := apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(`
layers:
  - name: arc:mb
    gridSubsets: [{gridSet: EPSG:900913, zoomStop: 1}]
    formats: [image/png]
    metatiling: [2, 2]
    source: {type: mbtiles, url: %q}
  - name: arc:pm
    gridSubsets: [{gridSet: EPSG:900913, zoomStop: 2}]
    formats: [image/png]
    metatiling: [2, 2]
    renderOnMiss: {enabled: true}
    source: {type: pmtiles, url: %q}
`, mbPath, pmPath)})

	// Seeding copies GDAL's tiles into the cache, byte for byte.
	wantDone(t, seedAndWait(t, a, "arc:mb", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`))
	prefix := "arc:mb/EPSG:900913/png/default/"
	if got, want := keys(t, a, prefix), upKeys(1+4)(prefix); !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	r, err := mbtiles.Open(ctx, mbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	err = r.Tiles(ctx, func(z int, x, y int64, data []byte) error {
		if z > 1 {
			return nil
		}
		n++
		got, _, _ := a.Get(t, fmt.Sprintf("%s%d/%d/%d.png", prefix, z, x, int64(1)<<z-1-y))
		if !bytes.Equal(got, data) {
			return fmt.Errorf("tile %d/%d/%d: stored %d bytes, GDAL's has %d", z, x, y, len(got), len(data))
		}
		return nil
	})
	if err != nil || n != 4 { // level 1 (GDAL writes no overview unless asked)
		t.Fatalf("compared %d of GDAL's tiles: %v", n, err)
	}

	// A miss renders from the PMTiles file.
	pr, err := pmtiles.Open(ctx, pmtiles.ReaderAt(bytes.NewReader(pm.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := pr.Tile(ctx, 2, 1, 3) // row 3 from the top: row 0 from the bottom
	status, _, body := getTile(t, a.URL, "/tiles/arc:pm/EPSG:900913/png/2/1/0.png")
	if status != 200 || !bytes.Equal(body, want) {
		t.Fatalf("miss of 2/1/0: %d, %d bytes; want 200 with the archive's %d bytes", status, len(body), len(want))
	}
}

// TestServePMTiles: a tile set's PMTiles in the store (under archives/,
// tilestore.ArchiveKey) is served as the CDN serves the bucket: range
// requests answered 206 with Content-Range and an ETag (304 to
// If-None-Match), CORS exposing the range headers, the stored
// Cache-Control; read through range requests (ours, and the pmtiles
// JavaScript library's) it gives every tile of the archive; index.json
// lists it for its tile set; a private layer's archive is not served.
func TestServePMTiles(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "serving an archive with range requests")
	ctx := context.Background()
	var pm bytes.Buffer
	w, err := pmtiles.Create("", &pm, pmtiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set := map[archivetest.Tile][]byte{}
	for z := range 3 {
		for x := range int64(1) << z {
			for y := range int64(1) << z {
				set[archivetest.Tile{Z: z, X: x, Y: y}] = archivetest.SolidPNG(color.RGBA{byte(80 * z), byte(60 * x), byte(60 * y), 255})
			}
		}
	}
	for k, data := range set {
		if err := w.Put(ctx, k.Z, k.X, k.Y, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx, archive.Metadata{Format: "png", MaxZoom: 2}); err != nil {
		t.Fatal(err)
	}
	a := apptest.Start(t, apptest.Options{Layers: privateLayers, Env: map[string]string{"TILECACHE_TILE_TOKEN_KEYS": privateKeys}})
	key := tilestore.ArchiveKey("demo:world", "EPSG:900913", "png", "default")
	// topp:states is private: a tile token opens its tiles, not a whole
	// archive of them.
	privateKey := tilestore.ArchiveKey("topp:states", "EPSG:900913", "png", "default")
	a.Put(t, privateKey, pm.Bytes(), tilestore.Meta{ContentType: "application/vnd.pmtiles"})
	if res := a.DoAuth(t, "", "", "GET", "/"+privateKey, ""); res.Status != 404 {
		t.Errorf("a private layer's archive: %d, want 404", res.Status)
	}
	a.Put(t, key, pm.Bytes(), tilestore.Meta{ContentType: "application/vnd.pmtiles", CacheControl: "public, max-age=600"})
	wantDone(t, seedAndWait(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":0,"format":"image/png"}}`))

	url := a.URL + "/" + key
	res := a.DoAuth(t, "", "", "GET", "/"+key, "", "Range", "bytes=0-126", "Origin", "https://map.example")
	if res.Status != 206 || len(res.Body) != 127 || res.Header.Get("Content-Range") != fmt.Sprintf("bytes 0-126/%d", pm.Len()) ||
		res.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "Content-Range") ||
		res.Header.Get("Cache-Control") != "public, max-age=600" || res.Header.Get("Content-Type") != "application/vnd.pmtiles" {
		t.Fatalf("range of the header: %d, %d bytes, %v", res.Status, len(res.Body), res.Header)
	}
	etag := res.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if res := a.DoAuth(t, "", "", "GET", "/"+key, "", "If-None-Match", etag); res.Status != 304 {
		t.Errorf("If-None-Match of the current ETag: %d, want 304", res.Status)
	}
	c, err := upstream.NewClient(upstream.HTTPOptions{Retries: -1, Addresses: upstream.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := pmtiles.Open(ctx, rangeread.NewHTTP(c, url))
	if err != nil {
		t.Fatal(err)
	}
	archivetest.CheckReader(t, r, set)
	pmtilesLibraryReads(t, url, set)

	testenv.Eventually(t, 10*time.Second, "index.json to list the archive", func() bool {
		res := a.DoAuth(t, "", "", "GET", "/index.json", "")
		return res.Status == 200 && strings.Contains(res.Body, `"pmtiles":"./archives/demo:world/EPSG:900913/png/default.pmtiles"`)
	})
	// The tile set's TileJSON names it too.
	res = a.DoAuth(t, "", "", "GET", "/demo:world/EPSG:900913/png/default/tilejson.json", "")
	var tj struct {
		PMTiles string `json:"pmtiles"`
	}
	if res.Status != 200 || json.Unmarshal([]byte(res.Body), &tj) != nil || !strings.HasSuffix(tj.PMTiles, "/"+key) {
		t.Errorf("tilejson.json: %d, pmtiles %q, want the archive's URL (…/%s)", res.Status, tj.PMTiles, key)
	}
	demoPageReadsArchive(t, a, set)
	if res := a.DoAuth(t, "", "", "GET", "/archives/none.pmtiles", ""); res.Status != 404 {
		t.Errorf("a missing archive: %d, want 404", res.Status)
	}
}

// pmtilesLibraryReads reads every tile of set, and one absent, from the
// archive at url with the pmtiles JavaScript library (its fetch source:
// range requests checked by ETag) and compares them byte for byte.
func pmtilesLibraryReads(t *testing.T, url string, set map[archivetest.Tile][]byte) {
	t.Helper()
	node, lib := testenv.RequirePMTilesJS(t)
	var in strings.Builder
	want := map[string]string{"3/0/0": "missing"}
	for k, data := range set {
		fmt.Fprintf(&in, "%d %d %d\n", k.Z, k.X, k.Y)
		sum := sha256.Sum256(data)
		want[fmt.Sprintf("%d/%d/%d", k.Z, k.X, k.Y)] = hex.EncodeToString(sum[:])
	}
	in.WriteString("3 0 0\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/pmtiles-fetch.mjs", lib, url)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node pmtiles-fetch.mjs: %v\n%s", err, out)
	}
	got := map[string]string{}
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		id, sum, _ := strings.Cut(strings.TrimSpace(line), " ")
		got[id] = sum
	}
	if !maps.Equal(got, want) {
		t.Errorf("the pmtiles library read %d tiles %v, want %d", len(got), got, len(want))
	}
}

// demoPageReadsArchive opens the demo page on the archive of demo:world's
// Web Mercator tile set (source=pmtiles) in headless Chromium: it draws
// the archive's tiles of level 1 (rows from the top), read with range
// requests by the pmtiles library, not the stored ones.
func demoPageReadsArchive(t *testing.T, a *apptest.App, set map[archivetest.Tile][]byte) {
	t.Helper()
	testenv.RequireChromium(t)
	res := a.DoAuth(t, "", "", "GET", "/index.json", "")
	var idx struct {
		TileSets []struct {
			Layer, GridSet, PMTiles string
		} `json:"tileSets"`
	}
	if err := json.Unmarshal([]byte(res.Body), &idx); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(idx.TileSets, func(e struct{ Layer, GridSet, PMTiles string }) bool { return e.PMTiles != "" })
	if i < 0 {
		t.Fatalf("index.json lists no archive: %s", res.Body)
	}
	page := browsertest.Open(t, fmt.Sprintf("%s/#set=%d&z=1&source=pmtiles", a.URL, i), 60*time.Second)
	page.WaitFor(t, fmt.Sprintf(`body[data-ready="%d"]`, i))
	if got := page.Eval(t, `document.getElementById("source").value`); got != "pmtiles" {
		t.Fatalf("source selector shows %q, want pmtiles", got)
	}
	var tiles []placedTile
	if err := json.Unmarshal([]byte(page.Eval(t, `JSON.stringify(window.demoTiles())`)), &tiles); err != nil {
		t.Fatal(err)
	}
	shot := screenshot(t, page)
	shown := 0
	for _, tl := range tiles {
		var z int
		var x, y int64
		if _, err := fmt.Sscanf(tl.Src, "pmtiles:%d/%d/%d", &z, &x, &y); err != nil || z != 1 {
			t.Errorf("the page shows %s, want pmtiles:1/x/y", tl.Src)
			continue
		}
		data, ok := set[archivetest.Tile{Z: z, X: x, Y: y}]
		if !ok {
			t.Errorf("the page shows %s, which the archive does not hold", tl.Src)
			continue
		}
		if !tl.Loaded {
			t.Errorf("tile %s not loaded", tl.Src)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		comparePixels(t, shot, img, tl.Src, tl)
		shown++
	}
	if shown == 0 {
		t.Fatalf("the page shows no tile of the archive: %+v", tiles)
	}
	reads := 0
	for _, r := range page.Requests() {
		switch {
		case strings.HasPrefix(r.URL, a.URL+"/demo:world/"):
			t.Errorf("the page asked for stored tile %s while showing the archive", r.URL)
		case strings.HasPrefix(r.URL, a.URL+"/archives/"):
			reads++
		}
	}
	if reads == 0 {
		t.Error("the page drew the archive's tiles without reading the archive")
	}
}
