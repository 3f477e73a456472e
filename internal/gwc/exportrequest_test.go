package gwc_test

import (
	"strings"
	"testing"

	"tilecache/internal/gwc"
)

// TestDecodeExportRequest: an export request is a seed request's fields
// under exportRequest plus archive, in JSON and XML alike; what only a
// seed has, a missing or repeated archive and another root are refused
// naming the problem.
func TestDecodeExportRequest(t *testing.T) {
	j, err := gwc.DecodeExportRequestJSON([]byte(`{"exportRequest":{"gridSetId":"EPSG:900913","format":"image/png","zoomStart":1,"zoomStop":4,` +
		`"bounds":{"coords":{"double":[0,0,10,10]}},"parameters":{"entry":[{"string":["STYLES","x"]}]},"archive":" mbtiles "}}`))
	if err != nil {
		t.Fatal(err)
	}
	if j.Archive != "mbtiles" || j.GridSetID != "EPSG:900913" || !j.HasGridSetID || j.Format != "image/png" || *j.ZoomStart != 1 || *j.ZoomStop != 4 ||
		*j.Bounds != [4]float64{0, 0, 10, 10} || (len(j.Parameters) != 1 || j.Parameters[0] != [2]string{"STYLES", "x"}) {
		t.Errorf("JSON decoded as %+v", j)
	}
	x, err := gwc.DecodeExportRequestXML([]byte(`<exportRequest><zoomStart>0</zoomStart><zoomStop>2</zoomStop><archive>gpkg</archive>` +
		`<geometry>POLYGON((0 0,1 0,1 1,0 1,0 0))</geometry></exportRequest>`))
	if err != nil {
		t.Fatal(err)
	}
	if x.Archive != "gpkg" || *x.ZoomStop != 2 || len(x.Geometries) != 1 || x.HasGridSetID {
		t.Errorf("XML decoded as %+v", x)
	}
	for _, c := range []struct{ body, says string }{
		{`{"exportRequest":{"zoomStart":0,"zoomStop":1}}`, "archive is required"},
		{`{"exportRequest":{"zoomStart":0,"zoomStop":1,"archive":""}}`, "archive is required"},
		{`{"exportRequest":{"archive":"pmtiles","archive":"gpkg"}}`, "Duplicate field: archive"},
		{`{"exportRequest":{"archive":"pmtiles","type":"seed"}}`, "type is a seed request's field"},
		{`{"exportRequest":{"archive":"pmtiles","threadCount":2}}`, "threadCount is a seed request's field"},
		{`{"exportRequest":{"archive":"pmtiles","colour":"red"}}`, "Unknown field"},
		{`{"exportRequest":{"archive":"pmtiles","zoomStart":"x"}}`, "zoomStart"},
		{`{"seedRequest":{"archive":"pmtiles"}}`, "exportRequest"},
	} {
		_, err := gwc.DecodeExportRequestJSON([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: got %v, want an error naming %q", c.body, err, c.says)
		}
	}
	if _, err := gwc.DecodeExportRequestXML([]byte(`<seedRequest><archive>pmtiles</archive></seedRequest>`)); err == nil || !strings.Contains(err.Error(), "exportRequest") {
		t.Errorf("an XML seedRequest as an export: %v", err)
	}
}
