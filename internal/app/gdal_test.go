package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/grid"
	"tilecache/internal/testkit/testenv"
)

// TestGDALReadsSeededTilesThroughTMS opens the TMS TileMap resource
// (tilemapresource.xml) of seeded tile sets with GDAL, a real map client,
// the way a user would: gdalinfo must see the grid's CRS, size and levels,
// and gdal_translate of a window at a level's own resolution must return
// exactly the stored tiles, each at its place (y counts rows from the
// bottom, so a northern tile is the one with the higher y), fetching only
// the document and the tiles of the window.
func TestGDALReadsSeededTilesThroughTMS(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what a map client (GDAL, OWSLib, OpenLayers in Chromium) makes of the served documents and tiles")
	gdalinfo, gdalTranslate := testenv.RequireGDAL(t)
	// The documents carry absolute URLs built from the public URL. Making
	// it a front server that serves the app's own handler shows every
	// request GDAL makes.
	front := httptest.NewUnstartedServer(nil)
	// deep:world's subset starts at level 2: its document still lists
	// levels from 0, as GDAL needs.
	layers := apptest.Layers + `
  - name: deep:world
    gridSubsets:
      - gridSet: EPSG:900913
        zoomStart: 2
        zoomStop: 3
    formats: [image/png]
    source: {type: testpattern}
`
	a := apptest.Start(t, apptest.Options{Layers: layers, Env: map[string]string{"TILECACHE_PUBLIC_URL": "http://" + front.Listener.Addr().String()}})
	var reqs requestLog
	front.Config.Handler = reqs.wrap(a.Local.Handler)
	front.Start()
	t.Cleanup(front.Close)

	for _, gs := range []string{"EPSG:900913", "EPSG:4326"} {
		wantDone(t, seedAndWait(t, a, "demo:world", `{"seedRequest":{"gridSetId":"`+gs+`","zoomStart":0,"zoomStop":2,"format":"image/png"}}`))
	}
	wantDone(t, seedAndWait(t, a, "deep:world", `{"seedRequest":{"zoomStart":2,"zoomStop":2}}`))
	gdal := gdalRunner{env: gdalEnv(t)}

	// The service root lists both tile sets; GDAL shows them as subdatasets.
	reqs.reset()
	root := gdal.info(t, gdalinfo, front.URL+"/tms.xml")
	var subdatasets []string
	for k, v := range root.Metadata["SUBDATASETS"] {
		if strings.HasSuffix(k, "_NAME") {
			subdatasets = append(subdatasets, v)
		}
	}
	slices.Sort(subdatasets)
	if want := []string{front.URL + "/deep:world/EPSG:900913/png/default/tilemapresource.xml",
		front.URL + "/demo:world/EPSG:4326/png/default/tilemapresource.xml",
		front.URL + "/demo:world/EPSG:900913/png/default/tilemapresource.xml"}; !slices.Equal(subdatasets, want) {
		t.Errorf("tms.xml: got subdatasets %v, want %v", subdatasets, want)
	}
	reqs.want(t, "gdalinfo tms.xml", "/tms.xml")

	for _, tt := range []struct {
		layer, gridSet string
		epsg           int
		// windows are tile ranges (y from the bottom) read each at its
		// level's resolution.
		windows []grid.TileRange
	}{
		{"demo:world", "EPSG:900913", 3857, []grid.TileRange{
			{Z: 1, MinX: 0, MinY: 1, MaxX: 1, MaxY: 1}, // the northern half
			{Z: 2, MinX: 1, MinY: 1, MaxX: 3, MaxY: 2}, // away from the edges
		}},
		{"demo:world", "EPSG:4326", 4326, []grid.TileRange{
			{Z: 0, MinX: 0, MinY: 0, MaxX: 1, MaxY: 0}, // the world
			{Z: 2, MinX: 0, MinY: 2, MaxX: 7, MaxY: 3}, // the northern half
		}},
		{"deep:world", "EPSG:900913", 3857, []grid.TileRange{
			{Z: 2, MinX: 0, MinY: 2, MaxX: 3, MaxY: 3}, // the northern half of its first level
		}},
	} {
		t.Run(tt.layer+" "+tt.gridSet, func(t *testing.T) {
			g, ok := grid.Builtin(tt.gridSet)
			if !ok {
				t.Fatalf("no built-in grid set %s", tt.gridSet)
			}
			dir := tt.layer + "/" + tt.gridSet + "/png/default/"
			doc := front.URL + "/" + dir + "tilemapresource.xml"

			if tt.layer == "demo:world" { // whole-world subsets of every level
				reqs.reset()
				wantGDALInfo(t, gdal.info(t, gdalinfo, doc), g, tt.epsg)
				reqs.want(t, "gdalinfo", "/"+dir+"tilemapresource.xml")
			}

			for _, w := range tt.windows {
				box := g.RangeExtent(w)
				cols, rows := int(w.MaxX-w.MinX+1), int(w.MaxY-w.MinY+1)
				out := filepath.Join(t.TempDir(), "window.png")
				reqs.reset()
				gdal.run(t, gdalTranslate, "-q", "-of", "PNG", "-r", "nearest",
					"-projwin", ftoa(box.MinX), ftoa(box.MaxY), ftoa(box.MaxX), ftoa(box.MinY),
					"-outsize", strconv.Itoa(cols*g.TileWidth), strconv.Itoa(rows*g.TileHeight),
					doc, out)
				got := readPNG(t, out)
				if b := got.Bounds(); b.Dx() != cols*g.TileWidth || b.Dy() != rows*g.TileHeight {
					t.Fatalf("z%d window: GDAL wrote %v, want %d×%d tiles", w.Z, b, cols, rows)
				}
				wantPaths := []string{"/" + dir + "tilemapresource.xml"}
				digests := map[[32]byte]string{}
				for x := w.MinX; x <= w.MaxX; x++ {
					for y := w.MinY; y <= w.MaxY; y++ {
						key := fmt.Sprintf("%s%d/%d/%d.png", dir, w.Z, x, y)
						wantPaths = append(wantPaths, "/"+key)
						tile := decodeTile(t, a, key, "image/png")
						// Row w.MaxY is the top of GDAL's image.
						ox, oy := int(x-w.MinX)*g.TileWidth, int(w.MaxY-y)*g.TileHeight
						differ, skipped, digest := rgbDiff(tile, got, ox, oy)
						if differ != 0 {
							t.Errorf("z%d: %d pixels of GDAL's image at (%d, %d) differ from the stored tile %s", w.Z, differ, ox, oy, key)
						}
						if skipped != 0 {
							t.Logf("%s: %d pixels not opaque, not compared (GDAL reads red, green and blue only)", key, skipped)
						}
						// Tiles that look alike would hide a misplaced one.
						if other, dup := digests[digest]; dup {
							t.Fatalf("tiles %s and %s are identical: the comparison cannot tell places apart", other, key)
						}
						digests[digest] = key
					}
				}
				reqs.want(t, fmt.Sprintf("gdal_translate of z%d", w.Z), wantPaths...)
			}
		})
	}
}

