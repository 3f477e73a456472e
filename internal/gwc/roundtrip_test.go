package gwc_test

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/source/upstream"
	"tilecache/internal/source/wms"
)

const roundTripFile = `
layers:
  - name: plain
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    cacheControl: no-store
    source: {type: wms, url: "http://h/wms", layers: roads}
  - name: tuned
    title: Tuned
    attribution: "© us"
    gridSubsets:
      - {gridSet: EPSG:4326, extent: [-10, -5, 10, 5.5], zoomStart: 2, zoomStop: 9, maxCachedLevel: 7}
    formats: [image/jpeg, image/png8]
    metatiling: [8, 2]
    gutter: 4
    expireClients: 20
    expireCacheList: [{minZoom: 0, expiration: 0}, {minZoom: 5, expiration: 86400}]
    renderOnMiss: {enabled: true}
    parameterFilters:
      - {key: STYLES, default: a, values: [a, b]}
      - {key: TIME, regex: "\\d{4}"}
    source: {type: wms, url: "http://h/wms?map=x&y=1", layers: "a,b", styles: s, version: 1.1.1, transparent: true,
             params: {FORMAT_OPTIONS: "dpi:96", Z: "a&b"}, timeout: 1500ms, retries: -1, headers: {X-Key: "k<&>"}}
`

// view is what a round trip must keep of a layer.
func view(tb testing.TB, l *layer.Layer) map[string]any {
	tb.Helper()
	var src map[string]any
	if err := l.Source.Decode(&src); err != nil {
		tb.Fatal(err)
	}
	type sub struct {
		ID       string
		Coverage any
		Min, Max int
	}
	var subs []sub
	for _, s := range l.Subsets {
		subs = append(subs, sub{s.GridSet.ID, s.Coverage, s.MinZoom, s.MaxZoom})
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
	return map[string]any{"name": l.Name, "id": l.ID, "title": l.Title, "attribution": l.Attribution, "description": l.Description,
		"enabled": l.Enabled, "subsets": subs, "cached": l.CachedLevels, "formats": l.Formats, "meta": [2]int{l.MetaWidth, l.MetaHeight},
		"gutter": l.Gutter, "filters": filters, "cacheControl": l.CacheControl, "clients": l.ClientExpiry, "cache": l.CacheExpiryRules,
		"miss": l.RenderOnMiss, "coverage": l.Coverage, "sourceType": l.SourceType, "source": normalise(src)}
}

// normalise makes the source's values comparable whatever way the YAML
// wrote them (a duration as 1.5s or 1500ms, a version as a number).
func normalise(src map[string]any) map[string]any {
	out, _ := yaml.Marshal(src)
	var m map[string]any
	_ = yaml.Unmarshal(out, &m)
	for k, v := range m {
		m[k] = strings.TrimSpace(yamlText(v))
	}
	if _, ok := m["transparent"]; !ok {
		m["transparent"] = "false" // the wms source's default; the XML always says which
	}
	return m
}

func yamlText(v any) string {
	out, _ := yaml.Marshal(v)
	return string(out)
}

func roundTrip(t *testing.T, l *layer.Layer) {
	t.Helper()
	doc, err := gwc.EncodeLayer(l)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := gwc.DecodeLayer(doc)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	c := mustParse(t, nil, dec)
	back, _ := c.Layer(l.Name)
	if got, want := view(t, back), view(t, l); !reflect.DeepEqual(got, want) {
		t.Errorf("round trip of %s:\ngot  %+v\nwant %+v\n%s", l.Name, got, want, doc)
	}
	again, err := gwc.EncodeLayer(back)
	if err != nil || string(again) != string(doc) {
		t.Errorf("second encoding differs (%v):\n%s\n---\n%s", err, again, doc)
	}
	if _, err := wms.New(back, upstream.Shared{}); err != nil {
		t.Errorf("the wms source refuses %s after a round trip: %v", l.Name, err)
	}
}

func TestRoundTrip(t *testing.T) {
	c, err := layer.Parse([]byte(roundTripFile), "x")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range c.Names() {
		l, _ := c.Layer(name)
		t.Run(name, func(t *testing.T) { roundTrip(t, l) })
	}
	full, err := gwc.DecodeLayer(mustRead(t, "full.xml"))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := mustParse(t, nil, full).Layer("topp:states")
	t.Run("every element", func(t *testing.T) { roundTrip(t, l) })
}

func TestEncodeLayerOrder(t *testing.T) {
	full, err := gwc.DecodeLayer(mustRead(t, "full.xml"))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := mustParse(t, nil, full).Layer("topp:states")
	doc, err := gwc.EncodeLayer(l)
	if err != nil {
		t.Fatal(err)
	}
	order := []string{"<enabled>", "<name>", "<metaInformation>", "<mimeFormats>", "<gridSubsets>", "<metaWidthHeight>", "<expireCache>",
		"<expireClientsList>", "<backendTimeout>", "<parameterFilters>", "<wmsUrl>", "<wmsLayers>", "<wmsStyles>", "<gutter>",
		"<wmsVersion>", "<transparent>", "<bgColor>", "<vendorParameters>", "<tc:id>", "<tc:skipBlank>"}
	last := -1
	for _, tag := range order {
		i := strings.Index(string(doc), tag)
		if i <= last {
			t.Errorf("%s at %d, not after the previous element (%d):\n%s", tag, i, last, doc)
		}
		last = i
	}
}

func TestEncodeLayerRefusesOtherSources(t *testing.T) {
	c, err := layer.Parse([]byte("layers:\n  - name: t\n    gridSubsets: [{gridSet: EPSG:4326}]\n    formats: [image/png]\n    source: {type: testpattern}\n"), "x")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := c.Layer("t")
	if _, err := gwc.EncodeLayer(l); err == nil || !strings.Contains(err.Error(), "testpattern") {
		t.Errorf("got %v, want ErrNotWMS naming testpattern", err)
	}
}

// TestSourceKeys guards the codec against a wms option it does not know:
// every key of wms.Options must be a key of gwc.WMSSource.
func TestSourceKeys(t *testing.T) {
	want := yamlKeys(reflect.TypeOf(wms.Options{}))
	got := yamlKeys(reflect.TypeOf(gwc.WMSSource{}))
	for k := range want {
		if !got[k] {
			t.Errorf("wms option %q has no field in WMSSource", k)
		}
	}
}

func yamlKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || !f.IsExported():
		case strings.Contains(opts, "inline"):
			for k := range yamlKeys(f.Type) {
				keys[k] = true
			}
		default:
			keys[name] = true
		}
	}
	return keys
}
