package rest_test

// Grid set ids and sizes at PUT: an id is checked after its path segment
// is decoded, as a layer's id is, and a grid set whose levels the CDN's
// edge key-value store cannot hold is refused naming the limit.

import (
	"math"
	"net/http"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/grid"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
)

// gridSetDoc is the gridSet document of a grid set id on EPSG:3857's
// extent with levels levels of 256-pixel tiles, each ratio times finer
// than the one before.
func gridSetDoc(t *testing.T, id string, levels int, ratio float64) string {
	t.Helper()
	const half = 20037508.342789244
	res := make([]float64, levels)
	for z := range res {
		res[z] = 2 * half / 256 / math.Pow(ratio, float64(z))
	}
	doc, err := gwc.EncodeGridSet(&grid.GridSet{ID: id, EPSG: 3857, Extent: grid.Extent{MinX: -half, MinY: -half, MaxX: half, MaxY: half},
		TileWidth: 256, TileHeight: 256, Resolutions: res}, layer.GridSetInfo{})
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

func TestGridSetIDDecodedBeforeItIsChecked(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	xml := []string{"Content-Type", "text/xml"}
	for _, path := range []string{"/rest/gridsets/a%2F..%2Fb.xml", "/rest/gridsets/a%5Cb.xml", "/rest/layers/a%2F..%2Fb.xml"} {
		if res := a.Do(t, "PUT", path, gridSetDoc(t, "a/../b", 3, 2), xml...); res.Status != http.StatusNotFound {
			t.Errorf("PUT %s: %d %s, want 404", path, res.Status, res.Body)
		}
	}
	if res := a.Do(t, "GET", "/rest/gridsets", ""); strings.Contains(res.Body, "a/../b") {
		t.Errorf("the grid set list holds a/../b:\n%s", res.Body)
	}
	res := a.Do(t, "PUT", "/rest/gridsets/...xml", gridSetDoc(t, "..", 3, 2), xml...)
	wantBadRequest(t, res, `id ".." must not contain / or \ and must not be . or ..`)
	res = a.Do(t, "PUT", "/rest/gridsets/tms.xml.xml", gridSetDoc(t, "tms.xml", 3, 2), xml...)
	wantBadRequest(t, res, `id "tms.xml" is a document or endpoint of the service`)
}

func TestGridSetOverEdgeValueLimitRefused(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	xml := []string{"Content-Type", "text/xml"}
	// 31 levels of Web Mercator, "1,2,4,…,1073741824;…", fit in 1,024
	// characters; 150 levels each 1.1 times finer (up to 7 digits a
	// number) do not.
	if res := a.Do(t, "PUT", "/rest/gridsets/Deep31.xml", gridSetDoc(t, "Deep31", 31, 2), xml...); res.Status != http.StatusOK {
		t.Fatalf("PUT 31 levels: %d %s", res.Status, res.Body)
	}
	res := a.Do(t, "PUT", "/rest/gridsets/Fine150.xml", gridSetDoc(t, "Fine150", 150, 1.1), xml...)
	wantBadRequest(t, res, "Grid set Fine150 has 150 levels", "characters under Fine150", "limit of 1,024 characters")
	if res := a.Do(t, "GET", "/rest/gridsets/Fine150.xml", ""); res.Status != http.StatusNotFound {
		t.Errorf("the refused grid set was saved: GET %d", res.Status)
	}
}
