package app_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/vectortile"
)

// vectorLayers are Mapbox Vector Tile layers of the test WMS (%[1]s) and of
// an XYZ upstream (%[2]s).
const vectorLayers = `
layers:
  - name: wms:vector
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png, application/vnd.mapbox-vector-tile]
    metatiling: [4, 4]
    gutter: 8
    source: {type: wms, url: "%[1]s", layers: "polygons,lines,points", skipBlank: transparent}
  - name: xyz:vector
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [application/vnd.mapbox-vector-tile]
    metatiling: [2, 2]
    renderOnMiss: {enabled: true, zoomStop: 5}
    source: {type: xyz, url: "%[2]s/{z}/{x}/{y}.pbf", retries: -1}
  - name: xyz:hostile
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [application/vnd.mapbox-vector-tile]
    metatiling: [1, 1]
    source: {type: xyz, url: "%[2]s/hostile/{z}/{x}/{y}.pbf", retries: -1}
`

// mvtGetMap asks the WMS directly for the MVT of tile z/x/y (y from the
// bottom) of EPSG:900913.
func mvtGetMap(wmsURL string, z int, x, y int64) ([]byte, error) {
	box := tileBox("EPSG:900913", z, x, y)
	var bbox []string
	for _, c := range box {
		bbox = append(bbox, strconv.FormatFloat(c, 'f', -1, 64))
	}
	q := url.Values{
		"SERVICE": {"WMS"}, "VERSION": {"1.1.1"}, "REQUEST": {"GetMap"}, "LAYERS": {"polygons,lines,points"}, "STYLES": {""},
		"SRS": {"EPSG:900913"}, "FORMAT": {vectortile.MVT}, "WIDTH": {"256"}, "HEIGHT": {"256"}, "BBOX": {strings.Join(bbox, ",")},
		"TRANSPARENT": {"FALSE"}, "EXCEPTIONS": {"application/vnd.ogc.se_xml"},
	}
	res, err := http.Get(wmsURL + "?" + q.Encode())
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	return io.ReadAll(res.Body)
}

// ogrLayers is what GDAL's MVT driver reads from a tile: per layer, its
// feature count and its features' attributes (ogrinfo -al -geom=NO; with
// CLIP=NO, so that the features MapServer writes in the tile's buffer,
// wholly outside the tile, are read too).
func ogrLayers(t *testing.T, dir string, data []byte) (counts map[string]int, attrs string) {
	t.Helper()
	f := filepath.Join(dir, "tile.pbf")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "ogrinfo", "-ro", "-al", "-geom=NO", "-oo", "CLIP=NO", f).CombinedOutput()
	if err != nil {
		t.Fatalf("ogrinfo: %v\n%.2000s", err, out)
	}
	counts = map[string]int{}
	layer := ""
	var b strings.Builder
	for line := range strings.SplitSeq(string(out), "\n") {
		if n, ok := strings.CutPrefix(line, "Layer name: "); ok {
			layer = n
		}
		if n, ok := strings.CutPrefix(line, "Feature Count: "); ok {
			counts[layer], _ = strconv.Atoi(n)
		}
		if strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "OGRFeature") {
			b.WriteString(line + "\n") // the features' attributes, not the file's name
		}
	}
	return counts, b.String()
}

var ogrFeature = regexp.MustCompile(`(?m)^OGRFeature`)

// mvtRecorder keeps MapServer's MVT answers to GetMaps (through a
// wmsProxy) by the tile whose area the request's BBOX is (to a
// millimetre): what the seed was given for each tile it asked.
type mvtRecorder struct {
	mu     sync.Mutex
	byTile map[[3]int64][]byte
}

// record is the wmsProxy hook.
func (m *mvtRecorder) record(q url.Values, status int, contentType string, body []byte) {
	if status != http.StatusOK || contentType != vectortile.MVT || q.Get("FORMAT") != vectortile.MVT {
		return
	}
	if tile, ok := tileOfBBox(q.Get("BBOX")); ok {
		m.mu.Lock()
		m.byTile[tile] = body
		m.mu.Unlock()
	}
}

