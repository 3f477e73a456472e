package gwc_test

import (
	"reflect"
	"strings"
	"testing"

	"tilecache/internal/gwc"
)

const configuration = `<?xml version="1.0" encoding="utf-8"?>
<gwcConfiguration xmlns="http://geowebcache.org/schema/1.8.0">
  <version>1.8.0</version>
  <backendTimeout>120</backendTimeout>
  <serviceInformation><title>x</title></serviceInformation>
  <gridSets>
    <gridSet>
      <name>Good</name>
      <srs><number>3035</number></srs>
      <extent><coords><double>0</double><double>0</double><double>1000</double><double>1000</double></coords></extent>
      <resolutions><double>4</double><double>2</double></resolutions>
    </gridSet>
    <gridSet>
      <name>Bad</name>
      <srs><number>3035</number></srs>
      <extent><coords><double>0</double><double>0</double><double>1000</double><double>1000</double></coords></extent>
      <resolutions><double>2</double><double>4</double></resolutions>
    </gridSet>
  </gridSets>
  <layers>
    <wmsLayer>
      <name>one</name>
      <mimeFormats><string>image/png</string></mimeFormats>
      <gridSubsets><gridSubset><gridSetName>Good</gridSetName></gridSubset></gridSubsets>
      <wmsUrl><string>http://h/wms</string></wmsUrl>
    </wmsLayer>
    <wmsLayer>
      <name>unsupported</name>
      <inMemoryCached>true</inMemoryCached>
      <wmsUrl><string>http://h/wms</string></wmsUrl>
    </wmsLayer>
    <wmsLayer>
      <name>on a bad grid</name>
      <mimeFormats><string>image/png</string></mimeFormats>
      <gridSubsets><gridSubset><gridSetName>Bad</gridSetName></gridSubset></gridSubsets>
      <wmsUrl><string>http://h/wms</string></wmsUrl>
    </wmsLayer>
    <arcgisLayer><name>tiles</name></arcgisLayer>
    <wmsLayer>
      <name>one</name>
      <mimeFormats><string>image/png</string></mimeFormats>
      <gridSubsets><gridSubset><gridSetName>EPSG:4326</gridSetName></gridSubset></gridSubsets>
      <wmsUrl><string>http://h/wms</string></wmsUrl>
    </wmsLayer>
    <wmsLayer>
      <name>two</name>
      <mimeFormats><string>image/png</string></mimeFormats>
      <gridSubsets><gridSubset><gridSetName>EPSG:4326</gridSetName></gridSubset></gridSubsets>
      <wmsUrl><string>http://h/wms</string></wmsUrl>
    </wmsLayer>
  </layers>
</gwcConfiguration>`

func TestDecodeConfiguration(t *testing.T) {
	c, err := gwc.DecodeConfiguration([]byte(configuration))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.GridSets) != 1 || c.GridSets[0].ID != "Good" {
		t.Errorf("grid sets: got %+v, want Good only", c.GridSets)
	}
	var names []string
	for _, l := range c.Layers {
		names = append(names, l.Name)
	}
	if !reflect.DeepEqual(names, []string{"one", "two"}) {
		t.Errorf("layers: got %v, want [one two]", names)
	}
	if !reflect.DeepEqual(c.NotMapped, []string{"version", "backendTimeout", "serviceInformation"}) {
		t.Errorf("not mapped: got %v", c.NotMapped)
	}
	want := map[string]string{
		"gridSets/gridSet[1] Bad":          "not strictly decreasing",
		"layers/wmsLayer[1] unsupported":   "wmsLayer/inMemoryCached",
		"layers/wmsLayer[2] on a bad grid": `unknown grid set "Bad"`,
		"layers/arcgisLayer[3]":            "only wmsLayer",
		"layers/wmsLayer[4] one":           "defined twice",
	}
	if len(c.Problems) != len(want) {
		t.Errorf("got %d problems, want %d: %+v", len(c.Problems), len(want), c.Problems)
	}
	for _, p := range c.Problems {
		if w, ok := want[p.Item]; !ok || !strings.Contains(p.Message, w) {
			t.Errorf("problem %s: %s; want one containing %q", p.Item, p.Message, w)
		}
	}
	if _, err := gwc.DecodeConfiguration([]byte("<layers/>")); err == nil {
		t.Error("a document that is not a gwcConfiguration: got nil error")
	}
}
