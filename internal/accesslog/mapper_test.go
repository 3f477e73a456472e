package accesslog_test

import (
	"testing"
	"tilecache/internal/edgepath"
	"tilecache/internal/grid"
	"time"

	"tilecache/internal/accesslog"
)

func TestMapper(t *testing.T) {
	pg := func(z int, x, y int64) accesslog.Page { return states(z, x, y) }
	tests := []struct {
		name   string
		cfg    accesslog.MapperConfig
		rec    accesslog.Record
		want   accesslog.Page
		result accesslog.Outcome
	}{
		{"s3 key", accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"},
			accesslog.Record{Method: []byte("GET"), Key: []byte("tiles/topp:states/EPSG:4326/png/default/3/1/2.png"), Status: 200},
			pg(3, 0, 0), accesslog.Kept},
		{"s3 key decoded once more", accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"},
			accesslog.Record{Method: []byte("GET"), Key: []byte("tiles/topp%3Astates/EPSG%3A4326/png/default/3/1/2.png"), Status: 200},
			pg(3, 0, 0), accesslog.Kept},
		{"page of a tile", accesslog.MapperConfig{PageShift: 6},
			accesslog.Record{Method: []byte("HEAD"), Key: []byte("topp:states/EPSG:4326/png/default/20/1048575/64.png"), Status: 206},
			pg(20, 16383, 1), accesslog.Kept},
		{"multi-segment prefix", accesslog.MapperConfig{PageShift: 6, Prefix: "geo/tiles/"},
			accesslog.Record{Method: []byte("GET"), Key: []byte("geo/tiles/topp:states/EPSG:4326/png/default/0/0/0.png"), Status: 200},
			pg(0, 0, 0), accesslog.Kept},
		{"path at the root", accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"},
			accesslog.Record{Method: []byte("GET"), Key: []byte("/tiles/topp:states/EPSG:4326/png/default/3/1/2.png"), Path: true, Status: 304},
			pg(3, 0, 0), accesslog.Kept},
		{"origin path is the prefix", accesslog.MapperConfig{PageShift: 6, Prefix: "tiles", OriginPath: "/tiles"},
			accesslog.Record{Method: []byte("GET"), Key: []byte("/topp%3Astates/EPSG:4326/png/default/3/1/2.png"), Path: true, Status: 200},
			pg(3, 0, 0), accesslog.Kept},
		{"path prefix stripped", accesslog.MapperConfig{PageShift: 6, PathPrefix: "cache/"},
			accesslog.Record{Method: []byte("GET"), Key: []byte("/cache/topp:states/EPSG:4326/png/default/3/1/2.png"), Path: true, Status: 200},
			pg(3, 0, 0), accesslog.Kept},
		{"path outside the path prefix", accesslog.MapperConfig{PageShift: 6, PathPrefix: "/cache"},
			accesslog.Record{Method: []byte("GET"), Key: []byte("/cached/topp:states/EPSG:4326/png/default/3/1/2.png"), Path: true, Status: 200},
			accesslog.Page{}, accesslog.NotTile},
		{"key is not a path", accesslog.MapperConfig{PageShift: 6},
			accesslog.Record{Method: []byte("GET"), Key: []byte("/topp:states/EPSG:4326/png/default/3/1/2.png"), Status: 200},
			accesslog.Page{}, accesslog.NotTile},
		{"wrong prefix", accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"},
			accesslog.Record{Method: []byte("GET"), Key: []byte("tilesx/topp:states/EPSG:4326/png/default/3/1/2.png"), Status: 200},
			accesslog.Page{}, accesslog.NotTile},
		{"post", accesslog.MapperConfig{PageShift: 6},
			accesslog.Record{Method: []byte("POST"), Key: []byte("topp:states/EPSG:4326/png/default/3/1/2.png"), Status: 200},
			accesslog.Page{}, accesslog.NotRead},
		{"lower-case get", accesslog.MapperConfig{PageShift: 6},
			accesslog.Record{Method: []byte("get"), Key: []byte("topp:states/EPSG:4326/png/default/3/1/2.png"), Status: 200},
			accesslog.Page{}, accesslog.NotRead},
		{"redirect", accesslog.MapperConfig{PageShift: 6},
			accesslog.Record{Method: []byte("GET"), Key: []byte("topp:states/EPSG:4326/png/default/3/1/2.png"), Status: 301},
			accesslog.Page{}, accesslog.NotSuccessful},
		{"edge path, rows from the top", edgeConfig(),
			accesslog.Record{Method: []byte("GET"), Key: []byte("/xyz/topp:states/EPSG:4326/png/default/3/1/5.png"), Path: true, Status: 200},
			pg(3, 0, 0), accesslog.Kept},
		{"edge path, WMTS", edgeConfig(),
			accesslog.Record{Method: []byte("GET"), Key: []byte("/wmts/topp%3Astates/EPSG:4326/png/default/3/1/5.png"), Path: true, Status: 200},
			pg(3, 0, 0), accesslog.Kept},
		{"edge path, OGC API – Tiles (row, then column)", edgeConfig(),
			accesslog.Record{Method: []byte("GET"), Key: []byte("/ogcapi/collections/topp:states/map/tiles/WorldCRS84Quad/3/5/1.png"), Path: true, Status: 200},
			pg(3, 0, 0), accesslog.Kept},
		{"edge path, an OGC API document", edgeConfig(),
			accesslog.Record{Method: []byte("GET"), Key: []byte("/ogcapi/collections/topp:states"), Path: true, Status: 200},
			accesslog.Page{}, accesslog.NotTile},
		{"edge path outside the grid", edgeConfig(),
			accesslog.Record{Method: []byte("GET"), Key: []byte("/xyz/topp:states/EPSG:4326/png/default/3/1/8.png"), Path: true, Status: 200},
			accesslog.Page{}, accesslog.NotTile},
		{"edge path without a mapping", accesslog.MapperConfig{PageShift: 6},
			accesslog.Record{Method: []byte("GET"), Key: []byte("/xyz/topp:states/EPSG:4326/png/default/3/1/5.png"), Path: true, Status: 200},
			accesslog.Page{}, accesslog.NotTile},
		{"unknown layer", accesslog.MapperConfig{PageShift: 6},
			accesslog.Record{Method: []byte("GET"), Key: []byte("ghost/EPSG:4326/png/default/3/1/2.png"), Status: 200},
			accesslog.Page{}, accesslog.UnknownLayer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := tt.rec
			rec.Time = time.Now()
			got, result := MustMapper(t, tt.cfg).Map(&rec)
			if got != tt.want || result != tt.result {
				t.Errorf("got %+v, %v; want %+v, %v", got, result, tt.want, tt.result)
			}
		})
	}
}

