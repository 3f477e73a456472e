package layer

import (
	"strings"
	"testing"
)

// TestReservedOGCBindingsID: gwc, the first segment of the OGC bindings'
// paths (/gwc/service/*, which the CDN gives its own behaviour, and
// /gwc/featureinfo/), is no layer's or grid set's id, and the refusal says
// why; an id that only starts with it is fine.
func TestReservedOGCBindingsID(t *testing.T) {
	layerDoc := func(id string) string {
		return "layers:\n  - name: l\n    id: " + id + "\n    formats: [image/png]\n    gridSubsets: [{gridSet: EPSG:4326}]\n    source: {type: testpattern}\n"
	}
	gridDoc := "gridSets:\n  - id: gwc\n    epsg: 3857\n    extent: [0, 0, 100, 100]\n    resolutions: [1]\n" +
		"layers:\n  - name: l\n    formats: [image/png]\n    gridSubsets: [{gridSet: EPSG:4326}]\n    source: {type: testpattern}\n"
	for what, doc := range map[string]string{"layer": layerDoc("gwc"), "grid set": gridDoc} {
		_, err := Parse([]byte(doc), "layers.yaml")
		if err == nil || !strings.Contains(err.Error(), `id "gwc" is the path of the OGC bindings`) || !strings.Contains(err.Error(), "/gwc/service/wmts") {
			t.Errorf("%s id gwc: got %v, want the refusal naming the OGC bindings' path", what, err)
		}
	}
	// A layer named gwc gets an id of its own only if it gives one: its
	// name is its id by default.
	if _, err := Parse([]byte("layers:\n  - name: gwc\n    formats: [image/png]\n    gridSubsets: [{gridSet: EPSG:4326}]\n    source: {type: testpattern}\n"), "layers.yaml"); err == nil {
		t.Error("a layer named gwc (its id by default) was accepted")
	}
	if _, err := Parse([]byte(layerDoc("gwc2")), "layers.yaml"); err != nil {
		t.Errorf("id gwc2: %v", err)
	}
}
