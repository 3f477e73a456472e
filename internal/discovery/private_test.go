package discovery

import (
	"bytes"
	"strings"
	"testing"
)

// TestPrivateLayerLeftOutOfSharedDocuments: a private layer's tile sets
// get their own documents (TileJSON, TMS TileMap, the layer's WMTS
// capabilities, its OGC API collection), but the shared documents (the
// index, the TMS root, the root WMTS capabilities, the OGC API
// collections) leave it out; a RefreshLayers of another layer, which
// takes the other layers from the stored index, keeps it so.
func TestPrivateLayerLeftOutOfSharedDocuments(t *testing.T) {
	private := strings.Replace(testLayers, "    id: topo 50\n", "    id: topo 50\n    private: true\n", 1)
	s := newFileStore(t)
	p, _ := newTestPublisher(s, testCatalogue(t, private), prefix, "")
	for _, b := range [][3]string{{"demo:world", "EPSG:900913", "image/png"}, {"topo", "EPSG:900913", "image/png8"}} {
		if _, err := p.Ensure(t.Context(), b[0], b[1], b[2], nil); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		for _, k := range []string{indexName, tmsName, wmtsName, wmscName, ogcDir + "collections.json", "ogcapi.json"} {
			data, _ := mustGet(t, s, prefix+"/"+k)
			if bytes.Contains(data, []byte("topo")) {
				t.Errorf("%s: the shared %s names the private layer:\n%s", when, k, data)
			}
			if !bytes.Contains(data, []byte("demo:world")) && k != "ogcapi.json" {
				t.Errorf("%s: the shared %s leaves out the public layer", when, k)
			}
		}
		for _, k := range append(docKeys("topo 50", "EPSG:900913", "png8", tileMapName, tileJSONName),
			prefix+"/topo 50/"+wmtsName, prefix+"/"+ogcDir+"collections/topo 50.json") {
			if !exists(t, s, k) {
				t.Errorf("%s: the private layer's own %s is missing", when, k)
			}
		}
	}
	check("after Ensure")
	retitled := strings.Replace(private, "title: Demo world", "title: The demo world", 1)
	p2, _ := newTestPublisher(s, testCatalogue(t, retitled), prefix, "")
	if _, err := p2.RefreshLayers(t.Context(), []string{"demo:world"}); err != nil {
		t.Fatal(err)
	}
	check("after RefreshLayers of the public layer")
	if _, err := p2.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	check("after Refresh")
}
