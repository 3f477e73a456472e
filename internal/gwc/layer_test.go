package gwc_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/source/upstream"
	"tilecache/internal/source/wms"
)

func mustRead(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// mustParse builds the catalogue of layers (and grid sets) through their
// YAML entries, as a layer file would hold them.
func mustParse(tb testing.TB, gridSets []gwc.GridSet, layers ...gwc.Layer) *layer.Catalogue {
	tb.Helper()
	var b strings.Builder
	if len(gridSets) > 0 {
		b.WriteString("gridSets:\n")
		for _, g := range gridSets {
			y, err := g.YAML()
			if err != nil {
				tb.Fatal(err)
			}
			b.WriteString(entry(string(y)))
		}
	}
	b.WriteString("layers:\n")
	for _, l := range layers {
		y, err := l.YAML()
		if err != nil {
			tb.Fatal(err)
		}
		b.WriteString(entry(string(y)))
	}
	c, err := layer.Parse([]byte(b.String()), "test")
	if err != nil {
		tb.Fatalf("%v\n%s", err, b.String())
	}
	return c
}

// entry turns a YAML mapping into an item of a list under a key.
func entry(y string) string {
	lines := strings.Split(strings.TrimRight(y, "\n"), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = "  - " + lines[i]
		} else {
			lines[i] = "    " + lines[i]
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestDecodeEveryElement(t *testing.T) {
	l, err := gwc.DecodeLayer(mustRead(t, "full.xml"))
	if err != nil {
		t.Fatal(err)
	}
	c := mustParse(t, nil, l)
	got, _ := c.Layer("topp:states")
	if got.Enabled || got.Title != "US states" || got.Description != "Free text & more." || got.ID != "states" ||
		got.Attribution != "© State data providers" || got.CacheControl != "" || !got.Private {
		t.Errorf("names and texts: got %+v", got)
	}
	if !reflect.DeepEqual(got.Formats, []string{"image/png", "image/jpeg"}) || got.MetaWidth != 2 || got.MetaHeight != 3 || got.Gutter != 8 {
		t.Errorf("formats, metatiling, gutter: got %v %d×%d %d", got.Formats, got.MetaWidth, got.MetaHeight, got.Gutter)
	}
	sub, ok := got.Subset("EPSG:4326")
	if !ok || sub.MinZoom != 1 || sub.MaxZoom != 12 || sub.Coverage.MinX != -124 || sub.Coverage.MaxY != 50 {
		t.Errorf("subset: got %+v", sub)
	}
	if got.Cached(sub, 1) || !got.Cached(sub, 2) || !got.Cached(sub, 10) || got.Cached(sub, 11) {
		t.Errorf("cached levels: got %+v", got.CachedLevels)
	}
	if d, ok := got.CacheExpiry(5); !ok || d != time.Hour {
		t.Errorf("expireCache: got %v %v", d, ok)
	}
	if s, _ := got.ClientMaxAge(7); s != 500 {
		t.Errorf("expireClients at 7: got %d, want 500", s)
	}
	if s, _ := got.ClientMaxAge(8); s != 60 {
		t.Errorf("expireClients at 8: got %d, want 60", s)
	}
	if len(got.Filters) != 4 || got.Filters[1].Regex == nil || !got.Filters[1].Allows("a <> b") ||
		got.Filters[2].Type != "float" || got.Filters[2].Threshold != 0.1 || got.Filters[3].Type != "integer" || got.Filters[3].Threshold != 3 {
		t.Errorf("filters: got %+v", got.Filters)
	}
	if got.RenderOnMiss == nil || got.RenderOnMiss.ZoomStart != 3 || got.RenderOnMiss.ZoomStop != 9 {
		t.Errorf("renderOnMiss: got %+v", got.RenderOnMiss)
	}
	if got.Coverage == nil || got.Coverage.SRS != 4326 || got.Coverage.Buffer != 100 || got.Area("EPSG:900913") == nil {
		t.Errorf("coverage: got %+v", got.Coverage)
	}
	want := gwc.WMSSource{Type: "wms", URL: "http://127.0.0.1:8081/wms?map=/srv/states.map", Layers: "states,labels", Styles: "population",
		Version: "1.3.0", Format: "image/tiff", Transparent: false, BGColor: "0x0066FF", AxisOrder: "xy",
		SRS: map[string]string{"EPSG:900913": "EPSG:3857"}, Params: map[string]string{"MAP_RESOLUTION": "96", "TILED": "true"},
		Timeout: "30s", Retries: ptr(3), RetryBackoff: "500ms", MaxConcurrent: 2, Headers: map[string]string{"Referer": "https://maps.example.org/"},
		PNGCompression: 6, JPEGQuality: 90, SkipBlank: "transparent"}
	if !reflect.DeepEqual(l.Source, want) {
		t.Errorf("source:\ngot  %+v\nwant %+v", l.Source, want)
	}
	if _, err := wms.New(got, upstream.Shared{}); err != nil {
		t.Errorf("the wms source refuses the decoded options: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestGeoWebCacheSamples(t *testing.T) {
	minimal, err := gwc.DecodeLayer(mustRead(t, "gwc_wmslayer_minimal.xml"))
	if err != nil {
		t.Fatal(err)
	}
	c := mustParse(t, nil, minimal)
	l, _ := c.Layer("layer1")
	if l.Title != "layer1" || l.Subsets[0].GridSet.ID != "EPSG:900913" || l.SourceType != "wms" {
		t.Errorf("minimal: got %+v", l)
	}
	if minimal.Source.URL != "http://localhost:8080/geoserver/wms" || minimal.Source.Layers != "topp:states" || !minimal.Source.Transparent {
		t.Errorf("minimal source: got %+v (transparent is GeoWebCache's default, true)", minimal.Source)
	}

	full, err := gwc.DecodeLayer(mustRead(t, "gwc_wmslayer.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if full.Name != "img states" || full.Title != "Nicer title for Image States" || full.Description != "This is a description. Fascinating." ||
		!reflect.DeepEqual(full.ExpireCacheList, []gwc.Rule{{MinZoom: 0, Expiration: 60}}) ||
		!reflect.DeepEqual(full.ExpireClientsList, []gwc.Rule{{MinZoom: 0, Expiration: 500}}) ||
		full.Source.BGColor != "0x0066FF" || full.Source.Transparent || full.Source.Layers != "nurc:Img_Sample,topp:states" ||
		!reflect.DeepEqual(full.GridSubsets[0].Extent, []float64{-129.6, 3.45, -62.1, 70.9}) {
		t.Errorf("wmslayer sample: got %+v", full)
	}
	c = mustParse(t, nil, full)
	if l, ok := c.Layer("img states"); !ok || len(l.Formats) != 4 {
		t.Errorf("wmslayer sample in the layer file: got %+v", l)
	}
	full.Formats = append(full.Formats, "image/bmp")
	if err := gwc.Check(nil, []gwc.Layer{full}); err == nil || !strings.Contains(err.Error(), `unknown format "image/bmp"`) || !apperr.Is(err, apperr.Invalid) {
		t.Errorf("Check: got %v, want an Invalid error naming image/bmp", err)
	}
}

func TestUnsupportedElementsNamed(t *testing.T) {
	doc := `<wmsLayer><name>a</name><blobStoreId>x</blobStoreId><inMemoryCached>true</inMemoryCached>
  <gridSubsets><gridSubset><gridSetName>EPSG:4326</gridSetName><extra/></gridSubset></gridSubsets>
  <parameterFilters><stringParameterFilter><key>S</key><normalize><case>UPPER</case></normalize><values><string>a</string></values></stringParameterFilter><fooParameterFilter/></parameterFilters>
  <expireClientsList><expirationRule minZoom="0" expiration="1" when="now"/></expireClientsList>
  <other:thing xmlns:other="urn:x"/><tc:nope xmlns:tc="https://tilecache.dev/xml/1"/>
  <wmsUrl><string>http://h/wms</string></wmsUrl></wmsLayer>`
	_, err := gwc.DecodeLayer([]byte(doc))
	if !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("got %v, want an Invalid error", err)
	}
	for _, want := range []string{"wmsLayer/blobStoreId", "wmsLayer/inMemoryCached", "wmsLayer/gridSubsets/gridSubset/extra",
		"wmsLayer/parameterFilters/stringParameterFilter/normalize", "wmsLayer/parameterFilters/fooParameterFilter",
		"wmsLayer/expireClientsList/expirationRule/@when", "wmsLayer/{urn:x}thing", "wmsLayer/tc:nope"} {
		if !strings.Contains(apperr.Message(err), want) {
			t.Errorf("message does not name %s:\n%s", want, apperr.Message(err))
		}
	}
}

func TestDecodeLayerErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"malformed", `<wmsLayer><name>a</name>`, "malformed XML"},
		{"wrong root", `<gridSet/>`, "not wmsLayer"},
		{"name missing", `<wmsLayer><wmsUrl><string>http://h/</string></wmsUrl></wmsLayer>`, "wmsLayer/name: a layer name is required"},
		{"integer malformed", `<wmsLayer><name>a</name><gutter>eight</gutter><wmsUrl><string>http://h/</string></wmsUrl></wmsLayer>`, "wmsLayer/gutter: eight is not an integer"},
		{"coordinate malformed", `<wmsLayer><name>a</name><gridSubsets><gridSubset><gridSetName>G</gridSetName><extent><coords><double>1</double><double>x</double><double>2</double><double>3</double></coords></extent></gridSubset></gridSubsets><wmsUrl><string>http://h/</string></wmsUrl></wmsLayer>`, "extent/coords/double: x is not a finite number"},
		{"three metatiling numbers", `<wmsLayer><name>a</name><metaWidthHeight><int>1</int><int>2</int><int>3</int></metaWidthHeight><wmsUrl><string>http://h/</string></wmsUrl></wmsLayer>`, "needs 2 integers"},
		{"boolean malformed", `<wmsLayer><name>a</name><transparent>yes</transparent><wmsUrl><string>http://h/</string></wmsUrl></wmsLayer>`, "yes is not true or false"},
		{"several URLs", `<wmsLayer><name>a</name><wmsUrl><string>http://h/</string><string>http://i/</string></wmsUrl></wmsLayer>`, "2 URLs given"},
		{"no URL", `<wmsLayer><name>a</name></wmsLayer>`, "one WMS URL is required"},
		{"twice", `<wmsLayer><name>a</name><name>b</name><wmsUrl><string>http://h/</string></wmsUrl></wmsLayer>`, "wmsLayer/name: given 2 times"},
		{"both expiry forms", `<wmsLayer><name>a</name><expireCache>1</expireCache><expireCacheList><expirationRule minZoom="0" expiration="1"/></expireCacheList><wmsUrl><string>http://h/</string></wmsUrl></wmsLayer>`, "either expireCache or expireCacheList"},
		{"post", `<wmsLayer><name>a</name><wmsUrl><string>http://h/</string></wmsUrl><httpRequestMode>FormPost</httpRequestMode></wmsLayer>`, "FormPost is not supported"},
		{"vendor parameter twice", `<wmsLayer><name>a</name><wmsUrl><string>http://h/</string></wmsUrl><vendorParameters>A=1&amp;A=2</vendorParameters></wmsLayer>`, "parameter A is given 2 times"},
		{"DTD", `<!DOCTYPE x [<!ENTITY e "x">]><wmsLayer/>`, "DTDs are not accepted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gwc.DecodeLayer([]byte(tc.doc))
			if !apperr.Is(err, apperr.Invalid) || !strings.Contains(apperr.Message(err), tc.want) {
				t.Errorf("got %v, want an Invalid error containing %q", err, tc.want)
			}
		})
	}
}
