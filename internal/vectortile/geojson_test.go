package vectortile_test

import (
	"bytes"
	"strings"
	"testing"

	"tilecache/internal/vectortile"
)

const geoJSONTile = `{"type":"FeatureCollection","features":[
 {"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"name":"a","n":3}},
 {"type":"Feature","geometry":{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]]]},"properties":{"name":"b","ok":true}},
 {"type":"Feature","geometry":{"type":"LineString","coordinates":[[0,0],[1,1]]},"properties":null}]}`

func TestParseGeoJSON(t *testing.T) {
	vt, err := vectortile.ParseGeoJSON([]byte(geoJSONTile), 0)
	if err != nil {
		t.Fatal(err)
	}
	if vt.Empty() || vt.Features() != 3 || vt.Gzip || len(vt.Layers) != 1 {
		t.Fatalf("got %+v", vt)
	}
	l := vt.Layers[0]
	if l.Geometry != [4]int{0, 1, 1, 1} || strings.Join(l.Keys, ",") != "name,n,ok" && strings.Join(l.Keys, ",") != "n,name,ok" {
		t.Errorf("layer %+v", l)
	}
	if vt, err := vectortile.ParseAs(vectortile.GeoJSON, gz(t, []byte(geoJSONTile)), 0); err != nil || !vt.Gzip || vt.Features() != 3 {
		t.Errorf("gzip: %+v %v", vt, err)
	}
	for _, empty := range []string{"", "  \n", `{"type":"FeatureCollection","features":[]}`} {
		if vt, err := vectortile.ParseGeoJSON([]byte(empty), 0); err != nil || !vt.Empty() {
			t.Errorf("%q: %+v %v, want an empty tile", empty, vt, err)
		}
	}
	if vt, err := vectortile.ParseGeoJSON(vectortile.EmptyGeoJSON(), 0); err != nil || !vt.Empty() {
		t.Errorf("EmptyGeoJSON: %+v %v", vt, err)
	}
}

func TestParseGeoJSONRefuses(t *testing.T) {
	deep := `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"a":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}}]}`
	for name, body := range map[string][]byte{
		"html":              []byte("<html><body><h1>Service Unavailable</h1></body></html>"),
		"service exception": []byte(`<?xml version="1.0"?><ServiceExceptionReport><ServiceException>no</ServiceException></ServiceExceptionReport>`),
		"truncated":         []byte(geoJSONTile[:len(geoJSONTile)/2]),
		"truncated gzip":    gz(t, []byte(geoJSONTile))[:40],
		"a feature":         []byte(`{"type":"Feature","geometry":null,"properties":{}}`),
		"no features":       []byte(`{"type":"FeatureCollection"}`),
		"array":             []byte(`[1,2,3]`),
		"bad feature":       []byte(`{"type":"FeatureCollection","features":[{"type":"Point","coordinates":[0,0]}]}`),
		"too deep":          []byte(deep),
		"brackets":          []byte(strings.Repeat("[", 1<<20)),
		"oversized":         append([]byte(`{"type":"FeatureCollection","features":[],"x":"`), bytes.Repeat([]byte("a"), 2000)...),
		"mvt":               {0x1a, 0x02, 0x78, 0x02},
	} {
		_, err := vectortile.ParseGeoJSON(body, 1000)
		if err == nil || !vectortile.IsInvalid(err) || !strings.Contains(err.Error(), "not a GeoJSON FeatureCollection") {
			t.Errorf("%s: %v, want an invalid GeoJSON error", name, err)
		}
	}
	if _, err := vectortile.ParseAs(vectortile.MVT, []byte(geoJSONTile), 0); err == nil {
		t.Error("a GeoJSON body parses as an MVT")
	}
}
