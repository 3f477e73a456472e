package wms_test

import (
	"net/url"
	"strings"
	"testing"

	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/source/wms"
)

func layerOf(t *testing.T, yml string) *layer.Layer {
	t.Helper()
	c, err := layer.Parse([]byte(yml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, ok := c.Layer("l")
	if !ok {
		t.Fatal("layer l missing")
	}
	return l
}

const base = `
layers:
  - name: l
    gridSubsets: [{gridSet: EPSG:4326}, {gridSet: EPSG:900913}]
    formats: [image/png, image/png8, image/jpeg]
    metatiling: [4, 4]
    parameterFilters:
      - {key: STYLES, default: red, values: [red, blue]}
      - {key: CQL_FILTER, default: "", regex: ".*"}
    source:
      type: wms
      url: http://127.0.0.1:1/wms?map=/srv/world.map
      layers: a,b
`

func query(t *testing.T, u string) url.Values {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := url.Values{}
	for k, v := range pu.Query() {
		q[strings.ToUpper(k)] = v
	}
	return q
}

// getMapCase is a GetMap request for tiles of a layer (base with extra
// lines of its source) and what its URL and image box must be.
type getMapCase struct {
	name    string
	extra   string
	gridSet string
	tiles   grid.TileRange
	gutter  int
	params  map[string]string
	want    map[string]string
	absent  []string
	w, h    int
	box     [2]int // left, top gutter inside the image
}

var getMapCases = []getMapCase{
	{
		name: "1.1.1 web mercator z0", gridSet: "EPSG:900913",
		tiles: grid.TileRange{Z: 0},
		want: map[string]string{
			"SERVICE": "WMS", "VERSION": "1.1.1", "REQUEST": "GetMap", "LAYERS": "a,b", "STYLES": "red",
			"SRS": "EPSG:900913", "FORMAT": "image/png", "TRANSPARENT": "FALSE", "MAP": "/srv/world.map",
			"BBOX":       "-20037508.34,-20037508.34,20037508.34,20037508.34",
			"EXCEPTIONS": "application/vnd.ogc.se_xml", "WIDTH": "256", "HEIGHT": "256",
		},
		absent: []string{"CRS", "CQL_FILTER", "BGCOLOR"},
		w:      256, h: 256,
	},
	{
		name: "1.3.0 EPSG:4326 swaps axes", gridSet: "EPSG:4326",
		extra: "      version: 1.3.0\n",
		tiles: grid.TileRange{Z: 1, MinX: 0, MinY: 0, MaxX: 3, MaxY: 1},
		want: map[string]string{
			"VERSION": "1.3.0", "CRS": "EPSG:4326", "BBOX": "-90,-180,90,180", "EXCEPTIONS": "XML",
			"WIDTH": "1024", "HEIGHT": "512",
		},
		absent: []string{"SRS"},
		w:      1024, h: 512,
	},
	{
		name: "1.3.0 axisOrder xy keeps lon,lat", gridSet: "EPSG:4326",
		extra: "      version: 1.3.0\n      axisOrder: xy\n",
		tiles: grid.TileRange{Z: 0, MinX: 0, MinY: 0, MaxX: 1, MaxY: 0},
		want:  map[string]string{"BBOX": "-180,-90,180,90"},
		w:     512, h: 256,
	},
	{
		name: "1.3.0 web mercator keeps x,y; srs mapped", gridSet: "EPSG:900913",
		extra: "      version: 1.3.0\n      srs: {EPSG:900913: EPSG:3857}\n",
		tiles: grid.TileRange{Z: 0},
		want:  map[string]string{"CRS": "EPSG:3857", "BBOX": "-20037508.34,-20037508.34,20037508.34,20037508.34"},
		w:     256, h: 256,
	},
	{
		name: "request parameters override; options pass through", gridSet: "EPSG:4326",
		extra:  "      transparent: true\n      bgColor: \"0x102030\"\n      params: {map_resolution: \"96\", styles: ignored}\n",
		tiles:  grid.TileRange{Z: 0, MinX: 0, MinY: 0, MaxX: 0, MaxY: 0},
		params: map[string]string{"STYLES": "blue", "CQL_FILTER": "cls = 2"},
		want: map[string]string{
			"STYLES": "blue", "CQL_FILTER": "cls = 2", "TRANSPARENT": "TRUE", "BGCOLOR": "0x102030",
			"MAP_RESOLUTION": "96", "BBOX": "-180,-90,0,90",
		},
		w: 256, h: 256,
	},
	{
		name: "gutter only inside the grid", gridSet: "EPSG:4326", gutter: 10,
		// z2 of EPSG:4326 is 8×4 tiles of 45° (10 px = 1.7578125°): tiles 4..7 × 0..1 touch
		// the east and south edges, not the west and north ones.
		tiles: grid.TileRange{Z: 2, MinX: 4, MinY: 0, MaxX: 7, MaxY: 1},
		want: map[string]string{
			"WIDTH": "1034", "HEIGHT": "522",
			"BBOX": "-1.7578125,-90,180,1.7578125",
		},
		w: 1034, h: 522, box: [2]int{10, 10},
	},
}

func TestGetMapURL(t *testing.T) {
	for _, tc := range getMapCases {
		t.Run(tc.name, func(t *testing.T) {
			gs, ok := grid.Builtin(tc.gridSet)
			if !ok {
				t.Fatalf("no built-in grid set %s", tc.gridSet)
			}
			src, err := wms.New(layerOf(t, base+tc.extra), upstream.Shared{})
			if err != nil {
				t.Fatal(err)
			}
			u, box, err := src.GetMapURL(source.Request{
				Layer: "l", GridSet: gs, Z: tc.tiles.Z, Tiles: tc.tiles,
				Format: "image/png", Parameters: tc.params, Gutter: tc.gutter,
			})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(u, "http://127.0.0.1:1/wms?") {
				t.Errorf("url %s does not keep the base", u)
			}
			q := query(t, u)
			for k, v := range tc.want {
				if got := q.Get(k); got != v {
					t.Errorf("%s = %q, want %q (url %s)", k, got, v, u)
				}
			}
			for _, k := range tc.absent {
				if q.Has(k) {
					t.Errorf("%s = %q, want absent", k, q.Get(k))
				}
			}
			if box.Width != tc.w || box.Height != tc.h || box.Left != tc.box[0] || box.Top != tc.box[1] {
				t.Errorf("box %+v, want %d×%d at %v", box, tc.w, tc.h, tc.box)
			}
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := map[string]string{
		"url is required":                   "    source: {type: wms, layers: a}\n",
		"layers is required":                "    source: {type: wms, url: http://127.0.0.1:1/wms}\n",
		`version "1.0.0"`:                   "    source: {type: wms, url: http://127.0.0.1:1/wms, layers: a, version: 1.0.0}\n",
		"not an http(s) URL":                "    source: {type: wms, url: ftp://x/wms, layers: a}\n",
		"field timout not found":            "    source: {type: wms, url: http://127.0.0.1:1/wms, layers: a, timout: 1s}\n",
		"maxConcurrent -1":                  "    source: {type: wms, url: http://127.0.0.1:1/wms, layers: a, maxConcurrent: -1}\n",
		`skipBlank "empty"`:                 "    source: {type: wms, url: http://127.0.0.1:1/wms, layers: a, skipBlank: empty}\n",
		`axisOrder "lonlat"`:                "    source: {type: wms, url: http://127.0.0.1:1/wms, layers: a, axisOrder: lonlat}\n",
		"jpegQuality":                       "    source: {type: wms, url: http://127.0.0.1:1/wms, layers: a, jpegQuality: 101}\n",
		"pngCompression":                    "    source: {type: wms, url: http://127.0.0.1:1/wms, layers: a, pngCompression: 12}\n",
		"retryBackoff -1s":                  "    source: {type: wms, url: http://127.0.0.1:1/wms, layers: a, retryBackoff: -1s}\n",
		"a mapping with a type is required": "",
	}
	head := "layers:\n  - name: l\n    gridSubsets: [{gridSet: EPSG:4326}]\n    formats: [image/png, image/jpeg]\n"
	for want, src := range tests {
		t.Run(want, func(t *testing.T) {
			c, err := layer.Parse([]byte(head+src), "t.yaml")
			if err != nil {
				if strings.Contains(err.Error(), want) {
					return
				}
				t.Fatal(err)
			}
			l, _ := c.Layer("l")
			_, err = wms.New(l, upstream.Shared{})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want it to mention %q", err, want)
			}
		})
	}
}
