package tilearchive_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"image/color"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/archive"
	"tilecache/internal/archive/archivetest"
	"tilecache/internal/archive/mbtiles"
	"tilecache/internal/archive/pmtiles"
	"tilecache/internal/archive/rangeread"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/source/tilearchive"
	"tilecache/internal/source/upstream"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

var quadColours = [4]color.RGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {255, 255, 0, 255}}

// layerOf parses one layer named "a" with the given source mapping.
func layerOf(t *testing.T, gridSet, format, src string) (*layer.Layer, error) {
	t.Helper()
	cat, err := layer.Parse([]byte(fmt.Sprintf(`
layers:
  - name: a
    gridSubsets: [{gridSet: %s}]
    formats: [%s]
    metatiling: [2, 2]
    source: %s
`, gridSet, format, src)), "test")
	if err != nil {
		return nil, err
	}
	l, _ := cat.Layer("a")
	return l, nil
}

func newSource(t *testing.T, format, src string, sh upstream.Shared, objs rangeread.Objects) *tilearchive.Source {
	t.Helper()
	return newSourceAccess(t, format, src, sh, tilearchive.Access{Objects: objs, OpenMBTiles: openMBTiles})
}

func openMBTiles(ctx context.Context, path string) (archive.Reader, error) {
	return mbtiles.Open(ctx, path)
}

func newSourceAccess(t *testing.T, format, src string, sh upstream.Shared, a tilearchive.Access) *tilearchive.Source {
	t.Helper()
	l, err := layerOf(t, "EPSG:900913", format, src)
	if err != nil {
		t.Fatal(err)
	}
	s, err := tilearchive.New(l, sh, a)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// render renders the metatile of level z whose tiles are x0..x0+1 and
// rows (from the top) y0..y0+1, and returns its tiles by z/x/y from the
// top.
func render(t *testing.T, s source.Source, format string, z int, x0, y0 int64) (map[archivetest.Tile]source.Tile, error) {
	t.Helper()
	g, _ := grid.Builtin(grid.EPSG900913)
	rows := int64(1) << z
	x1, y1 := min(x0+1, rows-1), min(y0+1, rows-1)
	tiles, err := s.Render(context.Background(), source.Request{Layer: "a", GridSet: g, Z: z, Format: format,
		Tiles: grid.TileRange{Z: z, MinX: x0, MaxX: x1, MinY: rows - 1 - y1, MaxY: rows - 1 - y0}})
	if err != nil {
		return nil, err
	}
	out := map[archivetest.Tile]source.Tile{}
	for _, tl := range tiles {
		out[archivetest.Tile{Z: z, X: tl.X, Y: rows - 1 - tl.Y}] = tl
	}
	return out, nil
}

// checkEqual renders every tile of levels 0..maxZ and compares it with
// the archive's own, byte for byte; tiles the archive lacks must come
// out blank.
func checkEqual(t *testing.T, s source.Source, r archive.Reader, format string, maxZ int) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for z := 0; z <= maxZ; z++ {
		for y := int64(0); y < 1<<z; y += 2 {
			for x := int64(0); x < 1<<z; x += 2 {
				got, err := render(t, s, format, z, x, y)
				if err != nil {
					t.Fatalf("render %d/%d/%d: %v", z, x, y, err)
				}
				for k, tl := range got {
					want, ok, err := r.Tile(ctx, k.Z, k.X, k.Y)
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						if tl.Data != nil && archivetest.DecodeRGBA(t, tl.Data, 10, 10).A != 0 {
							t.Errorf("tile %v: not in the archive, rendered not transparent", k)
						}
						continue
					}
					if !bytes.Equal(tl.Data, want) {
						t.Errorf("tile %v: %d bytes, the archive's has %d", k, len(tl.Data), len(want))
					}
					n++
				}
			}
		}
	}
	return n
}

