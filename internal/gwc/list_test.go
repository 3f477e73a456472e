package gwc_test

import (
	"strings"
	"testing"

	"tilecache/internal/gwc"
)

func TestEncodeLists(t *testing.T) {
	got := string(gwc.EncodeLayerList([]string{"img states", "topp:states", "a&b"}, "http://localhost:8080/geowebcache/"))
	want := `<layers>
  <layer>
    <name>img states</name>
    <atom:link xmlns:atom="http://www.w3.org/2005/Atom" rel="alternate" href="http://localhost:8080/geowebcache/rest/layers/img%20states.xml" type="text/xml"/>
  </layer>
  <layer>
    <name>topp:states</name>
    <atom:link xmlns:atom="http://www.w3.org/2005/Atom" rel="alternate" href="http://localhost:8080/geowebcache/rest/layers/topp:states.xml" type="text/xml"/>
  </layer>
  <layer>
    <name>a&amp;b</name>
    <atom:link xmlns:atom="http://www.w3.org/2005/Atom" rel="alternate" href="http://localhost:8080/geowebcache/rest/layers/a&amp;b.xml" type="text/xml"/>
  </layer>
</layers>
`
	if got != want {
		t.Errorf("layers:\ngot\n%s\nwant\n%s", got, want)
	}
	got = string(gwc.EncodeGridSetList([]string{"EPSG:2163", "Grille/é?"}, "http://h/gwc"))
	want = `<gridSets>
  <gridSet>
    <name>EPSG:2163</name>
    <atom:link xmlns:atom="http://www.w3.org/2005/Atom" rel="alternate" href="http://h/gwc/rest/gridsets/EPSG:2163.xml" type="text/xml"/>
  </gridSet>
  <gridSet>
    <name>Grille/é?</name>
    <atom:link xmlns:atom="http://www.w3.org/2005/Atom" rel="alternate" href="http://h/gwc/rest/gridsets/Grille%2F%C3%A9%3F.xml" type="text/xml"/>
  </gridSet>
</gridSets>
`
	if got != want {
		t.Errorf("grid sets:\ngot\n%s\nwant\n%s", got, want)
	}
	// The REST paths read '+' as a space: a '+' in a name is escaped.
	if got := string(gwc.EncodeLayerList([]string{"a+b"}, "http://h")); !strings.Contains(got, `href="http://h/rest/layers/a%2Bb.xml"`) {
		t.Errorf("a+b: got %s", got)
	}
	if got := string(gwc.EncodeLayerList(nil, "http://h")); got != "<layers/>\n" {
		t.Errorf("empty list: got %q", got)
	}
}
