package app_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/app/backends"
	"tilecache/internal/app/backends/embedded"
	"tilecache/internal/app/tileorigin"
	"tilecache/internal/config"
	"tilecache/internal/grid"
)

// wmtsFeatureInfoCaps is what the RESTful FeatureInfo test reads of the
// WMTS capabilities.
type wmtsFeatureInfoCaps struct {
	Operations []struct {
		Name string `xml:"name,attr"`
		Gets []struct {
			Href     string   `xml:"href,attr"`
			Encoding []string `xml:"Constraint>AllowedValues>Value"`
		} `xml:"DCP>HTTP>Get"`
	} `xml:"OperationsMetadata>Operation"`
	Layers []struct {
		Identifier  string   `xml:"Identifier"`
		InfoFormats []string `xml:"InfoFormat"`
		Resources   []struct {
			Format   string `xml:"format,attr"`
			Type     string `xml:"resourceType,attr"`
			Template string `xml:"template,attr"`
		} `xml:"ResourceURL"`
	} `xml:"Contents>Layer"`
}

// upstreamFeatureInfo asks the featureInfoUpstream directly for pixel
// (i, j) of tile z1, column 1, row 0 from the bottom of EPSG:900913.
func upstreamFeatureInfo(t *testing.T, upURL string, i, j int, infoFormat string) []byte {
	t.Helper()
	g, _ := grid.Builtin("EPSG:900913")
	e := g.TileExtent(1, 1, 0)
	box := strings.Join([]string{ftoa(e.MinX), ftoa(e.MinY), ftoa(e.MaxX), ftoa(e.MaxY)}, ",")
	res, err := http.Get(upURL + "/wms?SERVICE=WMS&VERSION=1.1.1&REQUEST=GetFeatureInfo&LAYERS=roads&QUERY_LAYERS=roads&SRS=EPSG:900913&BBOX=" +
		box + "&WIDTH=256&HEIGHT=256&X=" + strconv.Itoa(i) + "&Y=" + strconv.Itoa(j) + "&INFO_FORMAT=" + infoFormat)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return b
}

