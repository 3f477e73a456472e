package rest_test

// The layers and grid sets in GeoWebCache's REST representations, read
// from the layer file: the lists with their Atom links, a layer's wmsLayer
// document and a grid set's gridSet document, each decoded back by the
// codec and compared with the layer file; unknown names, the JSON form and
// layers GeoWebCache's document cannot describe are refused by name.

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/grid"
	"tilecache/internal/gwc"
)

const layersWithWMS = apptest.Layers + `  - name: roads wms
    title: Roads
    gridSubsets:
      - gridSet: EPSG:4326
        extent: [5, 45, 11, 48]
        zoomStart: 2
        zoomStop: 9
      - gridSet: Scaled
    formats: [image/png, image/jpeg]
    metatiling: [2, 3]
    gutter: 8
    parameterFilters:
      - {key: STYLES, default: "", values: [day, night]}
    source: {type: wms, url: "http://127.0.0.1:1/wms", layers: "roads,labels", styles: day, transparent: true, bgColor: "0xFFFFFF", params: {MAP: roads.map}}
`

// withScaledGridSet adds a grid set given in scale denominators to the
// layer file's grid sets.
func withScaledGridSet(layers string) string {
	return strings.Replace(layers, "gridSets:\n", `gridSets:
  - id: Scaled
    description: A grid set in scale denominators
    epsg: 2056
    extent: [2420000, 1030000, 2900000, 1350000]
    scaleDenominators: [1000000, 500000, 250000]
    metersPerUnit: 1
    scaleNames: [one, two, three]
`, 1)
}

