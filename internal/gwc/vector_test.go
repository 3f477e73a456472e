package gwc_test

import (
	"slices"
	"strings"
	"testing"

	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/source/upstream"
	"tilecache/internal/source/wms"
)

// TestVectorMimeFormat: a GeoWebCache layer offering
// application/vnd.mapbox-vector-tile in <mimeFormats> becomes a layer with
// that format (beside its images, metatiled 4×4 as they are), and its
// source builds: the vector format needs no image encoder.
func TestVectorMimeFormat(t *testing.T) {
	doc := `<wmsLayer>
  <name>roads</name>
  <mimeFormats><string>image/png</string><string>application/vnd.mapbox-vector-tile</string></mimeFormats>
  <gridSubsets><gridSubset><gridSetName>EPSG:900913</gridSetName></gridSubset></gridSubsets>
  <metaWidthHeight><int>4</int><int>4</int></metaWidthHeight>
  <wmsUrl><string>http://localhost:8080/geoserver/wms</string></wmsUrl>
  <wmsLayers>roads</wmsLayers>
</wmsLayer>`
	l, err := gwc.DecodeLayer([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := mustParse(t, nil, l)
	got, ok := c.Layer("roads")
	if !ok || !slices.Equal(got.Formats, []string{"image/png", "application/vnd.mapbox-vector-tile"}) || got.MetaWidth != 4 {
		t.Fatalf("layer %+v", got)
	}
	if _, err := wms.New(got, upstream.Shared{}); err != nil {
		t.Fatalf("source: %v", err)
	}
	out, err := gwc.EncodeLayer(got)
	if err != nil || !strings.Contains(string(out), "<string>application/vnd.mapbox-vector-tile</string>") {
		t.Errorf("encoded %s, %v; want the format in mimeFormats", out, err)
	}
	// A format the key layout does not know is refused by name.
	bad := strings.Replace(doc, "application/vnd.mapbox-vector-tile", "application/x-protobuf", 1)
	l2, err := gwc.DecodeLayer([]byte(bad))
	if err == nil {
		y, _ := l2.YAML()
		_, err = layer.Parse([]byte("layers:\n"+entry(string(y))), "test")
	}
	if err == nil || !strings.Contains(err.Error(), "application/x-protobuf") {
		t.Errorf("unknown format: %v, want an error naming it", err)
	}
}

// TestGeoJSONMimeFormat: a layer's mimeFormats may hold GeoWebCache's
// GeoJSON tile format (application/json;type=geojson, as GeoServer's WMS
// answers GetMap in it); it decodes, builds a WMS source and encodes back.
func TestGeoJSONMimeFormat(t *testing.T) {
	doc := `<wmsLayer>
  <name>roads</name>
  <mimeFormats><string>application/vnd.mapbox-vector-tile</string><string>application/json;type=geojson</string></mimeFormats>
  <gridSubsets><gridSubset><gridSetName>EPSG:900913</gridSetName></gridSubset></gridSubsets>
  <wmsUrl><string>http://localhost:8080/geoserver/wms</string></wmsUrl>
  <wmsLayers>roads</wmsLayers>
</wmsLayer>`
	l, err := gwc.DecodeLayer([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := mustParse(t, nil, l)
	got, ok := c.Layer("roads")
	if !ok || !slices.Equal(got.Formats, []string{"application/vnd.mapbox-vector-tile", "application/json;type=geojson"}) {
		t.Fatalf("layer %+v", got)
	}
	if _, err := wms.New(got, upstream.Shared{}); err != nil {
		t.Fatalf("source: %v", err)
	}
	out, err := gwc.EncodeLayer(got)
	if err != nil || !strings.Contains(string(out), "<string>application/json;type=geojson</string>") {
		t.Errorf("encoded %s, %v; want the format in mimeFormats", out, err)
	}
}
