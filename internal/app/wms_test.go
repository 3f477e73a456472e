package app_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

// wmsLayers are layers drawn by the project's test WMS (MapServer, see
// infra/wms), whose address replaces %[1]s.
const wmsLayers = `
layers:
  - name: wms:world
    gridSubsets: [{gridSet: EPSG:900913}, {gridSet: EPSG:4326}]
    formats: [image/png, image/png8, image/jpeg]
    metatiling: [4, 4]
    source:
      type: wms
      url: %[1]s
      layers: hillshade,polygons,lines,points
      jpegQuality: 90
  - name: wms:tiff
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: wms, url: %[1]s, layers: "hillshade,polygons,lines,points", format: image/tiff}
  - name: wms:world13
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    gutter: 8
    source:
      type: wms
      version: 1.3.0
      url: %[1]s
      layers: hillshade,polygons,lines
  - name: wms:styled
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [2, 2]
    parameterFilters:
      - {key: STYLES, default: red, values: [red, blue]}
      - {key: CLS, default: "", regex: "[0-5]"}
    source: {type: wms, url: %[1]s, layers: styled}
  - name: wms:sparse
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [2, 2]
    source: {type: wms, url: %[1]s, layers: sparse, transparent: true, skipBlank: transparent}
  - name: wms:broken
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: wms, url: %[1]s, layers: nosuchlayer, retries: -1}
`

func startWMS(t *testing.T) (*apptest.App, string) {
	t.Helper()
	u := testenv.RequireWMS(t)
	return apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(wmsLayers, u), SeedThreads: 4}), u
}

// tileBox returns the extent of tile z/x/y (y from the bottom) of the
// built-in grid sets, computed here independently of the grid package.
func tileBox(gridSet string, z int, x, y int64) [4]float64 {
	if gridSet == "EPSG:4326" {
		span := 180 / math.Exp2(float64(z))
		return [4]float64{-180 + float64(x)*span, -90 + float64(y)*span, -180 + float64(x+1)*span, -90 + float64(y+1)*span}
	}
	const half = 20037508.34
	span := 2 * half / math.Exp2(float64(z))
	return [4]float64{-half + float64(x)*span, -half + float64(y)*span, -half + float64(x+1)*span, -half + float64(y+1)*span}
}

// getMap asks the WMS directly (version 1.1.1) for an image of box.
func getMap(t *testing.T, wmsURL, layers, srs string, box [4]float64, w, h int, extra url.Values) image.Image {
	t.Helper()
	q := url.Values{
		"SERVICE": {"WMS"}, "VERSION": {"1.1.1"}, "REQUEST": {"GetMap"}, "LAYERS": {layers}, "STYLES": {""},
		"SRS": {srs}, "FORMAT": {"image/png"}, "WIDTH": {strconv.Itoa(w)}, "HEIGHT": {strconv.Itoa(h)},
	}
	var bbox []string
	for _, c := range box {
		bbox = append(bbox, strconv.FormatFloat(c, 'f', -1, 64))
	}
	q.Set("BBOX", strings.Join(bbox, ","))
	for k, v := range extra {
		q[k] = v
	}
	res, err := http.Get(wmsURL + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	img, _, err := image.Decode(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("direct GetMap %s: %v: %.300s", q.Encode(), err, body)
	}
	return img
}

// pixelDiff compares a tile with the area of ref whose top-left pixel is
// at (ox, oy): it returns the mean absolute difference per channel (0–255)
// and the largest one, over non-premultiplied RGBA.
func pixelDiff(tile, ref image.Image, ox, oy int) (mean float64, worst int) {
	b := tile.Bounds()
	var sum, n int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c1 := color.NRGBAModel.Convert(tile.At(x, y)).(color.NRGBA)
			c2 := color.NRGBAModel.Convert(ref.At(ox+x-b.Min.X, oy+y-b.Min.Y)).(color.NRGBA)
			for _, d := range []int{int(c1.R) - int(c2.R), int(c1.G) - int(c2.G), int(c1.B) - int(c2.B), int(c1.A) - int(c2.A)} {
				d = max(d, -d)
				sum += d
				worst = max(worst, d)
			}
			n += 4
		}
	}
	return float64(sum) / float64(n), worst
}

// jpegError returns the mean difference that encoding the 256² area of ref
// at (ox, oy) with image/jpeg at quality q causes.
func jpegError(t *testing.T, ref image.Image, ox, oy, q int) float64 {
	t.Helper()
	area := image.NewRGBA(image.Rect(0, 0, 256, 256))
	draw.Draw(area, area.Bounds(), ref, image.Pt(ox, oy), draw.Src)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, area, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	mean, _ := pixelDiff(img, ref, ox, oy)
	return mean
}

