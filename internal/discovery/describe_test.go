package discovery

import (
	"errors"
	"math"
	"net/url"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
)

func TestDescribe(t *testing.T) {
	c := testCatalogue(t, testLayers)
	const half = 20037508.34
	tests := []struct {
		name, layer, gridSet, format string
		wantSRS, wantProfile         string
		wantMercator                 bool
		wantOrigin                   [2]float64
		wantTiled                    grid.Extent
	}{
		{"web mercator", "demo:world", "EPSG:900913", "image/png", "EPSG:3857", profileMercator, true,
			[2]float64{-half, -half}, grid.Extent{MinX: -half, MinY: -half, MaxX: half, MaxY: half}},
		{"web mercator, part of the world, z2..9", "topo", "EPSG:900913", "image/png8", "EPSG:3857", profileMercator, true,
			[2]float64{-half, -half}, grid.Extent{MinX: -half, MinY: -half, MaxX: half, MaxY: half}},
		{"geodetic", "demo:world", "EPSG:4326", "image/jpeg", "EPSG:4326", profileGeodetic, false,
			[2]float64{-180, -90}, grid.Extent{MinX: -180, MinY: -90, MaxX: 180, MaxY: 90}},
		{"custom bottom-left, extent not whole tiles: grown to whole level-0 tiles", "topo", "LAEA", "image/png8", "EPSG:3035", profileLocal, false,
			[2]float64{2e6, 1e6}, grid.Extent{MinX: 2e6, MinY: 1e6, MaxX: 2e6 + 5*1048576, MaxY: 1e6 + 5*1048576}},
		{"custom top-left, whole tiles", "topo", "TopLeftWhole", "image/png8", "EPSG:2056", profileLocal, false,
			[2]float64{0, 0}, grid.Extent{MinX: 0, MinY: 0, MaxX: 1024, MaxY: 512}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := describe(testLayer(t, c, tt.layer), tt.gridSet, tt.format, "default", nil, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := d.srs(); got != tt.wantSRS {
				t.Errorf("srs: got %s, want %s", got, tt.wantSRS)
			}
			if d.profile != tt.wantProfile || d.mercator != tt.wantMercator {
				t.Errorf("got profile %s, mercator %v; want %s, %v", d.profile, d.mercator, tt.wantProfile, tt.wantMercator)
			}
			if got := [2]float64{d.originX, d.originY}; got != tt.wantOrigin {
				t.Errorf("origin: got %v, want %v", got, tt.wantOrigin)
			}
			if d.tiled != tt.wantTiled {
				t.Errorf("tiled extent: got %v, want %v", d.tiled, tt.wantTiled)
			}
			// Whatever the alignment, the origin is the bottom-left corner
			// of tile (0, 0) at every level.
			g := d.subset.GridSet
			for z := d.subset.MinZoom; z <= d.subset.MaxZoom; z++ {
				e := g.TileExtent(z, 0, 0)
				_, h := g.Span(z)
				if math.Abs(e.MinX-d.originX) > 1e-9*h || math.Abs(e.MinY-d.originY) > 1e-9*h {
					t.Errorf("level %d: tile 0,0 starts at %g,%g; want the origin %g,%g", z, e.MinX, e.MinY, d.originX, d.originY)
				}
			}
		})
	}
}

func TestDescribeFails(t *testing.T) {
	c := testCatalogue(t, testLayers)
	tests := []struct {
		name, layer, gridSet, format string
		wantUndescribable            bool
		wantKind                     apperr.Kind
	}{
		{"top-left, extent not whole tiles", "topo", "TopLeftPartial", "image/png8", true, apperr.Internal},
		{"grid set not in the layer", "demo:world", "LAEA", "image/png", false, apperr.NotFound},
		{"format not in the layer", "demo:world", "EPSG:4326", "image/png8", false, apperr.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := describe(testLayer(t, c, tt.layer), tt.gridSet, tt.format, "default", nil, "")
			if err == nil {
				t.Fatal("got nil error")
			}
			if got := errors.Is(err, ErrUndescribable); got != tt.wantUndescribable {
				t.Errorf("errors.Is(%v, ErrUndescribable): got %v, want %v", err, got, tt.wantUndescribable)
			}
			if !tt.wantUndescribable && !apperr.Is(err, tt.wantKind) {
				t.Errorf("got %v, want kind %v", err, tt.wantKind)
			}
		})
	}
}