func TestLayersAndGridSetsRead(t *testing.T) {
	a := apptest.Start(t, apptest.Options{Layers: withScaledGridSet(layersWithWMS)})
	base := a.URL

	res := a.Do(t, "GET", "/rest/layers", "")
	if res.Status != http.StatusOK || res.Header.Get("Content-Type") != ctXML {
		t.Fatalf("GET /rest/layers: %d %q %q", res.Status, res.Header.Get("Content-Type"), res.Body)
	}
	for _, link := range []string{
		`<name>demo:world</name>`, `href="` + base + `/rest/layers/demo:world.xml"`,
		`<name>roads wms</name>`, `href="` + base + `/rest/layers/roads%20wms.xml"`,
	} {
		if !strings.Contains(res.Body, link) {
			t.Errorf("GET /rest/layers: no %s in\n%s", link, res.Body)
		}
	}
	if got := strings.Count(res.Body, "<layer>"); got != 5 {
		t.Errorf("GET /rest/layers lists %d layers, want 5:\n%s", got, res.Body)
	}
	if again := a.Do(t, "GET", "/rest/layers.xml", ""); again.Body != res.Body {
		t.Errorf("GET /rest/layers.xml differs from /rest/layers:\n%s", again.Body)
	}

	// The WMS layer, through its link (a space in the name is %20, or +).
	var roadsDoc string
	for _, path := range []string{"/rest/layers/roads%20wms.xml", "/rest/layers/roads+wms.xml"} {
		res = a.Do(t, "GET", path, "")
		roadsDoc = res.Body
		if res.Status != http.StatusOK || res.Header.Get("Content-Type") != ctXML {
			t.Fatalf("GET %s: %d %q", path, res.Status, res.Body)
		}
		l, err := gwc.DecodeLayer([]byte(res.Body))
		if err != nil {
			t.Fatalf("the wmsLayer document does not decode: %v\n%s", err, res.Body)
		}
		if l.Name != "roads wms" || l.Title != "Roads" || !slices.Equal(l.Formats, []string{"image/png", "image/jpeg"}) ||
			!slices.Equal(l.Metatiling, []int{2, 3}) || l.Gutter != 8 || len(l.GridSubsets) != 2 ||
			l.GridSubsets[0].GridSet != "EPSG:4326" || !slices.Equal(l.GridSubsets[0].Extent, []float64{5, 45, 11, 48}) ||
			l.GridSubsets[1].GridSet != "Scaled" || len(l.ParameterFilters) != 1 {
			t.Errorf("the wmsLayer document says %+v", l)
		}
		s := l.Source
		if s.URL != "http://127.0.0.1:1/wms" || s.Layers != "roads,labels" || s.Styles != "day" || !s.Transparent ||
			s.BGColor != "0xFFFFFF" || s.Params["MAP"] != "roads.map" {
			t.Errorf("the wmsLayer document's source: %+v", s)
		}
		for _, elem := range []string{"<wmsUrl>", "<wmsLayers>roads,labels</wmsLayers>", "<metaWidthHeight>", "<stringParameterFilter>"} {
			if !strings.Contains(res.Body, elem) {
				t.Errorf("GET %s: no %s in\n%s", path, elem, res.Body)
			}
		}
	}

	res = a.Do(t, "GET", "/rest/gridsets", "")
	if res.Status != http.StatusOK || res.Header.Get("Content-Type") != ctXML {
		t.Fatalf("GET /rest/gridsets: %d %q", res.Status, res.Body)
	}
	for _, id := range []string{"EPSG:4326", "EPSG:900913", "TopLeft4326", "Scaled"} {
		if !strings.Contains(res.Body, "<name>"+id+"</name>") || !strings.Contains(res.Body, `href="`+base+`/rest/gridsets/`+id+`.xml"`) {
			t.Errorf("GET /rest/gridsets: no %s with its link in\n%s", id, res.Body)
		}
	}
	for _, tc := range []struct {
		id   string
		want *grid.GridSet
	}{{"EPSG:4326", builtin(t, "EPSG:4326")}, {"EPSG:900913", builtin(t, "EPSG:900913")}} {
		res = a.Do(t, "GET", "/rest/gridsets/"+tc.id+".xml", "")
		g, err := gwc.DecodeGridSet([]byte(res.Body))
		if res.Status != http.StatusOK || err != nil {
			t.Fatalf("GET /rest/gridsets/%s.xml: %d %v\n%s", tc.id, res.Status, err, res.Body)
		}
		if g.ID != tc.id || g.EPSG != tc.want.EPSG || !slices.Equal(g.Resolutions, tc.want.Resolutions) || g.AlignTopLeft != tc.want.TopLeft {
			t.Errorf("grid set %s: got %+v, want %+v", tc.id, g, tc.want)
		}
	}
	res = a.Do(t, "GET", "/rest/gridsets/Scaled.xml", "")
	g, err := gwc.DecodeGridSet([]byte(res.Body))
	if res.Status != http.StatusOK || err != nil {
		t.Fatalf("GET /rest/gridsets/Scaled.xml: %d %v\n%s", res.Status, err, res.Body)
	}
	if !slices.Equal(g.ScaleDenominators, []float64{1000000, 500000, 250000}) || !slices.Equal(g.ScaleNames, []string{"one", "two", "three"}) ||
		g.Description != "A grid set in scale denominators" || g.EPSG != 2056 {
		t.Errorf("grid set Scaled: got %+v", g)
	}

	// Refusals, each naming its problem.
	wantError(t, a.Do(t, "GET", "/rest/layers/nope.xml", ""), http.StatusNotFound, "Unknown layer: nope")
	wantError(t, a.Do(t, "GET", "/rest/gridsets/nope.xml", ""), http.StatusNotFound, "Unknown grid set: nope")
	wantError(t, a.Do(t, "GET", "/rest/layers/demo:world.xml", ""), http.StatusConflict,
		"Layer demo:world has a testpattern source: GeoWebCache's wmsLayer document describes WMS layers only")
	wantError(t, a.Do(t, "GET", "/rest/layers/demo:world.json", ""), http.StatusBadRequest,
		"The /rest/layers/demo:world representation is XML only: ask for /rest/layers/demo:world.xml")
	// Layers and grid sets of the layer file are changed there, not here.
	wantError(t, a.Do(t, "PUT", "/rest/layers/roads%20wms.xml", roadsDoc, "Content-Type", "text/xml"), http.StatusConflict,
		"Layer roads wms is managed by the layer file: change it there (or mark its entry managedBy: store to hand it to the REST interface)")
	wantError(t, a.Do(t, "DELETE", "/rest/layers/roads%20wms.xml", ""), http.StatusConflict,
		"Layer roads wms is managed by the layer file: change it there (or mark its entry managedBy: store to hand it to the REST interface)")
	wantError(t, a.Do(t, "DELETE", "/rest/gridsets/Scaled.xml", ""), http.StatusConflict,
		"Grid set Scaled is managed by the layer file: change it there (or mark its entry managedBy: store to hand it to the REST interface)")
	wantError(t, a.Do(t, "DELETE", "/rest/gridsets/EPSG:4326.xml", ""), http.StatusConflict,
		"Grid set EPSG:4326 is built in: it cannot be changed or deleted (define a grid set of another name)")
	wantError(t, a.Do(t, "DELETE", "/rest/layers", ""), http.StatusBadRequest, "Give the layer to delete: DELETE /rest/layers/{name}.xml")
	for _, method := range []string{"PUT", "POST"} {
		if res := a.Do(t, method, "/rest/layers", "<x/>", "Content-Type", "text/xml"); res.Status != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, DELETE" {
			t.Errorf("%s /rest/layers: %d, Allow %q; want 405, Allow GET, DELETE", method, res.Status, res.Header.Get("Allow"))
		}
	}
	if res := a.DoAuth(t, "", "", "GET", "/rest/layers", ""); res.Status != http.StatusUnauthorized {
		t.Errorf("GET /rest/layers without credentials: %d, want 401", res.Status)
	}
}

func builtin(t *testing.T, id string) *grid.GridSet {
	t.Helper()
	g, ok := grid.Builtin(id)
	if !ok {
		t.Fatalf("no built-in grid set %s", id)
	}
	return g
}