func decodeTile(t *testing.T, a *apptest.App, key, wantType string) image.Image {
	t.Helper()
	data, meta, found := a.Get(t, key)
	if !found {
		t.Fatalf("tile %s not stored", key)
	}
	if meta.ContentType != wantType {
		t.Errorf("%s: Content-Type %q, want %q", key, meta.ContentType, wantType)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("tile %s does not decode: %v", key, err)
	}
	if b := img.Bounds(); b.Dx() != 256 || b.Dy() != 256 {
		t.Fatalf("tile %s is %v, want 256×256", key, b)
	}
	return img
}

func seedAndWait(t *testing.T, a *apptest.App, layer, body string) []task.Task {
	t.Helper()
	rows := seedReq(t, a, layer, body)
	return waitFinished(t, a, ids(rows), 90*time.Second)
}

func wantDone(t *testing.T, tasks []task.Task) {
	t.Helper()
	for _, tk := range tasks {
		if tk.Status != task.Done || tk.Done != tk.Total {
			t.Errorf("task %d: %s with %d/%d tiles, want DONE with all", tk.ID, tk.Status, tk.Done, tk.Total)
		}
	}
}

// TestWMSSeedFormatsMatchUpstream seeds png, png8 and jpeg tiles from the
// WMS and compares them pixel by pixel with a direct GetMap of the same
// metatile area.
func TestWMSSeedFormatsMatchUpstream(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what the WMS source asks upstream and the image encoders make of its answers")
	a, wmsURL := startWMS(t)
	const layers = "hillshade,polygons,lines,points"
	for _, f := range []struct {
		mime, id, ext, stored string
		meanTol               float64
		worstTol              int
	}{
		{"image/png", "png", "png", "image/png", 0, 0},
		{"image/png8", "png8", "png", "image/png", 4, 80},
		{"image/jpeg", "jpeg", "jpeg", "image/jpeg", 0, 255}, // tolerance: see check
	} {
		t.Run(f.id, func(t *testing.T) {
			// z3 metatile x 4..7, y 0..3 (y from the bottom): the direct
			// GetMap is 1024² of its whole area. The seed covers that
			// area (a metre inside its edges) at z0-3: four GetMaps,
			// whose metatiles are stored whole (1 + 4 + 16 + 16 tiles).
			box := tileBox("EPSG:900913", 3, 4, 0)
			box2 := tileBox("EPSG:900913", 3, 7, 3)
			wantDone(t, seedAndWait(t, a, "wms:world", fmt.Sprintf(`{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":3,
				"bounds":{"coords":{"double":[%f,%f,%f,%f]}},"format":"`+f.mime+`","threadCount":2}}`, box[0]+1, box[1]+1, box2[2]-1, box2[3]-1)))
			prefix := "wms:world/EPSG:900913/" + f.id + "/default/"
			if got := len(keys(t, a, prefix)); got != 1+4+16+16 {
				t.Fatalf("%d tiles stored, want 37", got)
			}
			ref := getMap(t, wmsURL, layers, "EPSG:900913", [4]float64{box[0], box[1], box2[2], box2[3]}, 1024, 1024, nil)
			check := func(name string, tile, ref image.Image, ox, oy int) {
				t.Helper()
				meanTol := f.meanTol
				if f.id == "jpeg" {
					// As close as the standard library's own JPEG of
					// the upstream's pixels at the same quality.
					meanTol = 1.2*jpegError(t, ref, ox, oy, 90) + 0.5
				}
				mean, worst := pixelDiff(tile, ref, ox, oy)
				if mean > meanTol || worst > f.worstTol {
					t.Errorf("tile %s: mean difference %.3f (worst %d), want ≤ %.2f (≤ %d)", name, mean, worst, meanTol, f.worstTol)
				}
			}
			for _, xy := range [][2]int64{{4, 0}, {5, 3}, {7, 1}, {6, 2}} {
				tile := decodeTile(t, a, fmt.Sprintf("%s3/%d/%d.%s", prefix, xy[0], xy[1], f.ext), f.stored)
				check(fmt.Sprintf("3/%d/%d", xy[0], xy[1]), tile, ref, int(xy[0]-4)*256, int(3-xy[1])*256)
			}
			// z0 is one 256² GetMap of the whole grid.
			ref0 := getMap(t, wmsURL, layers, "EPSG:900913", tileBox("EPSG:900913", 0, 0, 0), 256, 256, nil)
			check("0/0/0", decodeTile(t, a, prefix+"0/0/0."+f.ext, f.stored), ref0, 0, 0)
		})
	}
}