// TestMapperTileKeys checks the shape of tile keys: what is a tile and
// what is not.
func TestMapperTileKeys(t *testing.T) {
	m := MustMapper(t, accesslog.MapperConfig{PageShift: 6})
	tests := map[string]bool{
		"topp:states/EPSG:4326/png/default/0/0/0.png":                    true,
		"topp:states/EPSG:4326/png8/3f2a/9223372036854775807/0/1.png":    true,
		"topp:states/EPSG:4326/png/default/1/2/3.png.bak":                true, // extension "png.bak"
		"topp:states/EPSG:4326/png/default/01/0/0.png":                   false,
		"topp:states/EPSG:4326/png/default/1/00/0.png":                   false,
		"topp:states/EPSG:4326/png/default/1/-1/0.png":                   false,
		"topp:states/EPSG:4326/png/default/1/+1/0.png":                   false,
		"topp:states/EPSG:4326/png/default/1/0/0x1.png":                  false,
		"topp:states/EPSG:4326/png/default/1/0/0.":                       false,
		"topp:states/EPSG:4326/png/default/1/0/0":                        false,
		"topp:states/EPSG:4326/png/default/1/0/0/1.png":                  false,
		"topp:states/EPSG:4326/png/default/1/0.png":                      false,
		"topp:states/EPSG:4326/png/default/9223372036854775808/0/0.png":  false,
		"topp:states/EPSG:4326/png/default/1/99999999999999999999/0.png": false,
		"topp:states/EPSG:4326//default/1/0/0.png":                       false,
		"topp:states/EPSG:4326/png/default/":                             false,
		"topp:states/parameters-3f2a.properties":                         false,
		"topp:states/EPSG:4326/png/default/1/0/%zz.png":                  false,
		"topp%3Astates/EPSG%3A4326/png/default/1/0/0.png":                true,
		"topp%3astates/EPSG%3a4326/png/default/1/0/0%2Epng":              true,
		"topp:states%2FEPSG:4326/png/default/1/0/0.png":                  true, // the bucket decodes %2F too
	}
	for key, want := range tests {
		rec := accesslog.Record{Method: []byte("GET"), Key: []byte(key), Status: 200}
		_, result := m.Map(&rec)
		if got := result == accesslog.Kept; got != want {
			t.Errorf("%q: got %v, want a tile: %v", key, result, want)
		}
	}
}

func TestNewMapperNeedsResolver(t *testing.T) {
	if _, err := accesslog.NewMapper(accesslog.MapperConfig{PageShift: 6}); err == nil {
		t.Error("NewMapper without LayerName succeeded")
	}
}

// edgeConfig maps the edge's WMTS and XYZ paths with the grid sets' table.
func edgeConfig() accesslog.MapperConfig {
	table := edgepath.NewTable(grid.Builtins())
	return accesslog.MapperConfig{PageShift: 6, EdgePrefixes: edgepath.Prefixes,
		EdgePath: func(p string) (string, bool) { return edgepath.Map(p, table) }}
}

// TestMapperNeedsAPageShift: the page geometry is the caller's (the
// quota's); a mapper without one is refused, and the shift given is used.
func TestMapperNeedsAPageShift(t *testing.T) {
	name := func(id string) (string, bool) { return id, true }
	for _, shift := range []int{0, -1, 31} {
		if _, err := accesslog.NewMapper(accesslog.MapperConfig{PageShift: shift, LayerName: name}); err == nil {
			t.Errorf("PageShift %d: accepted", shift)
		}
	}
	for _, c := range []struct {
		shift int
		want  int64
	}{{6, 1}, {3, 12}} {
		m, err := accesslog.NewMapper(accesslog.MapperConfig{PageShift: c.shift, LayerName: name})
		if err != nil {
			t.Fatal(err)
		}
		p, out := m.Map(&accesslog.Record{Method: []byte("GET"), Status: 200, Key: []byte("roads/EPSG:4326/png/default/9/100/100.png")})
		if out != accesslog.Kept || p.X != c.want || p.Y != c.want {
			t.Errorf("PageShift %d: %+v %v, want page %d/%d", c.shift, p, out, c.want, c.want)
		}
	}
}