// gdalInfo is the part of `gdalinfo -json` the test reads.
type gdalInfo struct {
	Driver           string `json:"driverShortName"`
	Size             [2]int `json:"size"`
	CoordinateSystem struct {
		WKT string `json:"wkt"`
	} `json:"coordinateSystem"`
	Corners struct {
		UpperLeft  [2]float64 `json:"upperLeft"`
		LowerRight [2]float64 `json:"lowerRight"`
	} `json:"cornerCoordinates"`
	Bands []struct {
		Block     [2]int `json:"block"`
		Colour    string `json:"colorInterpretation"`
		Overviews []struct {
			Size [2]int `json:"size"`
		} `json:"overviews"`
	} `json:"bands"`
	Metadata map[string]map[string]string `json:"metadata"`
}

// wantGDALInfo checks what GDAL sees in the TileMap of a whole-world
// subset of g: its CRS, the extent, red, green and blue bands of g's tiles,
// and a full resolution and overviews that are g's levels. GDAL keeps the
// raster under 2³¹ pixels a side, so its full resolution is the deepest
// level that fits, and each overview is the level above the previous one.
func wantGDALInfo(t *testing.T, info gdalInfo, g *grid.GridSet, epsg int) {
	t.Helper()
	if info.Driver != "WMS" {
		t.Errorf("driver: got %q, want WMS (GDAL's TMS reader)", info.Driver)
	}
	if wkt := strings.TrimSpace(info.CoordinateSystem.WKT); !strings.HasSuffix(wkt, fmt.Sprintf(`ID["EPSG",%d]]`, epsg)) {
		t.Errorf("CRS: got %.80q…, want EPSG:%d", wkt, epsg)
	}
	size := func(z int) [2]int {
		cols, rows := g.Size(z)
		return [2]int{int(cols) * g.TileWidth, int(rows) * g.TileHeight}
	}
	full := g.Levels() - 1
	for s := size(full); s[0] >= math.MaxInt32 || s[1] >= math.MaxInt32; s = size(full) {
		full--
	}
	if info.Size != size(full) {
		t.Errorf("size: got %v, want %v (level %d)", info.Size, size(full), full)
	}
	e := g.Extent
	ul, lr := info.Corners.UpperLeft, info.Corners.LowerRight
	if tol := 1e-9 * e.Width(); math.Abs(ul[0]-e.MinX) > tol || math.Abs(ul[1]-e.MaxY) > tol || math.Abs(lr[0]-e.MaxX) > tol || math.Abs(lr[1]-e.MinY) > tol {
		t.Errorf("corners: got %v %v, want the grid's extent %+v", ul, lr, e)
	}
	if len(info.Bands) != 3 {
		t.Fatalf("got %d bands, want 3 (red, green, blue)", len(info.Bands))
	}
	for i, b := range info.Bands {
		if want := []string{"Red", "Green", "Blue"}[i]; b.Colour != want || b.Block != [2]int{g.TileWidth, g.TileHeight} {
			t.Errorf("band %d: got %s in blocks of %v, want %s in blocks of %d×%d", i+1, b.Colour, b.Block, want, g.TileWidth, g.TileHeight)
		}
		var got, want [][2]int
		for _, o := range b.Overviews {
			got = append(got, o.Size)
		}
		for z := full - 1; z >= 0; z-- {
			want = append(want, size(z))
		}
		if !slices.Equal(got, want) {
			t.Errorf("band %d overviews: got %v, want levels %d to 0: %v", i+1, got, full-1, want)
		}
	}
}

