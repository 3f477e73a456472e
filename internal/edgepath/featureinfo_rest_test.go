package edgepath

import (
	"strings"
	"testing"
)

// TestRESTFeatureInfo: the RESTful FeatureInfo resource reads as the KVP
// GetFeatureInfo of the same pixel (the case table's store: demo:world's
// tile EPSG:900913 2, row 1 from the top, column 3, stored as y 2), each
// extension its info format; another shape, an unknown extension or a
// bad escape is a 404; a pixel or tile out of range the KVP's exception.
func TestRESTFeatureInfo(t *testing.T) {
	store := loadOWSCases(t).Store
	kv := func(k string) (string, bool) { v, ok := store[k]; return v, ok }
	kvp := FeatureInfoPrefix + "/gwc/service/wmts/" + encodeComponent("SERVICE=WMTS&REQUEST=GetFeatureInfo&VERSION=1.0.0&LAYER=demo:world&STYLE=default"+
		"&FORMAT=image/jpeg&TILEMATRIXSET=EPSG:900913&TILEMATRIX=2&TILEROW=1&TILECOL=3&I=200&J=10&INFOFORMAT=text/html")
	want, a, ok := ParseFeatureInfo(kvp, kv)
	if !ok {
		t.Fatalf("KVP: %+v", a)
	}
	if want != (FeatureInfo{Layer: "demo:world", GridSet: "EPSG:900913", Style: "default", Z: 2, X: 3, Y: 2, I: 200, J: 10, InfoFormat: "text/html"}) {
		t.Fatalf("KVP: %+v", want)
	}
	for _, p := range []string{"/gwc/featureinfo/demo:world/default/EPSG:900913/2/1/3/10/200.html", "/gwc/featureinfo/demo%3Aworld/default/WebMercatorQuad/2/1/3/10/200.html",
		"/gwc/featureinfo/demo:world//EPSG:900913/2/1/3/10/200.html"} {
		if !IsFeatureInfo(p) {
			t.Errorf("%s: not a feature info path", p)
		}
		got, a, ok := ParseFeatureInfo(p, kv)
		if !ok || got != want {
			t.Errorf("%s: %+v %+v, want %+v", p, got, a, want)
		}
	}
	for ext, mime := range map[string]string{"txt": "text/plain", "gml": "application/vnd.ogc.gml", "json": "application/json"} {
		got, _, ok := ParseFeatureInfo("/gwc/featureinfo/demo:world/default/EPSG:900913/2/1/3/10/200."+ext, kv)
		if !ok || got.InfoFormat != mime {
			t.Errorf(".%s: %+v, want info format %s", ext, got, mime)
		}
	}
	for p, want := range map[string]string{
		"/gwc/featureinfo/demo:world/default/EPSG:900913/2/1/3/10/200.png":    "404",
		"/gwc/featureinfo/demo:world/default/EPSG:900913/2/1/3/10/200":        "404",
		"/gwc/featureinfo/demo:world/default/EPSG:900913/2/1/3/200.html":      "404",
		"/gwc/featureinfo/demo:world/default/EPSG:900913/2/1/3/10/%zz.html":   "404",
		"/gwc/featureinfo//default/EPSG:900913/2/1/3/10/200.html":             "404",
		"/gwc/featureinfo/demo:world/default/EPSG:900913/2/1/3/10/256.html":   "PointIJOutOfRange",
		"/gwc/featureinfo/demo:world/default/EPSG:900913/2/4/3/10/200.html":   "TileOutOfRange",
		"/gwc/featureinfo/ghost/default/EPSG:900913/2/1/3/10/200.html":        `locator="Layer"`,
		"/gwc/featureinfo/demo:world/default/EPSG:4326x/2/1/3/10/200.html":    `locator="TileMatrixSet"`,
		"/gwc/featureinfo/roads/default/EPSG:900913/2/1/3/10/200.html":        "private",
		"/gwc/featureinfo/demo:world/default/EPSG:900913/2/1/3/10/2%2F0.html": "PointIJOutOfRange",
	} {
		_, a, ok := ParseFeatureInfo(p, kv)
		got := a.Body
		if a.Status == 404 {
			got = "404"
		}
		if ok || !strings.Contains(got, want) {
			t.Errorf("%s: %d %s, want %s", p, a.Status, a.Body, want)
		}
	}
	if IsFeatureInfo("/gwc/service/wmts") || IsFeatureInfo("/wmts/demo:world/EPSG:900913/png/default/2/3/1.png") {
		t.Error("a path of another binding is taken for feature info")
	}
}
