package edgepath

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"tilecache/internal/layer"
	"tilecache/internal/tilestore"
)

// owsCaseTable is testdata/ows-cases.json, shared with the edge's
// functions/edge/ows.js (see TestEdgeRuntimesOWS).
type owsCaseTable struct {
	Store map[string]string `json:"store"`
	Cases []owsCase         `json:"cases"`
}

type owsCase struct {
	Name    string  `json:"name"`
	URI     string  `json:"uri"`
	Key     string  `json:"key"`
	Status  int     `json:"status"`
	Code    *string `json:"code"`
	Locator *string `json:"locator"`
}

func loadOWSCases(t testing.TB) owsCaseTable {
	t.Helper()
	data, err := os.ReadFile("testdata/ows-cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var ct owsCaseTable
	if err := json.Unmarshal(data, &ct); err != nil {
		t.Fatal(err)
	}
	return ct
}

// owsOf answers a case's request from store.
func owsOf(uri string, store map[string]string) (Answer, bool) {
	path, query, _ := strings.Cut(uri, "?")
	return OWS(path, query, func(k string) (string, bool) { v, ok := store[k]; return v, ok })
}

var (
	exceptionCode = regexp.MustCompile(`(?:exceptionCode|code)="([^"]*)"`)
	locatorAttr   = regexp.MustCompile(`locator="([^"]*)"`)
)

// TestOWSCases: every case of the shared table, in Go.
func TestOWSCases(t *testing.T) {
	ct := loadOWSCases(t)
	if len(ct.Cases) < 80 {
		t.Fatalf("only %d cases", len(ct.Cases))
	}
	for _, c := range ct.Cases {
		a, ok := owsOf(c.URI, ct.Store)
		if !ok {
			t.Errorf("%s: %s is not an OGC binding's path", c.Name, c.URI)
			continue
		}
		if c.Key != "" {
			if a.Status != 0 || a.Key != c.Key {
				t.Errorf("%s: %s: got %q (status %d %s), want key %s", c.Name, c.URI, a.Key, a.Status, a.Body, c.Key)
			}
			continue
		}
		if a.Status != c.Status {
			t.Errorf("%s: %s: status %d (key %q), want %d", c.Name, c.URI, a.Status, a.Key, c.Status)
			continue
		}
		code, locator := "", ""
		if m := exceptionCode.FindStringSubmatch(a.Body); m != nil {
			code = m[1]
		}
		if m := locatorAttr.FindStringSubmatch(a.Body); m != nil {
			locator = m[1]
		}
		if want := deref(c.Code); code != want {
			t.Errorf("%s: code %q, want %q\n%s", c.Name, code, want, a.Body)
		}
		if want := deref(c.Locator); locator != want {
			t.Errorf("%s: locator %q, want %q\n%s", c.Name, locator, want, a.Body)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// goOWSOutcome is what Live.Handler and the edge do with a case's
// request, written as edgecases.js's edgeOWSOutcome writes the edge's.
func goOWSOutcome(uri string, store map[string]string) string {
	a, _ := owsOf(uri, store)
	if a.Status == 0 {
		return "pass " + a.Key + " querystring {}"
	}
	return fmt.Sprintf("status %d %s no-store %s", a.Status, a.ContentType, a.Body)
}

// TestEdgeRuntimesOWS: ows.js answers every case of
// testdata/ows-cases.json (WMTS KVP, WMS-C, out of range, missing
// parameters, mixed case, unknown layers) exactly as OWS does — the same
// key, or the same status, content type and exception body — under node
// and under njs.
func TestEdgeRuntimesOWS(t *testing.T) {
	ct := loadOWSCases(t)
	type owsRequest struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	var reqs []owsRequest
	var want []edgeOutcome
	for _, c := range ct.Cases {
		reqs = append(reqs, owsRequest{c.Name, c.URI})
		want = append(want, edgeOutcome{c.Name, goOWSOutcome(c.URI, ct.Store)})
	}
	node, njs := runEdge(t, "ows.js", map[string]any{"store": ct.Store, "ows": reqs})
	checkOutcomes(t, "ows.js", want, map[string][]edgeOutcome{"node": node, "njs": njs})
	t.Logf("%d cases alike under node, njs and Go", len(reqs))
}

// TestOWSStoreIsLayerValues: the case table's store holds, for the
// built-in grid sets, the layer and geometry entries LayerValues writes
// (so the table tests what the service writes for the edge).
func TestOWSStoreIsLayerValues(t *testing.T) {
	ct := loadOWSCases(t)
	c, err := layer.Demo()
	if err != nil {
		t.Fatal(err)
	}
	values := LayerValues(c)
	for _, k := range []string{"/layer/demo:world", GeometryEntry + "EPSG:900913", GeometryEntry + "EPSG:4326"} {
		got, ok := values[k]
		if !ok {
			t.Errorf("LayerValues writes no %s", k)
			continue
		}
		if len(got) > MaxValue {
			t.Errorf("%s: %d bytes, more than a key-value store's value holds", k, len(got))
		}
		if k == "/layer/demo:world" {
			// The demo lists EPSG:4326 first; the table's order is its own.
			var a, b layerValue
			if json.Unmarshal([]byte(got), &a) != nil || json.Unmarshal([]byte(ct.Store[k]), &b) != nil ||
				fmt.Sprint(a.Formats) != fmt.Sprint(b.Formats) || len(a.GridSets) != len(b.GridSets) {
				t.Errorf("%s: LayerValues writes %s, the table has %s", k, got, ct.Store[k])
			}
			continue
		}
		if got != ct.Store[k] {
			t.Errorf("%s: LayerValues writes %s, the table has %s", k, got, ct.Store[k])
		}
	}
}

// TestLiveHandlerOWS: `tilecache serve` answers the OGC bindings as the
// edge does: a KVP GetTile and a WMS-C GetMap reach the store as the
// tile's key path without the query, the capabilities as the stored
// documents, and a refused request is the exception, not the store's.
func TestLiveHandlerOWS(t *testing.T) {
	c, err := layer.Demo()
	if err != nil {
		t.Fatal(err)
	}
	var reached, query string
	h := NewLive(c).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached, query = r.URL.EscapedPath(), r.URL.RawQuery
	}))
	for _, tc := range []struct{ uri, key string }{
		{"/gwc/service/wmts?SERVICE=WMTS&REQUEST=GetTile&VERSION=1.0.0&LAYER=demo:world&STYLE=default&FORMAT=image/png&TILEMATRIXSET=EPSG:900913&TILEMATRIX=2&TILEROW=1&TILECOL=3",
			"/demo:world/EPSG:900913/png/default/2/3/2%2Epng"},
		{"/wmts?service=WMTS&request=GetCapabilities", "/WMTSCapabilities.xml"},
		{"/gwc/service/wms?SERVICE=WMS&VERSION=1.1.1&REQUEST=GetMap&FORMAT=image%2Fjpeg&LAYERS=demo%3Aworld&WIDTH=256&HEIGHT=256&SRS=EPSG%3A3857&STYLES=&BBOX=-10018754.17,0,0,10018754.17",
			"/demo:world/EPSG:900913/jpeg/default/2/1/2.jpeg"},
		{"/gwc/service/wms?SERVICE=WMS&REQUEST=GetCapabilities", "/WMSCapabilities.xml"},
		// The edge paths still map.
		{"/wmts/demo:world/EPSG:900913/png/default/2/3/1.png", "/demo:world/EPSG:900913/png/default/2/3/2.png"},
	} {
		reached, query = "", "x"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.uri, nil))
		if reached != tc.key || query != "" {
			t.Errorf("%s: reached the store as %q?%s, want %s", tc.uri, reached, query, tc.key)
		}
	}
	for _, tc := range []struct {
		uri    string
		status int
		want   string
	}{
		{"/gwc/service/wmts?SERVICE=WMTS&REQUEST=GetTile&VERSION=1.0.0&LAYER=demo:world&STYLE=&FORMAT=image/png&TILEMATRIXSET=EPSG:900913&TILEMATRIX=2&TILEROW=4&TILECOL=3",
			400, `exceptionCode="TileOutOfRange" locator="TileRow"`},
		{"/gwc/service/wmts?SERVICE=WMTS&REQUEST=GetTile", 400, `exceptionCode="MissingParameterValue" locator="Version"`},
		{"/gwc/service/wms?SERVICE=WMS&VERSION=1.1.1&REQUEST=GetMap&FORMAT=image%2Fpng&LAYERS=demo%3Aworld&WIDTH=256&HEIGHT=256&SRS=EPSG%3A3857&STYLES=&BBOX=-10018754.17,0,3000000,13018754.17",
			400, "<ServiceException>BBOX, WIDTH and HEIGHT are no tile of layer demo:world"},
	} {
		reached = ""
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.uri, nil))
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) || reached != "" {
			t.Errorf("%s: %d %s (reached %q), want %d with %s", tc.uri, rec.Code, rec.Body, reached, tc.status, tc.want)
		}
	}
}