// tileOfBBox is the tile z/x/y (y from the bottom) of EPSG:900913 whose
// area a GetMap's BBOX is, to a millimetre; false if it is no tile's.
func tileOfBBox(bbox string) ([3]int64, bool) {
	var b [4]float64
	if n, _ := fmt.Sscanf(strings.ReplaceAll(bbox, ",", " "), "%g %g %g %g", &b[0], &b[1], &b[2], &b[3]); n != 4 || b[2] <= b[0] {
		return [3]int64{}, false
	}
	tb0 := tileBox("EPSG:900913", 0, 0, 0)
	z := int(math.Round(math.Log2((tb0[2] - tb0[0]) / (b[2] - b[0]))))
	span := (tb0[2] - tb0[0]) / math.Exp2(float64(z))
	x, y := int64(math.Round((b[0]-tb0[0])/span)), int64(math.Round((b[1]-tb0[1])/span))
	want := tileBox("EPSG:900913", z, x, y)
	for i := range b {
		if math.Abs(b[i]-want[i]) > 1e-3 {
			return [3]int64{}, false
		}
	}
	return [3]int64{int64(z), x, y}, true
}

// answered is MapServer's answer to the seed's GetMap of tile z/x/y.
func (m *mvtRecorder) answered(z int, x, y int64) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	body, ok := m.byTile[[3]int64{int64(z), x, y}]
	return body, ok
}

