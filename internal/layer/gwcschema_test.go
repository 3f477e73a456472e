package layer_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/layer"
)

const gwcSchemaFile = `
gridSets:
  - id: Scaled
    description: a grid in scale denominators
    epsg: 2163
    extent: [-2495667.977678598, -2223677.196231552, 3291070.6104286816, 959189.3312465074]
    scaleDenominators: [2.5E7, 1000000.0, 100000.0, 25000.0]
    metersPerUnit: 1
    scaleNames: [s0, s1, s2, s3]
    yCoordinateFirst: true
  - id: Degrees
    epsg: 4326
    extent: [-180, -90, 180, 90]
    scaleDenominators: [279541132.0143589]
layers:
  - name: a
    description: free text
    enabled: false
    gridSubsets:
      - gridSet: EPSG:4326
        minCachedLevel: 2
        maxCachedLevel: 10
      - gridSet: Scaled
    formats: [image/png]
    expireClientsList: [{minZoom: 2, expiration: 500}, {minZoom: 5, expiration: 60}]
    expireCache: 3600
    parameterFilters:
      - {key: elevation, type: float, values: ["1.5", "2.0"], threshold: 0.1}
      - {key: dim, type: integer, default: "1", values: ["1", "10"], threshold: 3}
    source: {type: testpattern}
  - name: b
    gridSubsets: [{gridSet: Degrees}]
    formats: [image/png]
    source: {type: testpattern}
`

func TestGWCSchema(t *testing.T) {
	c, err := layer.Parse([]byte(gwcSchemaFile), "x")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Layer("a")
	b, _ := c.Layer("b")
	if a.Enabled || !b.Enabled {
		t.Errorf("enabled: got %v, %v; want false, true", a.Enabled, b.Enabled)
	}
	if a.Description != "free text" {
		t.Errorf("description: got %q", a.Description)
	}
	for _, tc := range []struct {
		z    int
		want int
	}{{0, 500}, {2, 500}, {4, 500}, {5, 60}, {20, 60}} {
		if got, ok := a.ClientMaxAge(tc.z); !ok || got != tc.want {
			t.Errorf("ClientMaxAge(%d): got %d, %v; want %d", tc.z, got, ok, tc.want)
		}
	}
	if _, ok := b.ClientMaxAge(3); ok {
		t.Error("ClientMaxAge of a layer without rules: got ok")
	}
	if d, ok := a.CacheExpiry(7); !ok || d != time.Hour {
		t.Errorf("CacheExpiry: got %v, %v; want 1h", d, ok)
	}
	sub, _ := a.Subset("EPSG:4326")
	for z, want := range map[int]bool{1: false, 2: true, 10: true, 11: false} {
		if got := a.Cached(sub, z); got != want {
			t.Errorf("Cached(EPSG:4326, %d): got %v, want %v", z, got, want)
		}
	}
	scaled, _ := a.Subset("Scaled")
	if !a.Cached(scaled, 3) {
		t.Error("Cached of a subset without cached levels: got false at its last level")
	}
	g, info, ok := c.GridSet("Scaled")
	if !ok || info.Description != "a grid in scale denominators" || !info.YCoordinateFirst || !slices.Equal(info.ScaleNames, []string{"s0", "s1", "s2", "s3"}) {
		t.Fatalf("GridSet(Scaled): got %+v, %+v, %v", g, info, ok)
	}
	pixel, denom := 0.00028, 2.5e7 // variables: float64 arithmetic, as GeoWebCache's
	if want := pixel * (denom / 1); g.Resolutions[0] != want {
		t.Errorf("resolution 0: got %v, want %v", g.Resolutions[0], want)
	}
	deg, _, _ := c.GridSet("Degrees")
	if want := 0.703125; math.Abs(deg.Resolutions[0]-want) > 1e-9 {
		t.Errorf("EPSG:4326 scale denominator: got resolution %v, want %v", deg.Resolutions[0], want)
	}
}

func TestNumericFilters(t *testing.T) {
	c, err := layer.Parse([]byte(gwcSchemaFile), "x")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Layer("a")
	for _, tc := range []struct {
		key, value, want string
		ok               bool
	}{
		{"ELEVATION", "1.55", "1.5", true},
		{"ELEVATION", "2", "2.0", true},
		{"ELEVATION", "1.75", "", false},
		{"ELEVATION", "x", "", false},
		{"DIM", "9", "10", true},
		{"DIM", "5", "", false}, // 4 from 1, 5 from 10: both ≥ 3
	} {
		got, err := a.NormaliseParameters([][2]string{{tc.key, tc.value}})
		if (err == nil) != tc.ok || (tc.ok && got[tc.key] != tc.want) {
			t.Errorf("%s=%s: got %v, %v; want %q (ok %v)", tc.key, tc.value, got, err, tc.want, tc.ok)
		}
	}
}

func TestGWCSchemaErrors(t *testing.T) {
	for _, tc := range []struct{ name, entry, want string }{
		{"both expiry forms", "expireClients: 5\n    expireClientsList: [{minZoom: 0, expiration: 5}]", "either expireClients or expireClientsList"},
		{"negative expiry", "expireCache: -2", "special values"},
		{"cacheControl and expireClients", "cacheControl: no-cache\n    expireClients: 60", "either cacheControl or expireClients"},
		{"unordered rules", "expireCacheList: [{minZoom: 3, expiration: 5}, {minZoom: 3, expiration: 6}]", "must increase"},
		{"empty rule list", "expireCacheList: []", "at least one rule"},
		{"float filter without values", "parameterFilters: [{key: e, type: float}]", "needs values"},
		{"float filter bad value", "parameterFilters: [{key: e, type: float, values: [abc]}]", `value "abc" is not a float`},
		{"integer filter fractional threshold", "parameterFilters: [{key: e, type: integer, values: [\"1\"], threshold: 0.5}]", "whole number"},
		{"unknown filter type", "parameterFilters: [{key: e, type: date, values: [a]}]", `type "date"`},
		{"threshold on list filter", "parameterFilters: [{key: e, values: [a], threshold: 1}]", "threshold needs type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "layers:\n  - name: a\n    gridSubsets: [{gridSet: EPSG:4326}]\n    formats: [image/png]\n    source: {type: testpattern}\n    " + tc.entry + "\n"
			_, err := layer.Parse([]byte(doc), "x")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, subset, want string }{
		{"min above max", "{gridSet: EPSG:4326, minCachedLevel: 5, maxCachedLevel: 4}", "greater than maxCachedLevel"},
		{"max beyond grid", "{gridSet: EPSG:4326, maxCachedLevel: 22}", "maxCachedLevel 22 is outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "layers:\n  - name: a\n    gridSubsets: [" + tc.subset + "]\n    formats: [image/png]\n    source: {type: testpattern}\n"
			_, err := layer.Parse([]byte(doc), "x")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, grid, want string }{
		{"both level forms", "resolutions: [1]\n    scaleDenominators: [1]", "either resolutions or scaleDenominators"},
		{"scale names count", "resolutions: [2, 1]\n    scaleNames: [a]", "1 names for 2 levels"},
		{"bad metersPerUnit", "scaleDenominators: [1]\n    metersPerUnit: 0", "metersPerUnit 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "gridSets:\n  - id: G\n    epsg: 3035\n    extent: [0, 0, 1000, 1000]\n    " + tc.grid + "\nlayers:\n  - name: a\n    gridSubsets: [{gridSet: G}]\n    formats: [image/png]\n    source: {type: testpattern}\n"
			_, err := layer.Parse([]byte(doc), "x")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
