package layer_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"tilecache/internal/gwc"
	"tilecache/internal/layer"
)

// TestPutEntryWritesWhatPutWrites: an entry put as a struct (what the
// REST interface decodes a document into) is stored byte for byte as the
// same entry put as YAML text (parsed, made standalone and written by
// yaml.Marshal), and the stored document decodes back into the same
// entries: the wmsLayer and gridSet documents of the codec's samples, and
// entries with text YAML must quote or fold.
func TestPutEntryWritesWhatPutWrites(t *testing.T) {
	layers, g := putEntryFixtures(t)
	got := putAsStructAndAsText(t, layers, g)
	readBackEntries(t, got, layers, g)
	buildStoredEntries(t, got, layers)
}

// putEntryFixtures decodes GeoWebCache's layer documents, adds a layer of
// odd values (YAML's special words and characters), and decodes a grid set.
func putEntryFixtures(t *testing.T) ([]layer.Entry, layer.GridSetEntry) {
	t.Helper()
	var layers []layer.Entry
	for _, name := range []string{"full.xml", "gwc_wmslayer.xml", "gwc_wmslayer_minimal.xml"} {
		data, err := os.ReadFile(filepath.Join("..", "gwc", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		e, err := gwc.DecodeLayer(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		layers = append(layers, e)
	}
	no := false
	odd := layers[2]
	odd.Name, odd.ID, odd.Enabled = "s:odd", "s-odd", &no
	odd.Title = strings.Repeat("a long title with: colons # and hashes ", 6)
	odd.Description = "first line\n\n  indented\nlast: true\n"
	odd.Attribution = "true"
	odd.CacheControl = " 1.0"
	odd.Coverage = &layer.Coverage{Geometry: `{"type": "Point", "coordinates": [1, 2]}`, Buffer: 0.5}
	odd.Source.Params = map[string]string{"B": "'quoted'", "A": "null", "ü": "ä\tb"}
	odd.Source.Headers = map[string]string{"X-Key": "k<&>"}
	layers = append(layers, odd)

	gs, err := os.ReadFile(filepath.Join("..", "gwc", "testdata", "gwc_gridset.xml"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gwc.DecodeGridSet(gs)
	if err != nil {
		t.Fatal(err)
	}
	return layers, g
}

// putAsStructAndAsText puts the entries into one configuration as structs
// and into another as their YAML text: the two documents are the same,
// and the one put as structs is returned.
func putAsStructAndAsText(t *testing.T, layers []layer.Entry, g layer.GridSetEntry) []byte {
	t.Helper()
	asStruct, err := layer.ParseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	asText, err := layer.ParseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asStruct.PutGridSetEntry(g); err != nil {
		t.Fatal(err)
	}
	text, err := g.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asText.PutGridSet(g.ID, text); err != nil {
		t.Fatal(err)
	}
	for _, e := range layers {
		if created, err := asStruct.PutLayerEntry(e); err != nil || !created {
			t.Fatalf("put %s: created %v, %v", e.Name, created, err)
		}
		text, err := e.YAML()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := asText.PutLayer(e.Name, text); err != nil {
			t.Fatal(err)
		}
	}
	// Put again: replaced in place.
	if created, err := asStruct.PutLayerEntry(layers[0]); err != nil || created {
		t.Fatalf("put again: created %v, %v", created, err)
	}
	got, err := asStruct.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	want, err := asText.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("put as a struct:\n%s\nput as text:\n%s", got, want)
	}

	return got
}

// readBackEntries: the stored document decodes into the same entries.
func readBackEntries(t *testing.T, got []byte, layers []layer.Entry, g layer.GridSetEntry) {
	t.Helper()
	var back struct {
		GridSets []layer.GridSetEntry `yaml:"gridSets"`
		Layers   []layer.Entry        `yaml:"layers"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(got))
	dec.KnownFields(true)
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	if len(back.Layers) != len(layers) || len(back.GridSets) != 1 {
		t.Fatalf("read back %d layers and %d grid sets", len(back.Layers), len(back.GridSets))
	}
	same := func(a, b interface{ YAML() ([]byte, error) }) bool {
		x, errX := a.YAML()
		y, errY := b.YAML()
		return errX == nil && errY == nil && bytes.Equal(x, y)
	}
	for i, e := range layers {
		if !same(back.Layers[i], e) {
			t.Errorf("layer %s read back differs: %+v, want %+v", e.Name, back.Layers[i], e)
		}
	}
	if !same(back.GridSets[0], g) {
		t.Errorf("grid set read back differs: %+v, want %+v", back.GridSets[0], g)
	}
}

// buildStoredEntries: the stored document is a configuration the layers
// build from.
func buildStoredEntries(t *testing.T, got []byte, layers []layer.Entry) {
	t.Helper()
	c, err := layer.Parse(got, "stored")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range layers {
		l, ok := c.Layer(e.Name)
		if !ok {
			t.Fatalf("layer %s not built", e.Name)
		}
		src, err := l.WMSSource()
		if err != nil || src.URL != e.Source.URL || src.Layers != e.Source.Layers || len(src.Params) != len(e.Source.Params) {
			t.Errorf("layer %s: source %+v, %v; want %+v", e.Name, src, err, e.Source)
		}
	}
}

// TestSourceOfAnotherType: a source that is not a WMS is kept as the
// layer file gives it, its keys handed to the source and written back.
func TestSourceOfAnotherType(t *testing.T) {
	doc := "layers:\n  - name: x\n    gridSubsets: [{gridSet: EPSG:4326}]\n    formats: [image/png]\n" +
		"    source: {type: xyz, url: \"http://127.0.0.1/{z}/{x}/{y}.png\", other: [1, 2]}\n"
	var f struct {
		Layers []layer.Entry `yaml:"layers"`
	}
	if err := yaml.Unmarshal([]byte(doc), &f); err != nil {
		t.Fatal(err)
	}
	if s := f.Layers[0].Source; s.Type != "xyz" || s.URL != "" {
		t.Errorf("source %+v: want type xyz and no wms fields", s)
	}
	out, err := f.Layers[0].YAML()
	if err != nil || !strings.Contains(string(out), "other: [1, 2]") || !strings.Contains(string(out), "type: xyz") {
		t.Errorf("written back:\n%s (%v)", out, err)
	}
	c, err := layer.Parse([]byte(doc), "x")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := c.Layer("x")
	var keys map[string]any
	if err := l.Source.Decode(&keys); err != nil || keys["other"] == nil || l.SourceType != "xyz" {
		t.Errorf("the layer's source: %v, %v (type %q)", keys, err, l.SourceType)
	}
}
