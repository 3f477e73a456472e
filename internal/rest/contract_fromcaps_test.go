package rest_test

// POST /rest/layers/from-capabilities.json, an extension of this project:
// the CLI's `layers from-capabilities` behind the REST interface, against
// the test WMS. The capabilities are fetched through the address policy of
// upstreams set through the interface.

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

type fromCapsDoc struct {
	URL          string `json:"url"`
	Version      string `json:"version"`
	Title        string `json:"title"`
	Capabilities []struct {
		Name  string      `json:"name"`
		Title string      `json:"title"`
		BBox  *[4]float64 `json:"bbox"`
	} `json:"capabilities"`
	Proposed []struct {
		Name   string `json:"name"`
		Title  string `json:"title"`
		Exists bool   `json:"exists"`
		Path   string `json:"path"`
		XML    string `json:"xml"`
	} `json:"proposed"`
}

func postFromCaps(t *testing.T, a *apptest.App, body string) apptest.Response {
	t.Helper()
	return a.Do(t, "POST", "/rest/layers/from-capabilities.json", body, "Content-Type", "application/json")
}

func TestLayersFromCapabilitiesREST(t *testing.T) {
	wms := testenv.RequireWMS(t)
	a := apptest.Start(t, apptest.Options{})

	res := postFromCaps(t, a, `{"url":"`+wms+`"}`)
	wantOK(t, res, ctJSON)
	var d fromCapsDoc
	if err := json.Unmarshal([]byte(res.Body), &d); err != nil {
		t.Fatalf("decode %s: %v", res.Body, err)
	}
	if d.URL != wms || d.Version != "1.3.0" {
		t.Errorf("got url %q version %q, want %q 1.3.0", d.URL, d.Version, wms)
	}
	names := map[string]bool{}
	for _, c := range d.Capabilities {
		names[c.Name] = true
	}
	for _, n := range []string{"hillshade", "polygons", "lines", "points", "sparse"} {
		if !names[n] {
			t.Errorf("capabilities: %s missing from %+v", n, d.Capabilities)
		}
	}
	if len(d.Proposed) < 5 {
		t.Fatalf("proposed %d layers, want one per named layer (%d)", len(d.Proposed), len(d.Capabilities))
	}
	var points int = -1
	for i, p := range d.Proposed {
		if p.Name == "points" {
			points = i
		}
		if p.Exists || p.Path != "/rest/layers/"+p.Name+".xml" || !strings.HasPrefix(p.XML, "<wmsLayer") {
			t.Errorf("proposed %s: exists %v, path %q, xml %.60q", p.Name, p.Exists, p.Path, p.XML)
		}
	}
	if points < 0 {
		t.Fatal("no proposal for points")
	}
	var doc struct {
		Name   string   `xml:"name"`
		URLs   []string `xml:"wmsUrl>string"`
		Layers string   `xml:"wmsLayers"`
	}
	if err := xml.Unmarshal([]byte(d.Proposed[points].XML), &doc); err != nil || doc.Name != "points" || doc.Layers != "points" || len(doc.URLs) != 1 {
		t.Errorf("points' document: %+v, %v: %s", doc, err, d.Proposed[points].XML)
	}

	// The console then PUTs a proposal: the layer exists and seeds from
	// the WMS.
	res = a.Do(t, "PUT", d.Proposed[points].Path, d.Proposed[points].XML, "Content-Type", "text/xml")
	if res.Status != http.StatusOK && res.Status != http.StatusCreated {
		t.Fatalf("PUT the proposal: %d %s", res.Status, res.Body)
	}
	if res := a.Do(t, "GET", "/rest/layers/points.xml", ""); res.Status != http.StatusOK || !strings.Contains(res.Body, "<wmsLayers>points</wmsLayers>") {
		t.Errorf("GET the layer put: %d %s", res.Status, res.Body)
	}
	seedJSON(t, a, "points", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":0,"format":"image/png"}}`)
	testenv.Eventually(t, 30*time.Second, "the seed of the layer put", func() bool { return len(list(t, a, "/rest/seed.json")) == 0 })
	if res := a.Do(t, "GET", "/tiles/points/EPSG:4326/png/0/0/0.png", ""); res.Status != http.StatusOK || res.Header.Get("Content-Type") != "image/png" {
		t.Errorf("a tile of the layer put, seeded from the WMS: %d %q %q", res.Status, res.Header.Get("Content-Type"), res.Body)
	}

	// WMS 1.1.1, chosen layers; the one put now exists.
	res = postFromCaps(t, a, `{"url":"`+wms+`","version":"1.1.1","layers":["points","lines"]}`)
	wantOK(t, res, ctJSON)
	d = fromCapsDoc{}
	if err := json.Unmarshal([]byte(res.Body), &d); err != nil {
		t.Fatal(err)
	}
	if d.Version != "1.1.1" || len(d.Proposed) != 2 || d.Proposed[0].Name != "points" || !d.Proposed[0].Exists || d.Proposed[1].Name != "lines" || d.Proposed[1].Exists {
		t.Errorf("1.1.1, points and lines: got version %s, %+v", d.Version, d.Proposed)
	}

	// Documents that are not WMS capabilities, and one too large.
	mux := http.NewServeMux()
	mux.HandleFunc("/html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>a web page</body></html>"))
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "gone", http.StatusGone) })
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("<!-- padding -->", 4096))
		w.Write([]byte(`<?xml version="1.0"?><WMS_Capabilities version="1.3.0">`))
		for i := 0; i < 9<<20/len(chunk)+1; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	other := httptest.NewServer(mux)
	defer other.Close()

	for _, c := range []struct {
		name, body string
		status     int
		says       []string
	}{
		{"a web page", `{"url":"` + other.URL + `/html"}`, 400, []string{"the root element is html, not WMT_MS_Capabilities (1.1.1) or WMS_Capabilities (1.3.0)"}},
		{"an answer other than 200", `{"url":"` + other.URL + `/gone"}`, 400, []string{"GetCapabilities of " + other.URL + "/gone: the server answered 410"}},
		{"a document over 8 MiB", `{"url":"` + other.URL + `/huge"}`, 400, []string{"GetCapabilities of " + other.URL + "/huge: the document is larger than 8388608 bytes"}},
		{"an unreachable host", `{"url":"http://127.0.0.1:1/wms"}`, 400, []string{"GetCapabilities of http://127.0.0.1:1/wms: ", "connection refused"}},
		{"a WMS exception", `{"url":"` + wms + `?SERVICE=WMS&REQUEST=GetMap"}`, 400, []string{"read WMS capabilities"}},
		{"an unknown layer", `{"url":"` + wms + `","layers":["points","nope"]}`, 400, []string{"the capabilities have no layer named nope (named layers: ", "points"}},
		{"no url", `{"layers":["points"]}`, 400, []string{"url is required"}},
		{"not http", `{"url":"file:///etc/passwd"}`, 400, []string{`file:///etc/passwd is not an http or https URL`}},
		{"a version", `{"url":"` + wms + `","version":"1.0.0"}`, 400, []string{`version 1.0.0 is not a WMS version asked for: 1.3.0 or 1.1.1`}},
		{"an unknown field", `{"url":"` + wms + `","near":true}`, 400, []string{`unknown field "near"`}},
		{"not JSON", `url=x`, 400, []string{`The body must be {"url"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantBadRequest(t, postFromCaps(t, a, c.body), c.says...)
		})
	}
	wantUnsupported(t, a.Do(t, "POST", "/rest/layers/from-capabilities.json", `{"url":"`+wms+`"}`, "Content-Type", "text/plain"))
	// Its other methods are a layer's .json path as before.
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		got, want := a.Do(t, m, "/rest/layers/from-capabilities.json", ""), a.Do(t, m, "/rest/layers/from-capabilitie.json", "")
		if got.Status != want.Status || strings.Replace(got.Body, "from-capabilities", "from-capabilitie", -1) != want.Body {
			t.Errorf("%s: got %d %q, want as another layer's .json path: %d %q", m, got.Status, got.Body, want.Status, want.Body)
		}
	}
}

// TestLayersFromCapabilitiesAddressPolicy: without TILECACHE_UPSTREAM_ALLOW
// the capabilities of a WMS on loopback are not fetched, as a layer's
// upstream there is refused.
func TestLayersFromCapabilitiesAddressPolicy(t *testing.T) {
	wms := testenv.RequireWMS(t)
	a := apptest.Start(t, apptest.Options{Env: map[string]string{"TILECACHE_UPSTREAM_ALLOW": ""}})
	wantBadRequest(t, postFromCaps(t, a, `{"url":"`+wms+`"}`), "GetCapabilities of "+wms+": ", "refused to connect to 127.0.0.1, a loopback address", "TILECACHE_UPSTREAM_ALLOW")
	// localhost resolves to loopback: refused too, whatever the name.
	wantBadRequest(t, postFromCaps(t, a, `{"url":"`+strings.Replace(wms, "127.0.0.1", "localhost", 1)+`"}`), "a loopback address")
}