func TestDescribeTopLeftGridFromLevelZero(t *testing.T) {
	// The document lists every level from 0 (GDAL needs them), so a
	// subset of one level of a top-left grid whose levels disagree on row
	// 0's bottom cannot be described either.
	c := testCatalogue(t, `
gridSets:
  - {id: TL, epsg: 2056, extent: [0, 0, 2048, 1100], resolutions: [4, 2, 1], alignTopLeft: true}
layers:
  - name: a
    gridSubsets: [{gridSet: TL, zoomStart: 1, zoomStop: 1}]
    formats: [image/png]
    source: {type: testpattern}
`)
	_, err := describe(testLayer(t, c, "a"), "TL", "image/png", "default", nil, "")
	if !errors.Is(err, ErrUndescribable) {
		t.Errorf("got %v, want ErrUndescribable", err)
	}
}

func TestWGS84Bounds(t *testing.T) {
	c := testCatalogue(t, testLayers)
	tests := []struct {
		name, layer, gridSet, format string
		want                         [4]float64
		wantOK                       bool
	}{
		{"EPSG:4326", "demo:world", "EPSG:4326", "image/png", [4]float64{-180, -90, 180, 90}, true},
		{"whole mercator world: latitudes clamped", "demo:world", "EPSG:900913", "image/png", [4]float64{-180, -85.0511, 180, 85.0511}, true},
		{"mercator coverage, rounded outwards", "topo", "EPSG:900913", "image/png8", [4]float64{-10.000001, 34.999999, 30.000001, 60.000001}, true},
		{"other CRS", "topo", "LAEA", "image/png8", [4]float64{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := describe(testLayer(t, c, tt.layer), tt.gridSet, tt.format, "default", nil, "")
			if err != nil {
				t.Fatal(err)
			}
			got, ok := d.wgs84Bounds()
			if ok != tt.wantOK {
				t.Fatalf("got ok=%v, want %v", ok, tt.wantOK)
			}
			if !approx(got[:], tt.want[:]) {
				t.Errorf("got %v, want %v (±1.5e-6)", got, tt.want)
			}
		})
	}
}

func TestPathEscapesSegments(t *testing.T) {
	c := testCatalogue(t, testLayers)
	d, err := describe(testLayer(t, c, "topo"), "LAEA", "image/png8", "default", nil, "pre/fix")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.path(), "topo%2050/LAEA/png8/default"; got != want {
		t.Errorf("path: got %s, want %s", got, want)
	}
	if got, want := d.set.Dir(), "pre/fix/topo 50/LAEA/png8/default/"; got != want {
		t.Errorf("key dir: got %s, want %s", got, want)
	}
}

func TestEscapeSegment(t *testing.T) {
	tests := []struct{ in, want string }{
		{"demo:world", "demo:world"},
		{"EPSG:4326", "EPSG:4326"},
		{"topo 50", "topo%2050"},
		{"a+b", "a%2Bb"},
		{"what?#%", "what%3F%23%25"},
		{"Zürich", "Z%C3%BCrich"},
	}
	for _, tt := range tests {
		if got := escapeSegment(tt.in); got != tt.want {
			t.Errorf("escapeSegment(%q): got %q, want %q", tt.in, got, tt.want)
		}
		if back, err := url.PathUnescape(escapeSegment(tt.in)); err != nil || back != tt.in {
			t.Errorf("unescaping escapeSegment(%q): got %q, %v", tt.in, back, err)
		}
	}
}