// TestVectorSeedMatchesMapServer seeds z0-6 of a Mapbox Vector Tile layer
// from the test WMS (MapServer's MVT driver): every tile is one GetMap of
// its own (the layer's 4×4 metatiling and gutter do not apply to a vector
// format), stored as MapServer answers it for that tile, with the MVT
// Content-Type; tiles without features are skipped (skipBlank). GDAL's MVT
// driver reads the same layers, feature counts and attributes from stored
// tiles as from MapServer's direct answers (every tile of z0-1 and a
// sample of z2-6), and the same counts as the walker that checked them.
func TestVectorSeedMatchesMapServer(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what MapServer's vector answers become")
	wmsURL := testenv.RequireWMS(t)
	if _, err := exec.LookPath("ogrinfo"); err != nil {
		t.Skip("ogrinfo (gdal-bin, infra/wms/install.sh) not installed")
	}
	// The seed reaches MapServer through a recorder, so that every tile
	// is compared with what MapServer answered for its area without
	// asking it twice; the tiles ogrinfo reads are asked again directly.
	rec := &mvtRecorder{byTile: map[[3]int64][]byte{}}
	proxy := newWMSProxy(t, rec.record)
	a := apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(vectorLayers, proxy.URL, "http://127.0.0.1:1"), SeedThreads: 2})
	// z0-6: 5,461 tiles.
	const zoomStop = 6
	start := time.Now()
	tasks := waitFinished(t, a, ids(seedReq(t, a, "wms:vector", fmt.Sprintf(`{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":%d,
		"format":"application/vnd.mapbox-vector-tile","threadCount":2}}`, zoomStop))), 300*time.Second)
	wantDone(t, tasks)
	t.Logf("seed z0-%d: %v", zoomStop, time.Since(start))
	prefix := "wms:vector/EPSG:900913/mapbox-vectortile/default/"
	stored := map[string]bool{}
	for _, k := range keys(t, a, prefix) {
		stored[k] = true
	}
	type tile struct {
		z    int
		x, y int64
	}
	var all []tile
	for z := range zoomStop + 1 {
		for x := range int64(1) << z {
			for y := range int64(1) << z {
				all = append(all, tile{z, x, y})
			}
		}
	}
	var (
		mu              sync.Mutex
		empty, features int
		sample          []tile
	)
	var g errgroup.Group
	g.SetLimit(4)
	asked := 0
	for i, tl := range all {
		direct, ok := rec.answered(tl.z, tl.x, tl.y)
		if ok {
			asked++
		}
		g.Go(func() error {
			if !ok {
				// The seed did not ask for this tile: MapServer's
				// direct answer says whether it should have.
				var err error
				if direct, err = mvtGetMap(wmsURL, tl.z, tl.x, tl.y); err != nil {
					return err
				}
			}
			vt, err := vectortile.Parse(direct, 0)
			if err != nil {
				return fmt.Errorf("direct GetMap of %d/%d/%d: %w", tl.z, tl.x, tl.y, err)
			}
			key := fmt.Sprintf("%s%d/%d/%d.pbf", prefix, tl.z, tl.x, tl.y)
			mu.Lock()
			defer mu.Unlock()
			if vt.Empty() {
				empty++
				if stored[key] {
					t.Errorf("%s stored; MapServer's tile has no feature (skipBlank)", key)
				}
				return nil
			}
			features += vt.Features()
			if !stored[key] {
				t.Errorf("%s not stored; MapServer's tile has %d features", key, vt.Features())
				return nil
			}
			if tl.z <= 1 || i%127 == 0 {
				sample = append(sample, tl)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(all)-empty || len(stored) == 0 {
		t.Errorf("%d tiles stored, want %d (%d of %d without features)", len(stored), len(all)-empty, empty, len(all))
	}
	if asked != len(all) {
		t.Errorf("the seed asked MapServer for %d of the %d tiles", asked, len(all))
	}
	t.Logf("%d tiles stored, %d empty skipped, %d features; comparing %d with ogrinfo", len(stored), empty, features, len(sample))
	dir := t.TempDir()
	for _, tl := range sample {
		key := fmt.Sprintf("%s%d/%d/%d.pbf", prefix, tl.z, tl.x, tl.y)
		data, meta, found := a.Get(t, key)
		if !found {
			t.Fatalf("%s vanished", key)
		}
		if meta.ContentType != vectortile.MVT || meta.ContentEncoding != "" {
			t.Errorf("%s: Content-Type %q, Content-Encoding %q; want %s, none", key, meta.ContentType, meta.ContentEncoding, vectortile.MVT)
		}
		direct, err := mvtGetMap(wmsURL, tl.z, tl.x, tl.y)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, direct) {
			t.Errorf("%s: %d bytes stored, MapServer answers %d for the tile", key, len(data), len(direct))
		}
		gotCounts, gotAttrs := ogrLayers(t, dir, data)
		if !bytes.Equal(data, direct) {
			// Which features differ: what GDAL reads from each. (Equal
			// bytes read the same, so GDAL runs once for them.)
			wantCounts, wantAttrs := ogrLayers(t, dir, direct)
			if fmt.Sprint(gotCounts) != fmt.Sprint(wantCounts) || gotAttrs != wantAttrs {
				t.Errorf("%s: ogrinfo reads %v from the stored tile, %v from MapServer's (attributes equal: %v)", key, gotCounts, wantCounts, gotAttrs == wantAttrs)
			}
		}
		vt, _ := vectortile.Parse(data, 0)
		for _, l := range vt.Layers {
			if gotCounts[l.Name] != l.Features {
				t.Errorf("%s layer %s: ogrinfo counts %d features, the walker %d", key, l.Name, gotCounts[l.Name], l.Features)
			}
		}
		if n := len(ogrFeature.FindAllString(gotAttrs, -1)); n != vt.Features() {
			t.Errorf("%s: ogrinfo lists %d features, the walker counts %d", key, n, vt.Features())
		}
	}
}

// gzipWMS is an XYZ upstream of gzip-compressed MVT tiles: each is the
// test WMS's answer for the tile, compressed and sent with
// Content-Encoding: gzip (as martin or a bucket of pre-compressed tiles
// serve them). Under /hostile/ it answers what is not a vector tile:
// z0 an HTML page, z1 a truncated protobuf, z2 a 50 MB body in column 0, else HTML.
func gzipWMS(t *testing.T, wmsURL string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var z int
		var x, yTop int64
		hostile := strings.HasPrefix(r.URL.Path, "/hostile/")
		if _, err := fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/hostile"), "/%d/%d/%d.pbf", &z, &x, &yTop); err != nil {
			http.NotFound(w, r)
			return
		}
		direct, err := mvtGetMap(wmsURL, z, x, int64(1)<<z-1-yTop)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", vectortile.MVT)
		if hostile {
			switch z {
			case 0:
				w.Header().Set("Content-Type", "text/html")
				w.Write([]byte("<html><body><h1>Service Unavailable</h1></body></html>"))
			case 1:
				w.Write(direct[:len(direct)/2])
			default:
				if x == 0 {
					w.Write(bytes.Repeat([]byte{0x1a, 0x00}, 25<<20))
				} else {
					w.Write([]byte("<html><body><h1>Service Unavailable</h1></body></html>"))
				}
			}
			return
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(direct)
		zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(buf.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestVectorServedWithEncoding: tiles an XYZ upstream sends gzip-compressed
// are stored compressed with Content-Encoding: gzip and served so by
// every path a client takes (the /tiles path, the stored key's path, the
// XYZ, WMTS and OGC API – Tiles edge paths, and a render on miss): the
// stored bytes, which decompress to the upstream's tile. TileJSON lists
// the tiles' layers and fields; OWSLib finds the format in the WMTS
// capabilities and gets MapServer's tile through them.
func TestVectorServedWithEncoding(t *testing.T) {
	t.Parallel()
	wmsURL := testenv.RequireWMS(t)
	up := gzipWMS(t, wmsURL)
	front := httptest.NewUnstartedServer(nil)
	a := apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(vectorLayers, wmsURL, up.URL), SeedThreads: 2,
		Env: map[string]string{"TILECACHE_PUBLIC_URL": "http://" + front.Listener.Addr().String()}})
	front.Config.Handler = a.Local.Handler
	front.Start()
	t.Cleanup(front.Close)
	wantDone(t, waitFinished(t, a, ids(seedReq(t, a, "xyz:vector", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":2,
		"format":"application/vnd.mapbox-vector-tile","threadCount":1}}`)), 120*time.Second))
	prefix := "xyz:vector/EPSG:900913/mapbox-vectortile/default/"
	if got := len(keys(t, a, prefix)); got != 21 {
		t.Fatalf("%d tiles stored, want 21", got)
	}
	plain := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(path string) (int, http.Header, []byte) {
		res, err := plain.Get(a.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, b
	}
	check := func(path string, want []byte) {
		t.Helper()
		status, h, got := get(path)
		if status != 200 || h.Get("Content-Type") != vectortile.MVT || h.Get("Content-Encoding") != "gzip" || !bytes.Equal(got, want) {
			t.Errorf("%s: %d %q %q, %d bytes; want 200 %s gzip with the %d stored bytes", path, status,
				h.Get("Content-Type"), h.Get("Content-Encoding"), len(got), vectortile.MVT, len(want))
		}
	}
	for _, tl := range [][3]int64{{0, 0, 0}, {2, 1, 2}, {2, 3, 0}} {
		z, x, y := int(tl[0]), tl[1], tl[2] // y from the bottom
		top := int64(1)<<z - 1 - y
		key := fmt.Sprintf("%s%d/%d/%d.pbf", prefix, z, x, y)
		data, meta, found := a.Get(t, key)
		if !found || meta.ContentEncoding != "gzip" || meta.ContentType != vectortile.MVT || !vectortile.Gzipped(data) {
			t.Fatalf("%s: found %v, meta %+v; want a gzip-compressed MVT", key, found, meta)
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(zr)
		direct, err := mvtGetMap(wmsURL, z, x, y)
		if err != nil || !bytes.Equal(raw, direct) {
			t.Errorf("%s decompresses to %d bytes, MapServer's tile is %d (%v)", key, len(raw), len(direct), err)
		}
		check(fmt.Sprintf("/tiles/xyz:vector/EPSG:900913/mapbox-vectortile/%d/%d/%d.pbf", z, x, y), data)
		check("/"+key, data)
		check(fmt.Sprintf("/xyz/xyz:vector/EPSG:900913/mapbox-vectortile/default/%d/%d/%d.pbf", z, x, top), data)
		check(fmt.Sprintf("/wmts/xyz:vector/EPSG:900913/mapbox-vectortile/default/%d/%d/%d.pbf", z, x, top), data)
		check(fmt.Sprintf("/ogcapi/collections/xyz:vector/tiles/WebMercatorQuad/%d/%d/%d.mapbox-vectortile", z, top, x), data)
	}
	// TileJSON lists the layers of the stored tiles with their fields, and
	// its tiles are the XYZ edge paths. The seed wrote the documents before
	// its tiles and again as it finished, so the first seed's TileJSON has
	// them.
	status, _, doc := get("/" + prefix + "tilejson-xyz.json")
	var tj struct {
		TileJSON     string   `json:"tilejson"`
		Format       string   `json:"format"`
		Tiles        []string `json:"tiles"`
		VectorLayers []struct {
			ID     string            `json:"id"`
			Fields map[string]string `json:"fields"`
		} `json:"vector_layers"`
	}
	if err := json.Unmarshal(doc, &tj); status != 200 || err != nil {
		t.Fatalf("tilejson-xyz.json: %d %v %.300s", status, err, doc)
	}
	var ids []string
	for _, l := range tj.VectorLayers {
		ids = append(ids, l.ID)
		if l.Fields["cls"] != "String" || l.Fields["id"] != "String" {
			t.Errorf("vector layer %s fields %v, want cls and id (MapServer writes them as strings)", l.ID, l.Fields)
		}
	}
	if tj.TileJSON != "3.0.0" || tj.Format != "pbf" || strings.Join(ids, ",") != "polygons,lines,points" ||
		len(tj.Tiles) != 1 || !strings.HasSuffix(tj.Tiles[0], "/xyz/xyz:vector/EPSG:900913/mapbox-vectortile/default/{z}/{x}/{y}.pbf") {
		t.Errorf("TileJSON: %s", doc)
	}
	// A render on miss stores and answers the compressed tile too.
	path := "/tiles/xyz:vector/EPSG:900913/mapbox-vectortile/4/9/9.pbf"
	status, h, body := get(path)
	if status != 200 || h.Get("Content-Encoding") != "gzip" || !vectortile.Gzipped(body) {
		t.Fatalf("render on miss %s: %d %q %.100q", path, status, h.Get("Content-Encoding"), body)
	}
	check(path, body)
	// OWSLib finds the vector format in the WMTS capabilities, and its
	// gettile (which decompresses, as browsers do) gives MapServer's tile.
	{
		python := testenv.RequireOWSLib(t)
		cmd := exec.Command(python, "-c", owslibVector, front.URL+"/WMTSCapabilities.xml")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("OWSLib: %v\n%s", err, stderr.String())
		}
		direct, _ := mvtGetMap(wmsURL, 2, 1, 2)
		if !bytes.Equal(got, direct) {
			t.Errorf("OWSLib gettile 2/1/1: %d bytes, MapServer's tile is %d", len(got), len(direct))
		}
	}
}

// TestVectorLayersAfterFirstSeed: the TileJSON of a vector tile set
// whose first seed (from the test WMS) just finished lists the layers of
// its tiles: the documents written when the request was made, before any
// tile, are written again as the seed ends. The WMTS capabilities and the
// TMS document do not change with the tiles.
func TestVectorLayersAfterFirstSeed(t *testing.T) {
	t.Parallel()
	wmsURL := testenv.RequireWMS(t)
	a := apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(vectorLayers, wmsURL, "http://127.0.0.1:1"), SeedThreads: 2})
	prefix := "wms:vector/EPSG:900913/mapbox-vectortile/default/"
	if _, _, found := a.Get(t, prefix+"tilejson.json"); found {
		t.Fatal("tilejson.json stored before any request")
	}
	wantDone(t, waitFinished(t, a, ids(seedReq(t, a, "wms:vector", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":2,
		"format":"application/vnd.mapbox-vector-tile","threadCount":2}}`)), 120*time.Second))
	if n := len(keys(t, a, prefix)); n < 10 {
		t.Fatalf("%d objects under %s after the seed", n, prefix)
	}
	for _, name := range []string{"tilejson.json", "tilejson-xyz.json"} {
		res, err := http.Get(a.URL + "/" + prefix + name)
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var tj struct {
			VectorLayers []struct {
				ID     string            `json:"id"`
				Fields map[string]string `json:"fields"`
			} `json:"vector_layers"`
		}
		if err := json.Unmarshal(doc, &tj); res.StatusCode != 200 || err != nil {
			t.Fatalf("%s: %d %v %.300s", name, res.StatusCode, err, doc)
		}
		var got []string
		for _, l := range tj.VectorLayers {
			got = append(got, l.ID)
			if l.Fields["cls"] != "String" {
				t.Errorf("%s: layer %s fields %v, want cls (String)", name, l.ID, l.Fields)
			}
		}
		if strings.Join(got, ",") != "polygons,lines,points" {
			t.Errorf("%s after the first seed: vector_layers %v, want polygons,lines,points: %s", name, got, doc)
		}
	}
}