// TestRESTFeatureInfo: the WMTS capabilities advertise the RESTful
// FeatureInfo resource of a layer that allows GetFeatureInfo (a
// ResourceURL of type FeatureInfo per info format, the InfoFormats, the
// GetFeatureInfo operation in both encodings) and of no other; the
// template filled in for a tile's pixel (plain HTTP: OWSLib has no WMTS
// GetFeatureInfo) answers the upstream's own GetFeatureInfo of the same
// pixel of the tile's GetMap box, in each info format; a layer that does
// not allow it and a pixel outside the tile are refused without asking
// the upstream.
func TestRESTFeatureInfo(t *testing.T) {
	t.Parallel()
	var gfi atomic.Int64
	up := featureInfoUpstream(t, &gfi)
	front := httptest.NewUnstartedServer(nil)
	a := apptest.Start(t, apptest.Options{Env: map[string]string{"TILECACHE_PUBLIC_URL": "http://" + front.Listener.Addr().String()},
		Layers: fmt.Sprintf(featureInfoLayers, strings.TrimPrefix(up.URL, "http://"), secretWord)})
	front.Config.Handler = a.Local.Handler
	front.Start()
	t.Cleanup(front.Close)
	get := func(uri string) (int, string, []byte) {
		t.Helper()
		res, err := http.Get(uri)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), b
	}
	// The capabilities are published with the tiles.
	for _, l := range []string{"info", "noinfo"} {
		wantDone(t, seedAndWait(t, a, l, `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":0,"format":"image/png"}}`))
	}
	status, _, body := get(front.URL + "/WMTSCapabilities.xml")
	var caps wmtsFeatureInfoCaps
	if err := xml.Unmarshal(body, &caps); status != 200 || err != nil {
		t.Fatalf("capabilities: %d %v", status, err)
	}
	var op []string
	for _, o := range caps.Operations {
		if o.Name == "GetFeatureInfo" {
			for _, g := range o.Gets {
				op = append(op, strings.Join(g.Encoding, ",")+" "+g.Href)
			}
		}
	}
	if want := []string{"RESTful " + front.URL + "/gwc/featureinfo/", "KVP " + front.URL + "/gwc/service/wmts?"}; !slices.Equal(op, want) {
		t.Errorf("GetFeatureInfo operation %q, want %q", op, want)
	}
	templates := map[string]string{}
	for _, l := range caps.Layers {
		for _, r := range l.Resources {
			if r.Type == "FeatureInfo" {
				templates[l.Identifier+" "+r.Format] = r.Template
			}
		}
		want := map[string][]string{"info": {"text/plain", "text/html", "application/vnd.ogc.gml", "application/json"}}[l.Identifier]
		if !slices.Equal(l.InfoFormats, want) {
			t.Errorf("layer %s: InfoFormats %q, want %q", l.Identifier, l.InfoFormats, want)
		}
	}
	if len(templates) != 4 {
		t.Fatalf("FeatureInfo templates %q, want 4 of layer info", templates)
	}
	fill := func(template string, i, j int) string {
		return strings.NewReplacer("{Style}", "default", "{TileMatrixSet}", "EPSG:900913", "{TileMatrix}", "1", "{TileRow}", "1", "{TileCol}", "1",
			"{J}", strconv.Itoa(j), "{I}", strconv.Itoa(i)).Replace(template)
	}
	tmpl := templates["info text/plain"]
	if want := front.URL + "/gwc/featureinfo/info/{Style}/{TileMatrixSet}/{TileMatrix}/{TileRow}/{TileCol}/{J}/{I}.txt"; tmpl != want {
		t.Errorf("template %s, want %s", tmpl, want)
	}
	for _, f := range []string{"text/plain", "text/html", "application/json"} {
		want := upstreamFeatureInfo(t, up.URL, 200, 10, f)
		status, ct, got := get(fill(templates["info "+f], 200, 10))
		if status != 200 || string(got) != string(want) || !strings.HasPrefix(ct, f) {
			t.Errorf("%s: %d %s %q, want 200 and the upstream's %q", f, status, ct, got, want)
		}
	}
	asked := gfi.Load()
	for _, c := range []struct {
		uri, want string
		status    int
	}{
		{strings.Replace(fill(tmpl, 200, 10), "/info/", "/noinfo/", 1), `exceptionCode="OperationNotSupported"`, 501},
		{fill(tmpl, 256, 10), `exceptionCode="PointIJOutOfRange"`, 400},
		{strings.Replace(fill(tmpl, 200, 10), "/1/1/1/", "/1/2/1/", 1), `exceptionCode="TileOutOfRange"`, 400},
		{strings.TrimSuffix(fill(tmpl, 200, 10), ".txt") + ".png", "Not found", 404},
	} {
		if status, _, body := get(c.uri); status != c.status || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s, want %d with %s", c.uri, status, body, c.status, c.want)
		}
	}
	if n := gfi.Load() - asked; n != 0 {
		t.Errorf("%d refused requests reached the upstream, want none", n)
	}
}

// TestTileOriginAnswersRESTFeatureInfo: the tile function, which the CDN's
// /gwc/featureinfo/* behaviour sends the RESTful FeatureInfo resource to
// as it is, answers it with the upstream's answer for the pixel.
func TestTileOriginAnswersRESTFeatureInfo(t *testing.T) {
	t.Parallel()
	var gfi atomic.Int64
	up := featureInfoUpstream(t, &gfi)
	dir := t.TempDir()
	layers := filepath.Join(dir, "layers.yaml")
	if err := os.WriteFile(layers, fmt.Appendf(nil, featureInfoLayers, strings.TrimPrefix(up.URL, "http://"), secretWord), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TILECACHE_DATA": dir, "TILECACHE_LAYERS": layers}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	o, err := tileorigin.NewWith(t.Context(), tileorigin.Of(cfg), func(context.Context) (backends.Backends, error) { return embedded.Open(cfg.DataDir) },
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	want := upstreamFeatureInfo(t, up.URL, 200, 10, "text/html")
	rec := httptest.NewRecorder()
	o.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/gwc/featureinfo/info/default/EPSG:900913/1/1/1/10/200.html", nil))
	if rec.Code != 200 || rec.Body.String() != string(want) || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Errorf("%d %s %q, want 200 and the upstream's %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), want)
	}
	if gfi.Load() != 2 { // ours and the direct one
		t.Errorf("the upstream was asked %d times, want twice", gfi.Load())
	}
}
