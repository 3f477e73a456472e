package app_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/grid"
	"tilecache/internal/testkit/testenv"
)

// uriLog records the request URIs (path and query) a handler answers,
// with their statuses.
type uriLog struct {
	mu   sync.Mutex
	reqs []string // "GET /path?query 200"
}

func (l *uriLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.reqs = append(l.reqs, fmt.Sprintf("%s %s %d", r.Method, r.URL.RequestURI(), sw.status))
	})
}

func (l *uriLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.reqs
	l.reqs = nil
	return out
}

// kvpApp starts the service behind a front server whose URL is the
// public one, and seeds demo:world's PNG tiles of z0 to z2 in each grid
// set of apptest.Layers.
func kvpApp(t *testing.T) (*apptest.App, *httptest.Server, *uriLog) {
	t.Helper()
	front := httptest.NewUnstartedServer(nil)
	a := apptest.Start(t, apptest.Options{Env: map[string]string{"TILECACHE_PUBLIC_URL": "http://" + front.Listener.Addr().String()}})
	var log uriLog
	front.Config.Handler = log.wrap(a.Local.Handler)
	front.Start()
	t.Cleanup(front.Close)
	for _, gs := range []string{"EPSG:900913", "EPSG:4326", "TopLeft4326"} {
		wantDone(t, seedAndWait(t, a, "demo:world", `{"seedRequest":{"gridSetId":"`+gs+`","zoomStart":0,"zoomStop":2,"format":"image/png"}}`))
	}
	log.take()
	return a, front, &log
}

// owslibKVP is a Python program: OWSLib's WebMapTileService reads the
// capabilities by KVP GetCapabilities at argv[1] and writes gettile's
// answer for argv[2..] (tile matrix set, matrix, row, column) to
// standard output; gettile takes the KVP GetTile the capabilities'
// OperationsMetadata names.
const owslibKVP = `
import sys
from owslib.wmts import WebMapTileService
url, tms, matrix, row, col = sys.argv[1:6]
wmts = WebMapTileService(url, version="1.0.0")
layer = wmts.contents["demo:world"]
assert tms in layer.tilematrixsetlinks, list(layer.tilematrixsetlinks)
kvp = [m for m in wmts.getOperationByName("GetTile").methods if any("KVP" in c.values for c in m.get("constraints", []))]
assert kvp and kvp[0]["url"].endswith("/gwc/service/wmts?"), wmts.getOperationByName("GetTile").methods
tile = wmts.gettile(layer="demo:world", tilematrixset=tms, tilematrix=matrix, row=int(row), column=int(col), format="image/png", style="default")
sys.stdout.buffer.write(tile.read())
`

// TestOWSLibReadsTilesThroughKVP: OWSLib, a real WMTS client, pointed at
// /gwc/service/wmts reads the capabilities by KVP GetCapabilities and its
// gettile, a KVP GetTile (rows from the top), answers the stored tile's
// bytes (rows from the bottom), for each grid set; every request it made
// was a KVP one.
func TestOWSLibReadsTilesThroughKVP(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what a map client (GDAL, OWSLib, OpenLayers in Chromium) makes of the served documents and tiles")
	python := testenv.RequireOWSLib(t)
	a, front, log := kvpApp(t)
	for _, tt := range []struct {
		gridSet        string
		z              int
		col, row, rows int64
	}{{"EPSG:900913", 2, 1, 0, 4}, {"EPSG:4326", 2, 6, 1, 4}, {"TopLeft4326", 2, 5, 3, 4}} {
		key := fmt.Sprintf("demo:world/%s/png/default/%d/%d/%d.png", tt.gridSet, tt.z, tt.col, tt.rows-1-tt.row)
		want, _, found := a.Get(t, key)
		if !found {
			t.Fatalf("%s not stored", key)
		}
		cmd := exec.Command(python, "-c", owslibKVP, front.URL+"/gwc/service/wmts", tt.gridSet,
			strconv.Itoa(tt.z), strconv.FormatInt(tt.row, 10), strconv.FormatInt(tt.col, 10))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: OWSLib: %v\n%s", tt.gridSet, err, stderr.String())
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: gettile row %d column %d answered %d bytes, not the %d of %s", tt.gridSet, tt.row, tt.col, len(got), len(want), key)
		}
		reqs := log.take()
		if len(reqs) != 2 || !strings.HasPrefix(reqs[0], "GET /gwc/service/wmts?") || !strings.Contains(reqs[0], "GetCapabilities") ||
			!strings.HasPrefix(reqs[1], "GET /gwc/service/wmts?") || !strings.Contains(reqs[1], "GetTile") || !strings.HasSuffix(reqs[1], " 200") {
			t.Errorf("%s: OWSLib requested %v, want the KVP GetCapabilities and GetTile", tt.gridSet, reqs)
		}
	}
}

// resourceURL matches the capabilities' ResourceURL elements.
var resourceURL = regexp.MustCompile(`<ResourceURL [^>]*>(</ResourceURL>)?`)