// TestEdgeFunctionOWSSize: ows.js is within CloudFront Functions' 10 KB
// of code (the template holds it verbatim: functions' template tests).
func TestEdgeFunctionOWSSize(t *testing.T) {
	src, err := os.ReadFile(edgeDir + "ows.js")
	if err != nil {
		t.Fatal(err)
	}
	if len(src) > 10*1024 {
		t.Errorf("ows.js is %d bytes: CloudFront Functions take at most 10 KB", len(src))
	}
	t.Logf("ows.js: %d bytes, %d to spare", len(src), 10*1024-len(src))
}

// FuzzOWS: OWS never panics and answers every request of its paths either
// with a key or with a 4xx or 501 (never a 5xx of its own making); a tile
// key it gives decodes, as the bucket decodes it, to a key tilestore
// parses back with no segment the service's own, and a GetFeatureInfo
// path it gives is one ParseFeatureInfo reads without panicking, with the
// same kinds of answers.
func FuzzOWS(f *testing.F) {
	ct := loadOWSCases(f)
	for _, c := range ct.Cases {
		f.Add(c.URI)
	}
	kv := func(k string) (string, bool) { v, ok := ct.Store[k]; return v, ok }
	f.Fuzz(func(t *testing.T, uri string) {
		path, query, _ := strings.Cut(uri, "?")
		a, ok := OWS(path, query, kv)
		if !ok {
			return
		}
		if a.Status != 0 {
			if a.Status < 400 || (a.Status >= 500 && a.Status != 501) || a.Key != "" {
				t.Fatalf("%s: status %d key %q", uri, a.Status, a.Key)
			}
			return
		}
		if strings.HasPrefix(a.Key, FeatureInfoPrefix+"/") {
			fi, exc, ok := ParseFeatureInfo(a.Key, kv)
			if !ok && (exc.Status < 400 || (exc.Status >= 500 && exc.Status != 501)) {
				t.Fatalf("%s: feature info answered %d", uri, exc.Status)
			}
			if ok && (fi.I < 0 || fi.J < 0 || fi.Layer == "") {
				t.Fatalf("%s: feature info %+v", uri, fi)
			}
			return
		}
		if a.Key == WMTSCapabilitiesKey || a.Key == WMSCapabilitiesKey {
			return
		}
		plain, err := url.PathUnescape(a.Key)
		if err != nil || Reserved(a.Key) || len(a.Key) > MaxKey {
			t.Fatalf("%s: key %q (%v)", uri, a.Key, err)
		}
		layerID, _, _ := strings.Cut(strings.TrimPrefix(plain, "/"), "/")
		if _, _, _, _, ok := tilestore.ParseLayerKey("", layerID, strings.TrimPrefix(plain, "/")); !ok {
			t.Fatalf("%s: key %q does not parse as a tile key", uri, plain)
		}
	})
}
