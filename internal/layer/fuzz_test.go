package layer_test

import (
	"os"
	"reflect"
	"testing"

	"tilecache/internal/layer"
)

// fileSeeds are layer files of the package's tests: the GeoWebCache
// schema's keys, managed entries, problems reported together, a coverage,
// expiry rules and anchors shared between entries.
var fileSeeds = []string{
	gwcSchemaFile,
	fileLayers,
	`
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
`,
	"layers:\n  - name: a\n    colour: red\n",
	`
layers:
  - {name: big, gridSubsets: [{gridSet: EPSG:4326}], formats: [image/png], metatiling: [40, 40], source: {type: wms, url: "http://127.0.0.1:1/wms", layers: a}}
  - {name: a, id: shared, gridSubsets: [{gridSet: EPSG:4326}], formats: [image/png], source: {type: testpattern}}
  - {name: b, id: shared, gridSubsets: [{gridSet: EPSG:4326}], formats: [image/png], source: {type: testpattern}}
`,
	`
layers:
  - name: a
    gridSubsets: [{gridSet: EPSG:4326, extent: [-10, -5, 10, 5.5], zoomStart: 2, zoomStop: 9, maxCachedLevel: 7}]
    formats: [image/png]
    parameterFilters:
      - {key: styles, default: "", values: [pophatch, polygon]}
      - {key: CQL_FILTER, default: "INCLUDE", regex: "[A-Z_ >0-9]*"}
    expireCacheList: [{minZoom: 0, expiration: 0}, {minZoom: 5, expiration: 86400}]
    expireClients: 20
    renderOnMiss: {enabled: true, zoomStart: 1, zoomStop: 4}
    coverage: {geometry: "POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))", buffer: 100}
    source: {type: wms, url: "http://127.0.0.1:1/wms", layers: a, timeout: 1500ms, retries: -1}
`,
	`
gridSets:
  - &g {id: G, epsg: 4326, extent: [-180, -90, 180, 90], resolutions: [0.703125]}
layers:
  - &l {name: a, gridSubsets: [{gridSet: G}], formats: [image/png], source: &s {type: testpattern}}
  - {name: b, gridSubsets: [{gridSet: EPSG:4326}], formats: [image/png], source: *s}
`,
	`
layers:
  - {name: a, gridSubsets: &subs [{gridSet: EPSG:4326}], formats: &f [image/png], source: {type: testpattern}}
  - {name: b, gridSubsets: *subs, formats: *f, source: {type: testpattern}}
`,
}

// FuzzParse: a layer file is parsed or refused with an error, never a
// panic; each layer of a parsed file is written as its own layer file
// (Document), which parses to the same layer with the same version and
// is written again byte for byte.
func FuzzParse(f *testing.F) {
	demo, err := os.ReadFile("demo.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(demo)
	for _, s := range fileSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := layer.Parse(data, "fuzz.yaml")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		for _, name := range c.Names() {
			l, _ := c.Layer(name)
			doc, ok := c.Document(name)
			if !ok {
				t.Fatalf("layer %q has no document", name)
			}
			back, err := layer.ParseDefinition(doc, name)
			if err != nil {
				t.Fatalf("the document of layer %q does not parse: %v\n%s", name, err, doc)
			}
			if got, want := layerView(back), layerView(l); !reflect.DeepEqual(got, want) {
				t.Fatalf("layer %q parsed again:\ngot  %+v\nwant %+v\n%s", name, got, want, doc)
			}
			c2, _ := layer.Parse(doc, "again")
			if doc2, _ := c2.Document(name); string(doc2) != string(doc) {
				t.Fatalf("layer %q written again differs:\n%s\n---\n%s", name, doc2, doc)
			}
		}
	})
}

// layerView is what a layer file written again must keep of a layer.
func layerView(l *layer.Layer) map[string]any {
	type sub struct {
		GridSet  any
		Coverage any
		Min, Max int
	}
	var subs []sub
	for _, s := range l.Subsets {
		subs = append(subs, sub{s.GridSet, s.Coverage, s.MinZoom, s.MaxZoom})
	}
	type filter struct {
		Key, Default, Regex, Type string
		Values                    []string
		Threshold                 float64
	}
	var filters []filter
	for _, f := range l.Filters {
		re := ""
		if f.Regex != nil {
			re = f.Regex.String()
		}
		filters = append(filters, filter{f.Key, f.Default, re, f.Type, f.Values, f.Threshold})
	}
	return map[string]any{"name": l.Name, "id": l.ID, "version": l.Version, "title": l.Title, "attribution": l.Attribution,
		"description": l.Description, "enabled": l.Enabled, "subsets": subs, "cached": l.CachedLevels, "formats": l.Formats,
		"meta": [2]int{l.MetaWidth, l.MetaHeight}, "gutter": l.Gutter, "filters": filters, "cacheControl": l.CacheControl,
		"clients": l.ClientExpiry, "cache": l.CacheExpiryRules, "miss": l.RenderOnMiss, "coverage": l.Coverage,
		"sourceType": l.SourceType, "managed": l.Managed}
}
