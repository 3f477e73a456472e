package discovery

import (
	"bytes"
	"encoding/xml"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// parsedTileMap is a TMS TileMap as a reader sees it, declared apart from
// the writer's types so that the test reads what was written.
type parsedTileMap struct {
	XMLName        xml.Name `xml:"TileMap"`
	Version        string   `xml:"version,attr"`
	TileMapService string   `xml:"tilemapservice,attr"`
	Title          string   `xml:"Title"`
	Abstract       string   `xml:"Abstract"`
	Attribution    string   `xml:"Attribution>Title"`
	SRS            string   `xml:"SRS"`
	BoundingBox    struct {
		MinX float64 `xml:"minx,attr"`
		MinY float64 `xml:"miny,attr"`
		MaxX float64 `xml:"maxx,attr"`
		MaxY float64 `xml:"maxy,attr"`
	} `xml:"BoundingBox"`
	Origin struct {
		X float64 `xml:"x,attr"`
		Y float64 `xml:"y,attr"`
	} `xml:"Origin"`
	TileFormat struct {
		Width     int    `xml:"width,attr"`
		Height    int    `xml:"height,attr"`
		MimeType  string `xml:"mime-type,attr"`
		Extension string `xml:"extension,attr"`
	} `xml:"TileFormat"`
	TileSets struct {
		Profile  string `xml:"profile,attr"`
		TileSets []struct {
			Href          string  `xml:"href,attr"`
			UnitsPerPixel float64 `xml:"units-per-pixel,attr"`
			Order         int     `xml:"order,attr"`
		} `xml:"TileSet"`
	} `xml:"TileSets"`
}

func parseTileMap(t testing.TB, data []byte) parsedTileMap {
	t.Helper()
	var tm parsedTileMap
	if err := xml.Unmarshal(data, &tm); err != nil {
		t.Fatalf("TileMap does not parse: %v\n%s", err, data)
	}
	return tm
}

func TestTileMap(t *testing.T) {
	c := testCatalogue(t, testLayers)
	tests := []struct {
		name, layer, gridSet, format, baseURL string
		wantSRS, wantProfile, wantExt         string
		wantBBox, wantOrigin                  []float64
		wantZooms                             [2]int
		wantHref0                             string
		wantAttribution                       string
	}{
		{"EPSG:900913", "demo:world", "EPSG:900913", "image/png", "https://d123.cloudfront.net", "EPSG:3857", "global-mercator", "png",
			[]float64{-20037508.34, -20037508.34, 20037508.34, 20037508.34}, []float64{-20037508.34, -20037508.34}, [2]int{0, 30},
			"https://d123.cloudfront.net/demo:world/EPSG:900913/png/default/0", "tilecache test pattern"},
		{"EPSG:4326, root-relative", "demo:world", "EPSG:4326", "image/jpeg", "", "EPSG:4326", "global-geodetic", "jpeg",
			[]float64{-180, -90, 180, 90}, []float64{-180, -90}, [2]int{0, 21},
			"/demo:world/EPSG:4326/jpeg/default/0", "tilecache test pattern"},
		{"custom grid, png8 stored as .png, escaped layer id", "topo", "LAEA", "image/png8", "http://127.0.0.1:8080", "EPSG:3035", "local", "png",
			[]float64{2e6, 1e6, 2e6 + 5*1048576, 1e6 + 5*1048576}, []float64{2e6, 1e6}, [2]int{0, 3},
			"http://127.0.0.1:8080/topo%2050/LAEA/png8/default/0", ""},
		{"zoom range of the subset: levels from 0 listed (GDAL needs them)", "topo", "EPSG:900913", "image/png8", "http://h", "EPSG:3857", "global-mercator", "png",
			[]float64{-20037508.34, -20037508.34, 20037508.34, 20037508.34}, []float64{-20037508.34, -20037508.34}, [2]int{0, 9},
			"http://h/topo%2050/EPSG:900913/png8/default/0", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := testLayer(t, c, tt.layer)
			d, err := describe(l, tt.gridSet, tt.format, "default", nil, "prefix")
			if err != nil {
				t.Fatal(err)
			}
			data, err := tileMap(d, tt.baseURL)
			if err != nil {
				t.Fatal(err)
			}
			// GDAL recognises the document by this literal prefix.
			if !bytes.Contains(data[:min(len(data), 1024)], []byte(`<TileMap version="1.0.0"`)) {
				t.Errorf("got no `<TileMap version=\"1.0.0\"` in the first 1024 bytes:\n%s", data)
			}
			tm := parseTileMap(t, data)
			if tm.Version != "1.0.0" || tm.TileMapService != tt.baseURL+"/tms.xml" {
				t.Errorf("got version %q, tilemapservice %q; want 1.0.0, %s/tms.xml", tm.Version, tm.TileMapService, tt.baseURL)
			}
			if tm.Title != l.Title || tm.Attribution != tt.wantAttribution || !strings.Contains(tm.Abstract, tt.gridSet) {
				t.Errorf("got title %q, attribution %q, abstract %q; want %q, %q, an abstract naming %s",
					tm.Title, tm.Attribution, tm.Abstract, l.Title, tt.wantAttribution, tt.gridSet)
			}
			if tm.SRS != tt.wantSRS || tm.TileSets.Profile != tt.wantProfile {
				t.Errorf("got SRS %s, profile %s; want %s, %s", tm.SRS, tm.TileSets.Profile, tt.wantSRS, tt.wantProfile)
			}
			bb := tm.BoundingBox
			if got := []float64{bb.MinX, bb.MinY, bb.MaxX, bb.MaxY}; !slices.Equal(got, tt.wantBBox) {
				t.Errorf("BoundingBox: got %v, want %v", got, tt.wantBBox)
			}
			if got := []float64{tm.Origin.X, tm.Origin.Y}; !slices.Equal(got, tt.wantOrigin) {
				t.Errorf("Origin: got %v, want %v", got, tt.wantOrigin)
			}
			g := d.subset.GridSet
			tf := tm.TileFormat
			if tf.Width != g.TileWidth || tf.Height != g.TileHeight || tf.MimeType != tt.format || tf.Extension != tt.wantExt {
				t.Errorf("TileFormat: got %+v, want %dx%d %s .%s", tf, g.TileWidth, g.TileHeight, tt.format, tt.wantExt)
			}
			sets := tm.TileSets.TileSets
			if len(sets) != tt.wantZooms[1]-tt.wantZooms[0]+1 {
				t.Fatalf("got %d TileSets, want levels %d..%d", len(sets), tt.wantZooms[0], tt.wantZooms[1])
			}
			if sets[0].Href != tt.wantHref0 {
				t.Errorf("first href: got %s, want %s", sets[0].Href, tt.wantHref0)
			}
			for i, s := range sets {
				z := tt.wantZooms[0] + i
				wantHref := strings.TrimSuffix(tt.wantHref0, "/"+strconv.Itoa(tt.wantZooms[0])) + "/" + strconv.Itoa(z)
				if s.Order != z || s.UnitsPerPixel != g.Resolutions[z] || s.Href != wantHref {
					t.Errorf("TileSet %d: got order %d, units-per-pixel %v, href %s; want %d, %v, %s",
						i, s.Order, s.UnitsPerPixel, s.Href, z, g.Resolutions[z], wantHref)
				}
			}
		})
	}
}

