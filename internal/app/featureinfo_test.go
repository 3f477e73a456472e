package app_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/grid"
	"tilecache/internal/testkit/testenv"
)

// featureInfoUpstream is a WMS on 127.0.0.1: GetMap answers a blank
// PNG of the size asked, GetFeatureInfo a text naming the request's
// layers, box and pixel, or (at pixel 13, 13) a 500 whose body holds
// secretWord; it counts the GetFeatureInfo requests.
func featureInfoUpstream(t *testing.T, gfi *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := url.Values{}
		for k, v := range r.URL.Query() {
			q[strings.ToUpper(k)] = v
		}
		switch q.Get("REQUEST") {
		case "GetMap":
			wd, _ := strconv.Atoi(q.Get("WIDTH"))
			ht, _ := strconv.Atoi(q.Get("HEIGHT"))
			w.Header().Set("Content-Type", "image/png")
			png.Encode(w, image.NewNRGBA(image.Rect(0, 0, wd, ht)))
		case "GetFeatureInfo":
			gfi.Add(1)
			if q.Get("X") == "13" && q.Get("Y") == "13" {
				http.Error(w, "failure at "+secretWord, http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", q.Get("INFO_FORMAT")+"; charset=utf-8")
			fmt.Fprintf(w, "features of %s at %s,%s in %s %s (%s)\n", q.Get("QUERY_LAYERS"), q.Get("X"), q.Get("Y"), q.Get("BBOX"), q.Get("SRS"), q.Get("INFO_FORMAT"))
		default:
			http.Error(w, "no", http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

const secretWord = "s3cr3t-w0rd"

// featureInfoLayers: info passes GetFeatureInfo to its WMS (whose URL
// holds credentials), noinfo does not (the default).
const featureInfoLayers = `
layers:
  - name: info
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [1, 1]
    featureInfo: true
    source: {type: wms, url: "http://user:%[2]s@%[1]s/wms?key=%[2]s", layers: roads, allowPrivateUpstream: true}
  - name: noinfo
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: wms, url: "http://%[1]s/wms", layers: roads, allowPrivateUpstream: true}
`

// owslibWMSFeatureInfo is a Python program: OWSLib's WebMapService reads
// the WMS-C capabilities at argv[1] and writes getfeatureinfo's answer
// for layer argv[2], SRS argv[3], box argv[4] and pixel argv[5], argv[6]
// of a 256×256 map to standard output.
const owslibWMSFeatureInfo = `
import sys
from owslib.wms import WebMapService
url, layer, srs, bbox, i, j = sys.argv[1:7]
wms = WebMapService(url, version="1.1.1")
assert wms[layer].queryable == 1, wms[layer].queryable
r = wms.getfeatureinfo(layers=[layer], styles=[""], srs=srs, bbox=tuple(float(v) for v in bbox.split(",")), size=(256, 256),
    format="image/png", query_layers=[layer], info_format="text/plain", xy=(int(i), int(j)))
sys.stdout.buffer.write(r.read())
`

// TestFeatureInfoPassedToTheUpstream: a GetFeatureInfo of a stored
// tile's pixel, by WMS (OWSLib's WebMapService on /gwc/service/wms, the
// box one tile) and by WMTS KVP, is the upstream's own answer for the
// same pixel of the tile's GetMap box; a layer that does not allow it, a
// pixel outside the tile and a failing upstream are answered without
// asking it or without its words; its credentials are never echoed.
func TestFeatureInfoPassedToTheUpstream(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what a map client (GDAL, OWSLib, OpenLayers in Chromium) makes of the served documents and tiles")
	python := testenv.RequireOWSLib(t)
	var gfi atomic.Int64
	up := featureInfoUpstream(t, &gfi)
	host := strings.TrimPrefix(up.URL, "http://")
	front := httptest.NewUnstartedServer(nil)
	a := apptest.Start(t, apptest.Options{Env: map[string]string{"TILECACHE_PUBLIC_URL": "http://" + front.Listener.Addr().String()},
		Layers: fmt.Sprintf(featureInfoLayers, host, secretWord)})
	front.Config.Handler = a.Local.Handler
	front.Start()
	t.Cleanup(front.Close)
	for _, l := range []string{"info", "noinfo"} {
		wantDone(t, seedAndWait(t, a, l, `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":1,"format":"image/png"}}`))
	}
	g, _ := grid.Builtin("EPSG:900913")
	e := g.TileExtent(1, 1, 0) // z1, column 1, row 0 from the bottom (TILEROW 1)
	box := strings.Join([]string{ftoa(e.MinX), ftoa(e.MinY), ftoa(e.MaxX), ftoa(e.MaxY)}, ",")
	direct := func(i, j int) []byte {
		res, err := http.Get(up.URL + "/wms?SERVICE=WMS&VERSION=1.1.1&REQUEST=GetFeatureInfo&LAYERS=roads&QUERY_LAYERS=roads&SRS=EPSG:900913&BBOX=" +
			box + "&WIDTH=256&HEIGHT=256&X=" + strconv.Itoa(i) + "&Y=" + strconv.Itoa(j) + "&INFO_FORMAT=text/plain")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return b
	}
	want := direct(200, 10)
	before := gfi.Load()

	cmd := exec.Command(python, "-c", owslibWMSFeatureInfo, front.URL+"/gwc/service/wms", "info", "EPSG:900913", box, "200", "10")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("OWSLib: %v\n%s", err, stderr.String())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("OWSLib's getfeatureinfo answered %q, the upstream's own answer is %q", got, want)
	}

	get := func(uri string) (int, string, string) {
		res, err := http.Get(front.URL + uri)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), string(b)
	}
	kvp := "/gwc/service/wmts?SERVICE=WMTS&REQUEST=GetFeatureInfo&VERSION=1.0.0&LAYER=%s&STYLE=default&FORMAT=image/png" +
		"&TILEMATRIXSET=EPSG:900913&TILEMATRIX=1&TILEROW=1&TILECOL=1&I=%d&J=%d&INFOFORMAT=text/plain"
	if status, ct, body := get(fmt.Sprintf(kvp, "info", 200, 10)); status != 200 || body != string(want) || !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("WMTS KVP GetFeatureInfo: %d %s %q, want 200 and the upstream's %q", status, ct, body, want)
	}
	asked := gfi.Load() - before
	for _, c := range []struct {
		uri, want string
		status    int
	}{
		{fmt.Sprintf(kvp, "noinfo", 200, 10), `exceptionCode="OperationNotSupported"`, 501},
		{fmt.Sprintf(kvp, "info", 256, 10), `exceptionCode="PointIJOutOfRange"`, 400},
		{fmt.Sprintf(kvp, "info", 200, 10) + "&TILEROW=9", "", 400},
		{"/gwc/service/wms?SERVICE=WMS&VERSION=1.1.1&REQUEST=GetFeatureInfo&LAYERS=noinfo&QUERY_LAYERS=noinfo&STYLES=&FORMAT=image/png&SRS=EPSG:900913&BBOX=" +
			box + "&WIDTH=256&HEIGHT=256&X=1&Y=1&INFO_FORMAT=text/plain", `code="OperationNotSupported"`, 400},
		{"/gwc/service/wms?SERVICE=WMS&VERSION=1.1.1&REQUEST=GetFeatureInfo&LAYERS=info&QUERY_LAYERS=info&STYLES=&FORMAT=image/png&SRS=EPSG:900913&BBOX=0,0,1,1" +
			"&WIDTH=256&HEIGHT=256&X=1&Y=1&INFO_FORMAT=text/plain", "no tile of layer info", 400},
	} {
		if status, _, body := get(c.uri); status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want %d with %s", c.uri, status, body, c.status, c.want)
		}
	}
	if n := gfi.Load() - before - asked; n != 0 {
		t.Errorf("%d refused requests reached the upstream, want none", n)
	}
	// A failing upstream: a fixed reason, neither its words nor its
	// address nor the credentials of the layer's URL.
	status, _, body := get(fmt.Sprintf(kvp, "info", 13, 13))
	if status < 500 || strings.Contains(body, secretWord) || strings.Contains(body, host) || strings.Contains(body, "user") {
		t.Errorf("a failing upstream: %d %q, want a 5xx naming neither the upstream nor its credentials", status, body)
	}
	t.Logf("upstream asked %d times: 2 answers, and the failing pixel with the client's retries", gfi.Load()-before)
}