// TestWMSSeedFromTIFF seeds PNG tiles from uncompressed TIFF GetMaps
// (decoded without a copy) and wants exactly the pixels of a PNG GetMap of
// the same area: both are lossless renderings of the same map.
func TestWMSSeedFromTIFF(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what the WMS source asks upstream and the image encoders make of its answers")
	a, wmsURL := startWMS(t)
	// The seed covers the z3 metatile x 0..3, y 4..7 (a metre inside its
	// edges) at z0-3: four GetMaps, whose metatiles are stored whole
	// (1 + 4 + 16 + 16 tiles).
	box, box2 := tileBox("EPSG:900913", 3, 0, 4), tileBox("EPSG:900913", 3, 3, 7)
	wantDone(t, seedAndWait(t, a, "wms:tiff", fmt.Sprintf(`{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":3,
		"bounds":{"coords":{"double":[%f,%f,%f,%f]}},"format":"image/png","threadCount":2}}`, box[0]+1, box[1]+1, box2[2]-1, box2[3]-1)))
	prefix := "wms:tiff/EPSG:900913/png/default/"
	if got := len(keys(t, a, prefix)); got != 37 {
		t.Fatalf("%d tiles stored, want 37", got)
	}
	ref := getMap(t, wmsURL, "hillshade,polygons,lines,points", "EPSG:900913", [4]float64{box[0], box[1], box2[2], box2[3]}, 1024, 1024, nil)
	for _, xy := range [][2]int64{{0, 4}, {1, 7}, {3, 5}, {2, 6}} {
		tile := decodeTile(t, a, fmt.Sprintf("%s3/%d/%d.png", prefix, xy[0], xy[1]), "image/png")
		if mean, worst := pixelDiff(tile, ref, int(xy[0])*256, int(7-xy[1])*256); worst != 0 {
			t.Errorf("tile 3/%d/%d differs from the PNG GetMap: mean %.3f, worst %d", xy[0], xy[1], mean, worst)
		}
	}
}

// TestWMS130AxisOrderAndGutter seeds through WMS 1.3.0 in EPSG:4326 (lat,
// lon axis order) with a gutter, and compares with 1.1.1 (lon, lat) direct
// requests of the same area.
func TestWMS130AxisOrderAndGutter(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what the WMS source asks upstream and the image encoders make of its answers")
	a, wmsURL := startWMS(t)
	wantDone(t, seedAndWait(t, a, "wms:world13", `{"seedRequest":{"zoomStart":2,"zoomStop":2}}`))
	prefix := "wms:world13/EPSG:4326/png/default/"
	if got := len(keys(t, a, prefix)); got != 32 {
		t.Fatalf("%d tiles stored, want 32", got)
	}
	// Metatile x 4..7, y 0..3 at z2 (8×4 tiles of 45°): a gutter of 8 px on
	// its west side only (the others are the grid's edges).
	res := 45.0 / 256
	ref := getMap(t, wmsURL, "hillshade,polygons,lines", "EPSG:4326", [4]float64{-8 * res, -90, 180, 90}, 1024+8, 1024, nil)
	for _, xy := range [][2]int64{{4, 0}, {5, 3}, {7, 2}} {
		tile := decodeTile(t, a, fmt.Sprintf("%s2/%d/%d.png", prefix, xy[0], xy[1]), "image/png")
		// MapServer's resampling differs by at most 1 between the two
		// versions; swapped axes would draw another place entirely.
		if mean, worst := pixelDiff(tile, ref, 8+int(xy[0]-4)*256, int(3-xy[1])*256); mean > 0.01 || worst > 1 {
			t.Errorf("tile 2/%d/%d: mean difference %.3f (worst %d) from the 1.1.1 GetMap, want ≤ 0.01 (≤ 1)", xy[0], xy[1], mean, worst)
		}
	}
}

