package gwc_test

import (
	"strings"
	"testing"

	"tilecache/internal/gwc"
	"tilecache/internal/layer"
)

// TestAllowPrivateUpstreamStaysInTheFile: a layer of the layer file that
// sets allowPrivateUpstream has a document, which does not carry the
// setting; a document that asks for it is refused.
func TestAllowPrivateUpstreamStaysInTheFile(t *testing.T) {
	c, err := layer.Parse([]byte("layers:\n  - name: t\n    gridSubsets: [{gridSet: EPSG:4326}]\n    formats: [image/png]\n"+
		"    source: {type: wms, url: http://127.0.0.1:8081/wms, layers: a, allowPrivateUpstream: true}\n"), "x")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := c.Layer("t")
	doc, err := gwc.EncodeLayer(l)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if strings.Contains(strings.ToLower(string(doc)), "private") {
		t.Errorf("the document carries the setting:\n%s", doc)
	}
	back, err := gwc.DecodeLayer(doc)
	if err != nil || back.Source.AllowPrivateUpstream {
		t.Errorf("decoded back: %+v, %v; want the setting off", back.Source, err)
	}
	asked := strings.Replace(string(doc), "</wmsLayer>", "<allowPrivateUpstream>true</allowPrivateUpstream></wmsLayer>", 1)
	if _, err := gwc.DecodeLayer([]byte(asked)); err == nil || !strings.Contains(err.Error(), "allowPrivateUpstream") {
		t.Errorf("a document asking for it: got %v, want it refused by name", err)
	}
}
