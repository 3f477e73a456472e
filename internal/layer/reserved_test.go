package layer

import (
	"strings"
	"testing"
)

// TestReservedLayerIDs: a layer cannot take the id of the service's own
// objects, nor a path the edge maps to other keys.
func TestReservedLayerIDs(t *testing.T) {
	for id, want := range map[string]string{
		"_tilecache": "service's own objects", "wmts": "CDN maps", "xyz": "CDN maps", "ogcapi": "CDN maps",
		"ogcapi.json": "CDN maps",
	} {
		doc := "layers:\n  - name: l\n    id: \"" + id + "\"\n    formats: [image/png]\n    gridSubsets: [{gridSet: EPSG:4326}]\n" +
			"    source: {type: testpattern}\n"
		if _, err := Parse([]byte(doc), "layers.yaml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("id %s: got %v, want an error containing %q", id, err, want)
		}
	}
	if _, err := Parse([]byte("layers:\n  - name: l\n    id: wmts2\n    formats: [image/png]\n    gridSubsets: [{gridSet: EPSG:4326}]\n"+
		"    source: {type: testpattern}\n"), "layers.yaml"); err != nil {
		t.Errorf("id wmts2: %v", err)
	}
}