// owslibVector is a Python program: OWSLib's WebMapTileService reads the
// capabilities at argv[1], checks that layer xyz:vector offers the MVT
// format, and writes its gettile of EPSG:900913 2/1/1 (row 1 from the
// top) to standard output.
const owslibVector = `
import sys
from owslib.wmts import WebMapTileService
wmts = WebMapTileService(sys.argv[1])
layer = wmts.contents["xyz:vector"]
assert "application/vnd.mapbox-vector-tile" in layer.formats, layer.formats
tile = wmts.gettile(layer="xyz:vector", tilematrixset="EPSG:900913", tilematrix="2", row=1, column=1,
    format="application/vnd.mapbox-vector-tile", style="default")
sys.stdout.buffer.write(tile.read())
`

// TestVectorHostileUpstream: an upstream answering an HTML page, a
// truncated protobuf or a 50 MB body for a vector tile fails the tile as
// a bad image does (counted against the seed's failure budget) and stores
// nothing.
func TestVectorHostileUpstream(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what MapServer's vector answers become")
	wmsURL := testenv.RequireWMS(t)
	up := gzipWMS(t, wmsURL)
	var log apptest.LogBuffer
	a := apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(vectorLayers, wmsURL, up.URL), SeedThreads: 2, Log: &log})
	tasks := waitFinished(t, a, ids(seedReq(t, a, "xyz:hostile", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":2,
		"format":"application/vnd.mapbox-vector-tile","threadCount":1,"tileFailureRetryCount":0,"tileFailureRetryWaitTime":1,
		"totalFailuresBeforeAborting":1000}}`)), 120*time.Second)
	failures, err := a.Local.Tasks.AddFailures(t.Context(), tasks[0].JobID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tasks[0].Status != task.Done || failures != 21 {
		t.Errorf("got %+v with %d failures, want DONE with 21 failures (every tile)", tasks[0], failures)
	}
	if got := keys(t, a, "xyz:hostile/"); len(got) != 0 {
		t.Errorf("stored %v, want nothing", got)
	}
	for _, want := range []string{"Service Unavailable", "not a Mapbox Vector Tile: truncated", "answer larger than"} {
		if !logHas(log.String(), "tile failure", want) {
			t.Errorf("no tile failure logged with %q:\n%.3000s", want, log.String())
		}
	}
}
