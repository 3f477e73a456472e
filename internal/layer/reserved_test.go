package layer

import (
	"strings"
	"testing"
)

// TestReservedLayerIDs: a layer cannot take the id of the service's own
// objects, a path the edge maps to other keys, a document published at
// the root of the store or an endpoint of the service.
func TestReservedLayerIDs(t *testing.T) {
	for id, want := range map[string]string{
		"_tilecache": "service's own objects", "archives": "tile archives are served from", "wmts": "CDN maps", "xyz": "CDN maps", "ogcapi": "CDN maps",
		"ogcapi.json": "CDN maps", "index.json": "document or endpoint", "index.html": "document or endpoint",
		"tms.xml": "document or endpoint", "WMTSCapabilities.xml": "document or endpoint", "rest": "document or endpoint",
		"tiles": "document or endpoint", "metrics": "document or endpoint", "console": "document or endpoint", "a/b": "must not contain /",
		`a\b`: "must not contain /", "..": "must not be . or ..", "a\tb": "control characters",
	} {
		doc := "layers:\n  - name: l\n    id: \"" + strings.ReplaceAll(strings.ReplaceAll(id, `\`, `\\`), "\t", `\t`) + "\"\n    formats: [image/png]\n    gridSubsets: [{gridSet: EPSG:4326}]\n" +
			"    source: {type: testpattern}\n"
		if _, err := Parse([]byte(doc), "layers.yaml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("id %q: got %v, want an error containing %q", id, err, want)
		}
	}
	if _, err := Parse([]byte("layers:\n  - name: l\n    id: wmts2\n    formats: [image/png]\n    gridSubsets: [{gridSet: EPSG:4326}]\n"+
		"    source: {type: testpattern}\n"), "layers.yaml"); err != nil {
		t.Errorf("id wmts2: %v", err)
	}
}

// TestGridSetIDsCheckedLikeLayerIDs: a grid set's id is a segment of tile
// keys and of the edge's paths as a layer's is, so the same ids are
// refused (a / would reach other keys: a/../b).
func TestGridSetIDsCheckedLikeLayerIDs(t *testing.T) {
	gridSet := func(id string) string {
		return "gridSets:\n  - id: \"" + strings.ReplaceAll(id, `\`, `\\`) + "\"\n    epsg: 3857\n    extent: [0, 0, 100, 100]\n    resolutions: [1]\n" +
			"layers:\n  - name: l\n    formats: [image/png]\n    gridSubsets: [{gridSet: EPSG:4326}]\n    source: {type: testpattern}\n"
	}
	for id, want := range map[string]string{
		"a/../b": "must not contain /", `a\b`: "must not contain /", ".": "must not be . or ..", "..": "must not be . or ..",
		"_tilecache": "service's own objects", "wmts": "CDN maps", "tms.xml": "document or endpoint", "rest": "document or endpoint",
		"": "grid set id is empty",
	} {
		if _, err := Parse([]byte(gridSet(id)), "layers.yaml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("grid set id %q: got %v, want an error containing %q", id, err, want)
		}
	}
	if _, err := Parse([]byte(gridSet("My:Grid.1")), "layers.yaml"); err != nil {
		t.Errorf("grid set id My:Grid.1: %v", err)
	}
}