func TestTileMapEscapesText(t *testing.T) {
	c := testCatalogue(t, `
layers:
  - name: a
    title: "Roads & <rails> \"quoted\""
    attribution: "<a href=\"https://example.org/?a=1&b=2\">&copy; Example</a>"
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
`)
	l := testLayer(t, c, "a")
	d, err := describe(l, "EPSG:4326", "image/png", "default", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	data, err := tileMap(d, "")
	if err != nil {
		t.Fatal(err)
	}
	tm := parseTileMap(t, data)
	if tm.Title != l.Title || tm.Attribution != l.Attribution {
		t.Errorf("got title %q, attribution %q; want %q, %q", tm.Title, tm.Attribution, l.Title, l.Attribution)
	}
}

func TestTileMapService(t *testing.T) {
	c := testCatalogue(t, testLayers)
	var ds []*description
	for _, g := range []string{"EPSG:4326", "EPSG:900913"} {
		d, err := describe(testLayer(t, c, "demo:world"), g, "image/png", "default", nil, "")
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	p, err := describe(testLayer(t, c, "demo:world"), "EPSG:4326", "image/png", "abc", map[string]string{"STYLES": "grid"}, "")
	if err != nil {
		t.Fatal(err)
	}
	ds = append(ds, p)
	data, err := tileMapService(ds, "https://cdn.example")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`<TileMapService version="1.0.0"`)) {
		t.Errorf("got no `<TileMapService version=\"1.0.0\"`:\n%s", data)
	}
	var doc struct {
		TileMaps []struct {
			Title   string `xml:"title,attr"`
			SRS     string `xml:"srs,attr"`
			Profile string `xml:"profile,attr"`
			Href    string `xml:"href,attr"`
		} `xml:"TileMaps>TileMap"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("TileMapService does not parse: %v", err)
	}
	type entry struct{ title, srs, profile, href string }
	want := []entry{
		{"Demo world (EPSG:4326, png)", "EPSG:4326", "global-geodetic", "https://cdn.example/demo:world/EPSG:4326/png/default/tilemapresource.xml"},
		{"Demo world (EPSG:900913, png)", "EPSG:3857", "global-mercator", "https://cdn.example/demo:world/EPSG:900913/png/default/tilemapresource.xml"},
		{"Demo world (EPSG:4326, png, parameters STYLES=grid)", "EPSG:4326", "global-geodetic", "https://cdn.example/demo:world/EPSG:4326/png/abc/tilemapresource.xml"},
	}
	if len(doc.TileMaps) != len(want) {
		t.Fatalf("got %d TileMaps, want %d", len(doc.TileMaps), len(want))
	}
	for i, m := range doc.TileMaps {
		if got := (entry{m.Title, m.SRS, m.Profile, m.Href}); got != want[i] {
			t.Errorf("TileMap %d: got %+v, want %+v", i, got, want[i])
		}
	}
}
