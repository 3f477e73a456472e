package wmscaps_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/gwc"
	"tilecache/internal/wmscaps"
)

const caps111 = `<?xml version="1.0"?>
<WMT_MS_Capabilities version="1.1.1">
  <Service><Title> Roads </Title></Service>
  <Capability>
    <Request><GetMap>
      <Format>image/png</Format><Format>image/jpeg</Format><Format>image/tiff</Format>
      <DCPType><HTTP><Get><OnlineResource xmlns:xlink="http://www.w3.org/1999/xlink" xlink:href="http://wms.example/cgi?map=roads&amp;"/></Get></HTTP></DCPType>
    </GetMap></Request>
    <Layer>
      <Title>group without a name</Title>
      <LatLonBoundingBox minx="-10" miny="40" maxx="20" maxy="60"/>
      <Layer><Name>roads</Name><Title>Roads</Title><Style><Name>day</Name></Style></Layer>
      <Layer><Name>rivers</Name><Title>rivers</Title><LatLonBoundingBox minx="0" miny="45" maxx="5" maxy="50"/></Layer>
    </Layer>
  </Capability>
</WMT_MS_Capabilities>`

const caps130 = `<?xml version="1.0"?>
<WMS_Capabilities version="1.3.0" xmlns="http://www.opengis.net/wms" xmlns:xlink="http://www.w3.org/1999/xlink">
  <Service><Title>World</Title></Service>
  <Capability>
    <Request><GetMap><Format>image/jpeg</Format><Format>image/png; mode=8bit</Format>
      <DCPType><HTTP><Get><OnlineResource xlink:href="http://wms.example/world?"/></Get></HTTP></DCPType>
    </GetMap></Request>
    <Layer><Name>world</Name><Title>The world</Title>
      <EX_GeographicBoundingBox><westBoundLongitude>-180</westBoundLongitude><eastBoundLongitude>180</eastBoundLongitude>
        <southBoundLatitude>-90</southBoundLatitude><northBoundLatitude>90</northBoundLatitude></EX_GeographicBoundingBox>
    </Layer>
  </Capability>
</WMS_Capabilities>`

func TestParseAndPropose(t *testing.T) {
	c, err := wmscaps.Parse([]byte(caps111))
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != "1.1.1" || c.Title != "Roads" || c.GetMapURL != "http://wms.example/cgi?map=roads&" || len(c.Layers) != 2 {
		t.Fatalf("parsed %+v", c)
	}
	roads, _ := c.Layer("roads")
	if !roads.HasBBox || roads.BBox != [4]float64{-10, 40, 20, 60} || !slices.Equal(roads.Styles, []string{"day"}) {
		t.Errorf("roads (the group's box): %+v", roads)
	}
	for _, tc := range []struct {
		near bool
		want string
	}{{false, "image/png"}, {true, "image/tiff"}} {
		ps, err := wmscaps.Propose(c, []string{"rivers"}, wmscaps.Options{Near: tc.near})
		if err != nil || len(ps) != 1 {
			t.Fatalf("Propose: %v %v", ps, err)
		}
		p := ps[0]
		if p.Source.Format != tc.want || p.Source.URL != "http://wms.example/cgi?map=roads" || p.Source.Layers != "rivers" ||
			!p.Source.Transparent || p.Title != "" || !slices.Equal(p.GridSubsets[0].Extent, []float64{0, 45, 5, 50}) {
			t.Errorf("near %v: %+v", tc.near, p)
		}
		if e := p.GridSubsets[1].Extent; len(e) != 4 || e[0] != 0 || e[2] != 556597.45 || e[1] < 5621521 || e[1] > 5621522 {
			t.Errorf("near %v: Web Mercator extent %v", tc.near, e)
		}
	}
	c, err = wmscaps.Parse([]byte(caps130))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := wmscaps.Propose(c, nil, wmscaps.Options{})
	if err != nil || len(ps) != 1 || ps[0].Source.Format != "image/png; mode=8bit" || ps[0].Source.URL != "http://wms.example/world" ||
		ps[0].GridSubsets[0].Extent != nil || ps[0].Title != "The world" {
		t.Errorf("1.3.0, the whole world: %+v %v", ps, err)
	}
}