// TestGDALReadsTilesThroughKVP: GDAL's WMTS driver, given the layer's
// capabilities without their ResourceURL templates (so that it must use
// the KVP GetTile of OperationsMetadata), reads windows of each grid set
// at a level's own resolution: every tile of the window is the stored one
// at its place, and every tile request was a KVP GetTile of
// /gwc/service/wmts answered 200.
func TestGDALReadsTilesThroughKVP(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what a map client (GDAL, OWSLib, OpenLayers in Chromium) makes of the served documents and tiles")
	_, gdalTranslate := testenv.RequireGDAL(t)
	a, front, log := kvpApp(t)
	res, err := http.Get(front.URL + "/gwc/service/wmts?SERVICE=WMTS&REQUEST=GetCapabilities")
	if err != nil {
		t.Fatal(err)
	}
	caps, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("KVP GetCapabilities: %d %v", res.StatusCode, err)
	}
	kvpOnly := resourceURL.ReplaceAll(caps, nil)
	if bytes.Equal(kvpOnly, caps) || !bytes.Contains(kvpOnly, []byte(front.URL+"/gwc/service/wmts?")) {
		t.Fatalf("the capabilities have no ResourceURL to remove or no KVP GetTile:\n%s", caps)
	}
	capsFile := filepath.Join(t.TempDir(), "kvp.xml")
	if err := os.WriteFile(capsFile, kvpOnly, 0o644); err != nil {
		t.Fatal(err)
	}
	log.take()
	gdal := gdalRunner{env: gdalEnv(t)}
	for _, tt := range []struct {
		gridSet string
		window  grid.TileRange // y from the bottom
	}{
		{"EPSG:900913", grid.TileRange{Z: 2, MinX: 1, MinY: 1, MaxX: 3, MaxY: 2}},
		{"EPSG:4326", grid.TileRange{Z: 2, MinX: 2, MinY: 1, MaxX: 5, MaxY: 3}},
		{"TopLeft4326", grid.TileRange{Z: 2, MinX: 3, MinY: 0, MaxX: 6, MaxY: 2}},
	} {
		t.Run(tt.gridSet, func(t *testing.T) {
			g := testGridSet(t, tt.gridSet)
			w := tt.window
			box := g.RangeExtent(w)
			cols, rows := int(w.MaxX-w.MinX+1), int(w.MaxY-w.MinY+1)
			out := filepath.Join(t.TempDir(), "window.png")
			gdal.run(t, gdalTranslate, "-q", "-of", "PNG", "-r", "nearest",
				"-projwin", ftoa(box.MinX), ftoa(box.MaxY), ftoa(box.MaxX), ftoa(box.MinY),
				"-outsize", strconv.Itoa(cols*g.TileWidth), strconv.Itoa(rows*g.TileHeight),
				"WMTS:"+capsFile+",layer=demo:world,tilematrixset="+tt.gridSet, out)
			got := readPNG(t, out)
			_, gridRows := g.Size(w.Z)
			var want []string
			for x := w.MinX; x <= w.MaxX; x++ {
				for y := w.MinY; y <= w.MaxY; y++ {
					key := fmt.Sprintf("demo:world/%s/png/default/%d/%d/%d.png", tt.gridSet, w.Z, x, y)
					want = append(want, fmt.Sprintf("%d/%d/%d", w.Z, gridRows-1-y, x))
					tile := decodeTile(t, a, key, "image/png")
					ox, oy := int(x-w.MinX)*g.TileWidth, int(w.MaxY-y)*g.TileHeight
					if differ, _, _ := rgbDiff(tile, got, ox, oy); differ != 0 {
						t.Errorf("%d pixels of GDAL's image at (%d, %d) differ from the stored tile %s", differ, ox, oy, key)
					}
				}
			}
			var asked []string
			for _, r := range log.take() {
				if strings.Contains(r, "SERVICE=WMTS&REQUEST=GetCapabilities") {
					continue // the test's own, logged once answered
				}
				f := strings.Fields(r)
				u, err := url.Parse(f[1])
				if err != nil || u.Path != "/gwc/service/wmts" || f[2] != "200" {
					t.Errorf("GDAL requested %s, want only KVP requests answered 200", r)
					continue
				}
				// GDAL writes the names in mixed case.
				q := url.Values{}
				for k, v := range u.Query() {
					q[strings.ToLower(k)] = v
				}
				if q.Get("request") != "GetTile" || q.Get("tilematrixset") != tt.gridSet {
					t.Errorf("GDAL requested %s, want a GetTile of %s", r, tt.gridSet)
					continue
				}
				asked = append(asked, q.Get("tilematrix")+"/"+q.Get("tilerow")+"/"+q.Get("tilecol"))
			}
			slices.Sort(want)
			if asked = slices.Compact(slices.Sorted(slices.Values(asked))); !slices.Equal(asked, want) {
				t.Errorf("GDAL's KVP GetTiles were of %v, want %v", asked, want)
			}
		})
	}
}