// TestWMSReseedAndTruncate: reseed overwrites every tile, truncate removes
// exactly its range.
func TestWMSReseedAndTruncate(t *testing.T) {
	t.Parallel()
	a, _ := startWMS(t)
	prefix := "wms:world/EPSG:4326/png/default/"
	wantDone(t, seedAndWait(t, a, "wms:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2}}`))
	if got := keys(t, a, prefix); !slices.Equal(got, expectKeys(prefix, 0, 2, "png")) {
		t.Fatalf("seeded keys %v", got)
	}
	// Replace every tile with a marker: a reseed must overwrite all of them,
	// a seed none.
	marker := []byte("not a tile")
	for _, k := range keys(t, a, prefix) {
		a.Put(t, k, marker, tilestore.Meta{ContentType: "image/png"})
	}
	wantDone(t, seedAndWait(t, a, "wms:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2}}`))
	if data, _, _ := a.Get(t, prefix+"2/3/1.png"); !bytes.Equal(data, marker) {
		t.Fatalf("seed overwrote an existing tile")
	}
	wantDone(t, seedAndWait(t, a, "wms:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2,"type":"reseed"}}`))
	for _, k := range keys(t, a, prefix) {
		data, _, _ := a.Get(t, k)
		if _, err := png.Decode(bytes.NewReader(data)); err != nil {
			t.Fatalf("after reseed %s is not a PNG: %v", k, err)
		}
	}
	// Truncate the eastern hemisphere of z2 only.
	wantDone(t, seedAndWait(t, a, "wms:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":2,"zoomStop":2,"type":"truncate",
		"bounds":{"coords":{"double":[0,-90,180,90]}}}}`))
	var want []string
	for _, k := range expectKeys(prefix, 0, 2, "png") {
		var z, x, y int
		fmt.Sscanf(strings.TrimPrefix(k, prefix), "%d/%d/%d.png", &z, &x, &y)
		if z == 2 && x >= 4 {
			continue
		}
		want = append(want, k)
	}
	if got := keys(t, a, prefix); !slices.Equal(got, want) {
		t.Fatalf("after truncate:\ngot  %v\nwant %v", got, want)
	}
}

// TestWMSParametersReachUpstream: STYLES and an arbitrary filter key (CLS)
// are sent to the WMS and the tiles land under the parameters' id.
func TestWMSParametersReachUpstream(t *testing.T) {
	t.Parallel()
	a, wmsURL := startWMS(t)
	wantDone(t, seedAndWait(t, a, "wms:styled", `{"seedRequest":{"zoomStart":1,"zoomStop":1}}`))
	wantDone(t, seedAndWait(t, a, "wms:styled", `{"seedRequest":{"zoomStart":1,"zoomStop":1,
		"parameters":{"entry":[{"string":["STYLES","blue"]},{"string":["CLS","2"]}]}}}`))
	id := tilestore.ParametersID(map[string]string{"STYLES": "blue", "CLS": "2"})
	def := "wms:styled/EPSG:4326/png/default/"
	blue := "wms:styled/EPSG:4326/png/" + id + "/"
	if got := len(keys(t, a, def)); got != 8 {
		t.Fatalf("%d default tiles, want 8", got)
	}
	if got := len(keys(t, a, blue)); got != 8 {
		t.Fatalf("%d tiles under %s, want 8", got, blue)
	}
	apart := 0.0
	for _, x := range []int64{0, 1, 2, 3} {
		box := tileBox("EPSG:4326", 1, x, 1)
		refDef := getMap(t, wmsURL, "styled", "EPSG:4326", box, 256, 256, url.Values{"STYLES": {"red"}})
		refBlue := getMap(t, wmsURL, "styled", "EPSG:4326", box, 256, 256, url.Values{"STYLES": {"blue"}, "CLS": {"2"}})
		key := fmt.Sprintf("1/%d/1.png", x)
		tDef, tBlue := decodeTile(t, a, def+key, "image/png"), decodeTile(t, a, blue+key, "image/png")
		// A tile of a 2×2 metatile and a single-tile GetMap differ by
		// antialiasing at most; the two parameter sets differ by far more.
		if m, w := pixelDiff(tDef, refDef, 0, 0); m > 0.05 {
			t.Errorf("default tile %s differs from STYLES=red by %.3f (worst %d)", key, m, w)
		}
		if m, w := pixelDiff(tBlue, refBlue, 0, 0); m > 0.05 {
			t.Errorf("parameter tile %s differs from STYLES=blue&CLS=2 by %.3f (worst %d)", key, m, w)
		}
		m, _ := pixelDiff(tDef, tBlue, 0, 0)
		apart += m
	}
	if apart < 1 {
		t.Errorf("the parameters changed the tiles by %.3f in all: they did not reach the upstream", apart)
	}
}

// TestWMSBlankTilesSkipped: fully transparent tiles of a sparse layer are
// not stored but count as processed; the others match the upstream.
func TestWMSBlankTilesSkipped(t *testing.T) {
	t.Parallel()
	a, wmsURL := startWMS(t)
	tasks := seedAndWait(t, a, "wms:sparse", `{"seedRequest":{"zoomStart":0,"zoomStop":3}}`)
	wantDone(t, tasks)
	var done int64
	for _, tk := range tasks {
		done += tk.Done
	}
	if done != 2+8+32+128 {
		t.Errorf("%d tiles processed, want all 170", done)
	}
	prefix := "wms:sparse/EPSG:4326/png/default/"
	stored := keys(t, a, prefix)
	if len(stored) == 0 || len(stored) >= 170 {
		t.Fatalf("%d tiles stored of 170: want only the non-blank ones", len(stored))
	}
	// Every tile of the grid is either stored and equal to the upstream's
	// picture of it, or absent and fully transparent upstream.
	for z := range 4 {
		for x := range int64(2) << z {
			for y := range int64(1) << z {
				key := fmt.Sprintf("%s%d/%d/%d.png", prefix, z, x, y)
				ref := getMap(t, wmsURL, "sparse", "EPSG:4326", tileBox("EPSG:4326", z, x, y), 256, 256, url.Values{"TRANSPARENT": {"TRUE"}})
				if !slices.Contains(stored, key) {
					if c, uniform := uniformColour(ref); !uniform || c.A != 0 {
						t.Errorf("%s skipped but the upstream draws something there", key)
					}
					continue
				}
				tile := decodeTile(t, a, key, "image/png")
				if m, w := pixelDiff(tile, ref, 0, 0); m > 0.5 || w > 64 {
					// Labels-free polygons: a metatile and a single tile
					// GetMap draw the same pixels, up to antialiasing at
					// the seams.
					t.Errorf("%s differs from the upstream's tile by %.3f (worst %d)", key, m, w)
				}
			}
		}
	}
}

func uniformColour(img image.Image) (color.NRGBA, bool) {
	b := img.Bounds()
	first := color.NRGBAModel.Convert(img.At(b.Min.X, b.Min.Y)).(color.NRGBA)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA); c != first {
				return first, false
			}
		}
	}
	return first, true
}

// TestWMSUpstreamErrorIsTileFailure: a service exception aborts the task
// by default, and with a failure budget is counted and skipped; nothing is
// stored either way, and the upstream's message is in the log.
func TestWMSUpstreamErrorIsTileFailure(t *testing.T) {
	t.Parallel()
	u := testenv.RequireWMS(t)
	var log apptest.LogBuffer
	a := apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(wmsLayers, u), SeedThreads: 4, Log: &log})
	// MapServer's ServiceException for a layer it does not have.
	const upstreamMsg = "Invalid layer(s) given in the LAYERS parameter"
	tasks := seedAndWait(t, a, "wms:broken", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`)
	if tasks[0].Status != task.Aborted {
		t.Errorf("got %+v, want ABORTED on the first failure", tasks[0])
	}
	if !logHas(log.String(), "level=ERROR", "task aborted on tile failure", "wms:broken", upstreamMsg) {
		t.Errorf("no ERROR record of the abort with the upstream's message %q in the log:\n%s", upstreamMsg, log.String())
	}
	tasks = seedAndWait(t, a, "wms:broken", `{"seedRequest":{"zoomStart":0,"zoomStop":1,"tileFailureRetryCount":0,
		"tileFailureRetryWaitTime":1,"totalFailuresBeforeAborting":100}}`)
	failures, err := a.Local.Tasks.AddFailures(t.Context(), tasks[0].JobID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tasks[0].Status != task.Done || failures != 10 {
		t.Errorf("got %+v with %d failures, want DONE with 10 failures counted", tasks[0], failures)
	}
	if !logHas(log.String(), "level=WARN", "tile failure: metatile skipped", "budget=100", upstreamMsg) {
		t.Errorf("no WARN record of a counted failure with the upstream's message in the log:\n%s", log.String())
	}
	tasks = seedAndWait(t, a, "wms:broken", `{"seedRequest":{"zoomStart":0,"zoomStop":1,"tileFailureRetryCount":1,
		"tileFailureRetryWaitTime":1,"totalFailuresBeforeAborting":5}}`)
	if tasks[0].Status != task.Aborted {
		t.Errorf("got %+v, want ABORTED once the budget of 5 is spent", tasks[0])
	}
	if got := keys(t, a, "wms:broken/"); len(got) != 0 {
		t.Errorf("stored %v, want nothing", got)
	}
}

// logHas reports whether one line of log has every one of parts.
func logHas(log string, parts ...string) bool {
	for line := range strings.SplitSeq(log, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