// TestProposeNamesOnce: a layer the capabilities list in two groups is
// proposed once, so that the layer file of the proposals parses.
func TestProposeNamesOnce(t *testing.T) {
	twice := strings.Replace(caps111, "</Capability>", "<Layer><Title>again</Title><Layer><Name>roads</Name></Layer></Layer></Capability>", 1)
	c, err := wmscaps.Parse([]byte(twice))
	if err != nil || len(c.Layers) != 3 {
		t.Fatalf("Parse: %d layers, %v; want 3", len(c.Layers), err)
	}
	ps, err := wmscaps.Propose(c, nil, wmscaps.Options{})
	if err != nil || len(ps) != 2 || ps[0].Name != "roads" || ps[1].Name != "rivers" {
		t.Fatalf("Propose: %+v, %v; want roads and rivers", ps, err)
	}
	if _, err := gwc.LayerFile(nil, ps); err != nil {
		t.Errorf("the layer file of the proposals: %v", err)
	}
}

// TestProposeBoxes: a box across the antimeridian takes every longitude;
// a box that is no box on the map (not finite, no area) does not cut the
// subsets.
func TestProposeBoxes(t *testing.T) {
	for _, tc := range []struct {
		box  string // west east south north
		want []float64
	}{
		{"170 -170 -10 10", []float64{-180, -10, 180, 10}},
		{"10 20 -10 NaN", nil},
		{"10 20 5 5", nil},
		{"10 10 -10 10", nil},
		{"-200 200 -10 10", []float64{-180, -10, 180, 10}},
		{"10 20 86 89", nil}, // above the Web Mercator map
	} {
		var w, e, s, n string
		fmt.Sscan(tc.box, &w, &e, &s, &n)
		doc := `<WMS_Capabilities version="1.3.0"><Capability><Request><GetMap><Format>image/png</Format></GetMap></Request><Layer><Name>a</Name>` +
			`<EX_GeographicBoundingBox><westBoundLongitude>` + w + `</westBoundLongitude><eastBoundLongitude>` + e + `</eastBoundLongitude>` +
			`<southBoundLatitude>` + s + `</southBoundLatitude><northBoundLatitude>` + n + `</northBoundLatitude></EX_GeographicBoundingBox></Layer></Capability></WMS_Capabilities>`
		c, err := wmscaps.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		ps, err := wmscaps.Propose(c, nil, wmscaps.Options{URL: "http://127.0.0.1/wms"})
		if err != nil {
			t.Fatal(err)
		}
		if got := ps[0].GridSubsets[0].Extent; !slices.Equal(got, tc.want) {
			t.Errorf("box %s: EPSG:4326 extent %v, want %v", tc.box, got, tc.want)
		}
		if err := gwc.Check(nil, ps); err != nil {
			t.Errorf("box %s: %v", tc.box, err)
		}
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`<ServiceExceptionReport><ServiceException>bad map</ServiceException></ServiceExceptionReport>`, "exception report: <ServiceExceptionReport>"},
		{`<html><body>proxy error</body></html>`, "the root element is html"},
		{`<WMS_Capabilities><Capability>`, "read WMS capabilities"},
		{`<` + strings.Repeat("é", 200) + `/>`, "the root element is " + strings.Repeat("é", 50) + "…, not"},
	} {
		if _, err := wmscaps.Parse([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.doc, err, tc.want)
		}
	}
	// A long report is quoted up to 1,000 bytes, cut at a character.
	long := `<ServiceExceptionReport><ServiceException>` + strings.Repeat("é", 2000) + `</ServiceException></ServiceExceptionReport>`
	if _, err := wmscaps.Parse([]byte(long)); err == nil || len(err.Error()) > 1200 || !strings.HasSuffix(err.Error(), "é…") {
		t.Errorf("a long exception report: got %d bytes, %.80q…, want at most 1,200 ending in é…", len(fmt.Sprint(err)), fmt.Sprint(err))
	}
	c, _ := wmscaps.Parse([]byte(caps111))
	if _, err := wmscaps.Propose(c, []string{"roads", "nope", "none"}, wmscaps.Options{}); err == nil ||
		!strings.Contains(err.Error(), "no layer named nope, none (named layers: roads, rivers)") {
		t.Errorf("unknown layers: %v", err)
	}
	jpeg := strings.ReplaceAll(strings.ReplaceAll(caps111, "<Format>image/png</Format>", ""), "<Format>image/tiff</Format>", "")
	c, _ = wmscaps.Parse([]byte(jpeg))
	if _, err := wmscaps.Propose(c, nil, wmscaps.Options{}); err == nil || !strings.Contains(err.Error(), "no lossless GetMap format") {
		t.Errorf("JPEG only: %v", err)
	}
}
