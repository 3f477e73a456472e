package grid

import (
	"maps"
	"testing"
)

func TestRegistered(t *testing.T) {
	merc, _ := Builtin(EPSG900913)
	geo, _ := Builtin(EPSG4326)
	cases := []struct {
		name string
		g    *GridSet
		want string
	}{
		{"EPSG:900913", merc, WebMercatorQuad},
		{"EPSG:4326", geo, WorldCRS84Quad},
		{"EPSG:3857 with the exact half world", &GridSet{ID: "g", EPSG: 3857, TileWidth: 256, TileHeight: 256,
			Extent:      Extent{MinX: -mercatorHalfWorld, MinY: -mercatorHalfWorld, MaxX: mercatorHalfWorld, MaxY: mercatorHalfWorld},
			Resolutions: halvings(2*mercatorHalfWorld/256, 5)}, WebMercatorQuad},
		{"first levels only", &GridSet{ID: "g", EPSG: 4326, TileWidth: 256, TileHeight: 256,
			Extent: geo.Extent, Resolutions: halvings(0.703125, 3)}, WorldCRS84Quad},
		{"512-pixel tiles", &GridSet{ID: "g", EPSG: 900913, TileWidth: 512, TileHeight: 512,
			Extent: merc.Extent, Resolutions: halvings(156543.03390625/2, 3)}, ""},
		{"starts at level 1", &GridSet{ID: "g", EPSG: 900913, TileWidth: 256, TileHeight: 256,
			Extent: merc.Extent, Resolutions: halvings(156543.03390625/2, 3)}, ""},
		{"a skipped level", &GridSet{ID: "g", EPSG: 4326, TileWidth: 256, TileHeight: 256,
			Extent: geo.Extent, Resolutions: []float64{0.703125, 0.3515625, 0.087890625}}, ""},
		{"half the world", &GridSet{ID: "g", EPSG: 4326, TileWidth: 256, TileHeight: 256,
			Extent: Extent{MinX: 0, MinY: -90, MaxX: 180, MaxY: 90}, Resolutions: halvings(0.703125, 3)}, ""},
		{"another CRS", &GridSet{ID: "g", EPSG: 2193, TileWidth: 256, TileHeight: 256,
			Extent: geo.Extent, Resolutions: halvings(0.703125, 3)}, ""},
	}
	for _, c := range cases {
		if got := c.g.Registered(); got != c.want {
			t.Errorf("%s: Registered() = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestTileMatrixSetIDs(t *testing.T) {
	merc, _ := Builtin(EPSG900913)
	geo, _ := Builtin(EPSG4326)
	merc3857 := *merc
	merc3857.ID, merc3857.EPSG = "EPSG:3857", 3857
	spaced := *geo
	spaced.ID = "world crs84"
	named := *merc
	named.ID = WebMercatorQuad
	cases := []struct {
		name string
		sets []*GridSet
		want map[string]string
	}{
		{"built-ins", []*GridSet{geo, merc},
			map[string]string{EPSG4326: WorldCRS84Quad, EPSG900913: WebMercatorQuad}},
		{"two Mercator pyramids: the first by id", []*GridSet{merc, &merc3857},
			map[string]string{EPSG900913: EPSG900913, "EPSG:3857": WebMercatorQuad}},
		{"an id that needs escaping", []*GridSet{&spaced},
			map[string]string{"world crs84": "world crs84"}},
		{"a grid set named like a registered one", []*GridSet{merc, &named},
			map[string]string{EPSG900913: EPSG900913, WebMercatorQuad: WebMercatorQuad}},
	}
	for _, c := range cases {
		if got := TileMatrixSetIDs(c.sets); !maps.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