// A world image GDAL cut into an MBTiles file is read as a layer's
// source: every tile GDAL wrote comes out byte for byte.
func TestGDALMBTilesAsSource(t *testing.T) {
	gdal := archivetest.RequireGDAL(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "world.png")
	if err := os.WriteFile(src, archivetest.Quadrants(1024, quadColours), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gdal.mbtiles")
	const m = "20037508.342789244"
	gdal.Run(t, gdal.Translate, "-q", "-of", "MBTiles", "-a_srs", "EPSG:3857",
		"-a_ullr", "-"+m, m, m, "-"+m, "-co", "TILE_FORMAT=PNG", src, path)
	gdal.Run(t, "gdaladdo", "-q", "-r", "average", path, "2", "4")
	r, err := mbtiles.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	s := newSource(t, "image/png", `{type: mbtiles, url: "`+path+`"}`, upstream.Shared{}, nil)
	if n := checkEqual(t, s, r, "image/png", 3); n != 1+4+16 {
		t.Errorf("%d tiles of GDAL's came out, want 21 (levels 0-2)", n)
	}
	// Where MBTiles are not read (the tile function), a miss says so.
	ns := newSourceAccess(t, "image/png", `{type: mbtiles, url: "`+path+`"}`, upstream.Shared{}, tilearchive.Access{})
	if _, err := render(t, ns, "image/png", 0, 0, 0); err == nil || !strings.Contains(err.Error(), "seed the layer") {
		t.Errorf("MBTiles where they are not read: %v", err)
	}
	// Another format is encoded again from the archive's pixels.
	js := newSource(t, "image/jpeg", `{type: mbtiles, url: "`+path+`"}`, upstream.Shared{}, nil)
	got, err := render(t, js, "image/jpeg", 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := archivetest.DecodeRGBA(t, got[archivetest.Tile{Z: 1, X: 0, Y: 0}].Data, 128, 128); c.R < 200 || c.G > 60 || c.B > 60 {
		t.Errorf("level 1's north-west tile as JPEG is %v, want red", c)
	}
}

// writePMTiles writes a PMTiles of solid PNG tiles of levels 0..2 but
// for a few, and returns its bytes.
func writePMTiles(t *testing.T) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := pmtiles.Create("", &out, pmtiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	i := 0
	for z := 0; z <= 2; z++ {
		for y := int64(0); y < 1<<z; y++ {
			for x := int64(0); x < 1<<z; x++ {
				if i++; i%7 == 3 {
					continue // missing: blank
				}
				if err := w.Put(ctx, z, x, y, archivetest.SolidPNG(color.RGBA{byte(40 * z), byte(x * 60), byte(y * 60), 255})); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := w.Close(ctx, archive.Metadata{Format: "png", MaxZoom: 2, Bounds: [4]float64{-180, -85, 180, 85}}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestPMTilesFileAndHTTP(t *testing.T) {
	b := writePMTiles(t)
	path := filepath.Join(t.TempDir(), "a.pmtiles")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := pmtiles.Open(context.Background(), pmtiles.ReaderAt(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	fs := newSource(t, "image/png", `{type: pmtiles, url: "`+path+`"}`, upstream.Shared{}, nil)
	if n := checkEqual(t, fs, r, "image/png", 3); n != 18 {
		t.Errorf("file: %d tiles came out, want 18", n)
	}

	var served atomic.Pointer[[]byte]
	served.Store(&b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b := *served.Load()
		w.Header().Set("ETag", fmt.Sprintf(`"%x"`, sha256.Sum256(b)))
		http.ServeContent(w, req, "a.pmtiles", time.Time{}, bytes.NewReader(b))
	}))
	defer srv.Close()
	// What TILECACHE_UPSTREAM_ALLOW=127.0.0.0/8 gives every layer: the
	// address policy of any upstream refuses loopback by default.
	allow := upstream.Shared{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	hs := newSource(t, "image/png", `{type: pmtiles, url: "`+srv.URL+`/a.pmtiles", retries: -1}`, allow, nil)
	if n := checkEqual(t, hs, r, "image/png", 3); n != 18 {
		t.Errorf("https: %d tiles came out, want 18", n)
	}
	// The archive is replaced by another (a new ETag): it is opened again
	// and its tiles served.
	b = writeOther(t)
	served.Store(&b)
	r2, err := pmtiles.Open(context.Background(), pmtiles.ReaderAt(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	if n := checkEqual(t, hs, r2, "image/png", 1); n != 5 {
		t.Errorf("after the archive was replaced: %d tiles came out, want 5", n)
	}

	refused := newSource(t, "image/png", `{type: pmtiles, url: "`+srv.URL+`/a.pmtiles", retries: -1}`, upstream.Shared{}, nil)
	if _, err := render(t, refused, "image/png", 0, 0, 0); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("loopback archive with the default address policy: %v", err)
	}
}

// writeOther writes a PMTiles of five white tiles (levels 0 and 1).
func writeOther(t *testing.T) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := pmtiles.Create("", &out, pmtiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	white := archivetest.SolidPNG(color.RGBA{255, 255, 255, 255})
	for _, k := range []archivetest.Tile{{Z: 0}, {Z: 1}, {Z: 1, X: 1}, {Z: 1, Y: 1}, {Z: 1, X: 1, Y: 1}} {
		if err := w.Put(ctx, k.Z, k.X, k.Y, white); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx, archive.Metadata{Format: "png", MaxZoom: 1}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// Definitions a source refuses, each with a message naming the problem.
func TestBadDefinitions(t *testing.T) {
	for name, c := range map[string]struct{ gridSet, format, src, msg string }{
		"no url":            {"EPSG:900913", "image/png", `{type: pmtiles}`, "url is required"},
		"scheme":            {"EPSG:900913", "image/png", `{type: pmtiles, url: "ftp://h/a.pmtiles"}`, `scheme "ftp"`},
		"s3 without bucket": {"EPSG:900913", "image/png", `{type: pmtiles, url: "s3://only-bucket"}`, "not s3://bucket/key"},
		"s3 embedded":       {"EPSG:900913", "image/png", `{type: pmtiles, url: "s3://b/a.pmtiles"}`, "only on the AWS backend"},
		"mbtiles https":     {"EPSG:900913", "image/png", `{type: mbtiles, url: "https://h.example/a.mbtiles"}`, "only PMTiles is read from a web server"},
		"geographic grid":   {"EPSG:4326", "image/png", `{type: pmtiles, url: "/a.pmtiles"}`, "grid set EPSG:4326 is not the Web Mercator pyramid"},
		"unknown option":    {"EPSG:900913", "image/png", `{type: pmtiles, url: "/a.pmtiles", layers: x}`, "layers"},
	} {
		l, err := layerOf(t, c.gridSet, c.format, c.src)
		if err == nil {
			_, err = tilearchive.New(l, upstream.Shared{}, tilearchive.Access{})
		}
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.msg)
		}
	}
	// A missing file is reported at the first render, naming it.
	s := newSource(t, "image/png", `{type: pmtiles, url: "/nonexistent/a.pmtiles"}`, upstream.Shared{}, nil)
	if _, err := render(t, s, "image/png", 0, 0, 0); err == nil || !strings.Contains(err.Error(), "/nonexistent/a.pmtiles") {
		t.Errorf("missing file: %v", err)
	}
	// Raster tiles cannot make vector tiles.
	path := filepath.Join(t.TempDir(), "a.pmtiles")
	if err := os.WriteFile(path, writeOther(t), 0o600); err != nil {
		t.Fatal(err)
	}
	vs := newSource(t, "application/vnd.mapbox-vector-tile", `{type: pmtiles, url: "`+path+`"}`, upstream.Shared{}, nil)
	if _, err := render(t, vs, "application/vnd.mapbox-vector-tile", 0, 0, 0); err == nil || !strings.Contains(err.Error(), "holds png tiles") {
		t.Errorf("raster archive for a vector layer: %v", err)
	}
}

// Archives in a bucket: a PMTiles read with ranged GETs, an MBTiles
// copied to a temporary file first; both give the archive's tiles.
func TestS3Archives(t *testing.T) {
	store, bucket := archivetest.S3Bucket(t)
	ctx := context.Background()
	pm := writePMTiles(t)
	if err := store.Put(ctx, "archives/a.pmtiles", pm, tilestore.Meta{}); err != nil {
		t.Fatal(err)
	}
	r, err := pmtiles.Open(ctx, pmtiles.ReaderAt(bytes.NewReader(pm)))
	if err != nil {
		t.Fatal(err)
	}
	ps := newSource(t, "image/png", `{type: pmtiles, url: "s3://`+bucket+`/archives/a.pmtiles"}`, upstream.Shared{}, store)
	if n := checkEqual(t, ps, r, "image/png", 2); n != 18 {
		t.Errorf("PMTiles: %d tiles came out, want 18", n)
	}

	path := filepath.Join(t.TempDir(), "a.mbtiles")
	w, err := mbtiles.Create(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Tiles(ctx, func(z int, x, y int64, data []byte) error { return w.Put(ctx, z, x, y, data) })
	if err == nil {
		err = w.Close(ctx, archive.Metadata{Format: "png", MaxZoom: 2})
	}
	if err != nil {
		t.Fatal(err)
	}
	mb, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, "archives/a.mbtiles", mb, tilestore.Meta{}); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the copy of the MBTiles goes
	ms := newSource(t, "image/png", `{type: mbtiles, url: "s3://`+bucket+`/archives/a.mbtiles"}`, upstream.Shared{}, store)
	if n := checkEqual(t, ms, r, "image/png", 2); n != 18 {
		t.Errorf("MBTiles: %d tiles came out, want 18", n)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 1 {
		t.Errorf("the MBTiles was copied to %d temporary files, want 1", len(entries))
	}
	// A source dropped (a layer changed) closes its archive and removes
	// the copy.
	ms = nil
	testenv.Eventually(t, 10*time.Second, "the dropped source's copy to be removed", func() bool {
		runtime.GC()
		entries, _ := os.ReadDir(tmp)
		return len(entries) == 0
	})
	missing := newSource(t, "image/png", `{type: pmtiles, url: "s3://`+bucket+`/archives/none.pmtiles"}`, upstream.Shared{}, store)
	if _, err := render(t, missing, "image/png", 0, 0, 0); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing object: %v", err)
	}
}
