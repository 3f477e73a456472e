package layer_test

import (
	"maps"
	"strings"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
)

func TestDemo(t *testing.T) {
	c, err := layer.Demo()
	if err != nil {
		t.Fatal(err)
	}
	l, ok := c.Layer("demo:world")
	if !ok {
		t.Fatal("demo:world missing")
	}
	if l.MetaWidth != 4 || l.MetaHeight != 4 || len(l.Subsets) != 2 || l.Formats[0] != "image/png" || !l.HasFormat("image/jpeg") {
		t.Errorf("got %+v", l)
	}
	for _, id := range []string{"EPSG:4326", "EPSG:900913"} {
		s, ok := l.Subset(id)
		if !ok || s.MinZoom != 0 || s.MaxZoom != s.GridSet.Levels()-1 {
			t.Errorf("%s: got %+v, %v; want the whole grid", id, s, ok)
		}
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	_, err := layer.Parse([]byte(`
gridSets:
  - id: Bad
    epsg: 3035
    extent: [0, 0, 1]
    resolutions: [1]
layers:
  - name: a
    gridSubsets: [{gridSet: Nope}]
    formats: [image/bogus]
    metatiling: [0, 4]
    source: {type: testpattern}
  - name: b
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    parameterFilters: [{key: STYLES}]
`), "layers.yaml")
	if err == nil {
		t.Fatal("got nil error")
	}
	for _, want := range []string{"layers.yaml", "extent needs 4 numbers", `unknown grid set "Nope"`, `unknown format "image/bogus"`,
		"metatiling [0 4]", "values or regex is required", "source: a mapping with a type is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if _, err := layer.Parse([]byte("layers:\n  - name: a\n    colour: red\n"), "x"); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("unknown key: got %v", err)
	}
	// A WMS metatile must decode: 40×40 tiles of 256 px are 10240² pixels.
	_, err = layer.Parse([]byte(`
layers:
  - {name: big, gridSubsets: [{gridSet: EPSG:4326}], formats: [image/png], metatiling: [40, 40], source: {type: wms, url: "http://127.0.0.1:1/wms", layers: a}}
  - {name: fine, gridSubsets: [{gridSet: EPSG:4326}], formats: [image/png], metatiling: [40, 40], source: {type: testpattern}}
`), "big.yaml")
	if err == nil || !strings.Contains(err.Error(), `layers[0] "big": metatiling 40x40 with gutter 0: a EPSG:4326 metatile is 10240×10240 pixels`) || strings.Contains(err.Error(), `"fine"`) {
		t.Errorf("oversized WMS metatile: got %v", err)
	}
	// Two layers with one id would share their keys.
	_, err = layer.Parse([]byte(`
layers:
  - {name: a, id: shared, gridSubsets: [{gridSet: EPSG:4326}], formats: [image/png], source: {type: testpattern}}
  - {name: b, id: shared, gridSubsets: [{gridSet: EPSG:4326}], formats: [image/png], source: {type: testpattern}}
  - {name: shared, gridSubsets: [{gridSet: EPSG:4326}], formats: [image/png], source: {type: testpattern}}
`), "ids.yaml")
	for _, want := range []string{`layers[1] "b": id "shared" is already the id of layer "a"`, `layers[2] "shared": id "shared" is already the id of layer "a"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("duplicate ids: got %v, want it to say %s", err, want)
		}
	}
}

func TestNormaliseParameters(t *testing.T) {
	c, err := layer.Parse([]byte(`
layers:
  - name: a
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    parameterFilters:
      - {key: styles, default: "", values: [pophatch, polygon]}
      - {key: CQL_FILTER, default: "INCLUDE", regex: "[A-Z_ >0-9]*"}
    source: {type: testpattern}
`), "x")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := c.Layer("a")
	tests := []struct {
		name  string
		pairs [][2]string
		want  map[string]string
		err   string
	}{
		{"none", nil, nil, ""},
		{"defaults only", [][2]string{{"STYLES", ""}, {"cql_filter", "INCLUDE"}}, nil, ""},
		{"unknown names ignored", [][2]string{{"FORMAT_OPTIONS", "x"}}, nil, ""},
		{"case-insensitive name", [][2]string{{"Styles", "pophatch"}}, map[string]string{"STYLES": "pophatch", "CQL_FILTER": "INCLUDE"}, ""},
		{"regex", [][2]string{{"CQL_FILTER", "POP > 10"}}, map[string]string{"STYLES": "", "CQL_FILTER": "POP > 10"}, ""},
		{"list rejects", [][2]string{{"STYLES", "foo"}}, nil, "Invalid value for parameter STYLES: foo"},
		{"regex must match entirely", [][2]string{{"CQL_FILTER", "pop"}}, nil, "Invalid value for parameter CQL_FILTER: pop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := l.NormaliseParameters(tt.pairs)
			if tt.err != "" {
				if !apperr.Is(err, apperr.Invalid) || apperr.Message(err) != tt.err {
					t.Fatalf("got %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestTitleAndAttribution(t *testing.T) {
	tests := []struct {
		name            string
		yaml            string
		wantTitle       string
		wantAttribution string
	}{
		{"defaults", "", "a", ""},
		{"both set", "    title: Roads of A\n    attribution: \"&copy; A contributors\"\n", "Roads of A", "&copy; A contributors"},
		{"blank title means the name", "    title: \"  \"\n", "a", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := layer.Parse([]byte("layers:\n  - name: a\n"+tt.yaml+
				"    gridSubsets: [{gridSet: EPSG:4326}]\n    formats: [image/png]\n    source: {type: testpattern}\n"), "x")
			if err != nil {
				t.Fatal(err)
			}
			l, _ := c.Layer("a")
			if l.Title != tt.wantTitle || l.Attribution != tt.wantAttribution {
				t.Errorf("got title %q, attribution %q; want %q, %q", l.Title, l.Attribution, tt.wantTitle, tt.wantAttribution)
			}
		})
	}
	c, err := layer.Demo()
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := c.Layer("demo:world"); l.Attribution == "" || l.Title == "" {
		t.Errorf("demo:world: got title %q, attribution %q; want both set", l.Title, l.Attribution)
	}
}

// TestAllowPrivateUpstreamIsTheFiles: a source's allowPrivateUpstream is
// a layer file's setting; an entry the file hands to the store may not
// carry it.
func TestAllowPrivateUpstreamIsTheFiles(t *testing.T) {
	entry := func(managed string) string {
		return "layers:\n  - name: l\n" + managed + "    gridSubsets: [{gridSet: EPSG:4326}]\n    formats: [image/png]\n" +
			"    source: {type: wms, url: http://127.0.0.1:8081/wms, layers: a, allowPrivateUpstream: true}\n"
	}
	for _, m := range []string{"", "    managedBy: file\n"} {
		if _, err := layer.Parse([]byte(entry(m)), "t.yaml"); err != nil {
			t.Errorf("managed by the file (%q): %v", m, err)
		}
	}
	_, err := layer.Parse([]byte(entry("    managedBy: store\n")), "t.yaml")
	if err == nil || !strings.Contains(err.Error(), "allowPrivateUpstream is for layers managed by the layer file") {
		t.Errorf("managedBy: store: got %v, want allowPrivateUpstream refused", err)
	}
}