// rgbDiff compares tile with the area of img whose top-left pixel is at
// (ox, oy): it counts the opaque pixels of tile whose red, green or blue
// differ, and the pixels of tile that are not opaque, which it does not
// compare (GDAL's TMS reader has no alpha band). digest sums up tile's
// pixels.
func rgbDiff(tile, img image.Image, ox, oy int) (differ, skipped int, digest [32]byte) {
	h := sha256.New()
	b := tile.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.NRGBAModel.Convert(tile.At(x, y)).(color.NRGBA)
			h.Write([]byte{c.R, c.G, c.B, c.A})
			if c.A != 0xff {
				skipped++
				continue
			}
			g := color.NRGBAModel.Convert(img.At(ox+x-b.Min.X, oy+y-b.Min.Y)).(color.NRGBA)
			if g.R != c.R || g.G != c.G || g.B != c.B {
				differ++
			}
		}
	}
	h.Sum(digest[:0])
	return differ, skipped, digest
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return img
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// gdalEnv returns the environment of GDAL's programs: no cache of tiles
// (GDAL's WMS driver may keep one under the home directory, which would
// hide requests), nothing written beside the outputs, a bounded wait, and
// no proxy between GDAL and the test servers.
func gdalEnv(t *testing.T) []string {
	return append(os.Environ(),
		"GDAL_ENABLE_WMS_CACHE=NO",
		"GDAL_DEFAULT_WMS_CACHE_PATH="+t.TempDir(),
		"GDAL_PAM_ENABLED=NO",
		"GDAL_HTTP_TIMEOUT=20",
		"NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1",
	)
}

type gdalRunner struct{ env []string }

// run runs a GDAL program for at most a minute and returns its output.
func (r gdalRunner) run(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = r.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	t.Logf("%s %s (%v)", filepath.Base(bin), strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if stderr.Len() > 0 {
		t.Errorf("%s wrote to stderr: %s", filepath.Base(bin), stderr.String())
	}
	return stdout.Bytes()
}

// info runs `gdalinfo -json` on url.
func (r gdalRunner) info(t *testing.T, gdalinfo, url string) gdalInfo {
	t.Helper()
	var info gdalInfo
	out := r.run(t, gdalinfo, "-json", url)
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("gdalinfo -json %s: %v: %.300s", url, err, out)
	}
	return info
}

// requestLog records the requests a handler answers.
type requestLog struct {
	mu   sync.Mutex
	reqs []string // "GET /path 200"
}

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.reqs = append(l.reqs, fmt.Sprintf("%s %s %d", r.Method, r.URL.Path, sw.status))
	})
}

func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = nil
}

// want checks that the requests since the last reset were successful GETs
// of exactly paths, in any order and each at least once.
func (l *requestLog) want(t *testing.T, what string, paths ...string) {
	t.Helper()
	l.mu.Lock()
	got := slices.Clone(l.reqs)
	l.mu.Unlock()
	want := make([]string, len(paths))
	for i, p := range paths {
		want[i] = "GET " + p + " 200"
	}
	slices.Sort(want)
	seen := slices.Compact(slices.Sorted(slices.Values(got)))
	if !slices.Equal(seen, want) {
		t.Errorf("%s requested %v, want %v", what, got, want)
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
