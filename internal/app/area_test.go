package app_test

import (
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
)

// triangle is a convex area in EPSG:4326 (longitude, latitude).
var triangle = [3][2]float64{{-100, -40}, {60, -20}, {-20, 70}}

// convexMeets tells whether the interiors of a convex polygon and a box
// meet, by the separating axis theorem: they do not when, on one of the
// box's axes or one of the polygon's edge normals, their projections do
// not overlap beyond a point. Independent of the engine's sweep.
func convexMeets(poly [][2]float64, minx, miny, maxx, maxy float64) bool {
	box := [][2]float64{{minx, miny}, {maxx, miny}, {maxx, maxy}, {minx, maxy}}
	axes := [][2]float64{{1, 0}, {0, 1}}
	for i := range poly {
		a, b := poly[i], poly[(i+1)%len(poly)]
		axes = append(axes, [2]float64{b[1] - a[1], a[0] - b[0]})
	}
	proj := func(ps [][2]float64, ax [2]float64) (lo, hi float64) {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, p := range ps {
			d := p[0]*ax[0] + p[1]*ax[1]
			lo, hi = min(lo, d), max(hi, d)
		}
		return lo, hi
	}
	for _, ax := range axes {
		alo, ahi := proj(poly, ax)
		blo, bhi := proj(box, ax)
		if ahi <= blo+1e-9 || bhi <= alo+1e-9 {
			return false
		}
	}
	return true
}

// expectTriangleKeys lists the EPSG:4326 tiles of levels z0 to z1 that
// the triangle meets, each level's tiles being 180/2^z degrees wide.
func expectTriangleKeys(prefix string, z0, z1 int) []string {
	var out []string
	for z := z0; z <= z1; z++ {
		size := 180 / math.Pow(2, float64(z))
		for x := range int64(2) << z {
			for y := range int64(1) << z {
				minx, miny := -180+float64(x)*size, -90+float64(y)*size
				if convexMeets(triangle[:], minx, miny, minx+size, miny+size) {
					out = append(out, fmt.Sprintf("%s%d/%d/%d.png", prefix, z, x, y))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func triangleWKT() string {
	var b strings.Builder
	b.WriteString("POLYGON((")
	for _, p := range append(triangle[:], triangle[0]) {
		fmt.Fprintf(&b, "%g %g,", p[0], p[1])
	}
	return strings.TrimSuffix(b.String(), ",") + "))"
}

func triangleGeoJSON() string {
	var b strings.Builder
	b.WriteString(`{"type":"Polygon","coordinates":[[`)
	for i, p := range append(triangle[:], triangle[0]) {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "[%g,%g]", p[0], p[1])
	}
	return b.String() + `]]}`
}

// TestSeedByGeometry: a seed restricted to a geometry (JSON with GeoJSON,
// XML with WKT) stores exactly the tiles the geometry meets, its status
// totals count exactly those, and a truncate by the same geometry removes
// exactly them.
func TestSeedByGeometry(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	const prefix = "demo:world/EPSG:4326/png/default/"
	want := expectTriangleKeys(prefix, 0, 5)
	box := 0
	for z := range 6 {
		box += (2 << z) * (1 << z)
	}
	if len(want) == 0 || len(want) >= box {
		t.Fatalf("expected %d tiles of %d: a poor test shape", len(want), box)
	}
	rows := seedReq(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":5,"format":"image/png","threadCount":2,
		"geometry":`+triangleGeoJSON()+`}}`)
	if got := sumTotals(rows); got != int64(len(want)) {
		t.Fatalf("status totals %d tiles, want the %d the triangle meets", got, len(want))
	}
	for _, tk := range waitFinished(t, a, ids(rows), 60*time.Second) {
		if tk.Status != task.Done || tk.Done != tk.Total {
			t.Fatalf("task %d: %s with %d/%d, want DONE with all tiles", tk.ID, tk.Status, tk.Done, tk.Total)
		}
	}
	if got := keys(t, a, "demo:world/"); !slices.Equal(got, want) {
		t.Fatalf("stored %d tiles, want the %d the triangle meets:\ngot  %v\nwant %v", len(got), len(want), got, want)
	}

	// The same area as WKT in XML truncates exactly those tiles at z4-5.
	res := a.Do(t, "POST", "/rest/seed/demo:world.xml", `<seedRequest><gridSetId>EPSG:4326</gridSetId><zoomStart>4</zoomStart><zoomStop>5</zoomStop>
		<format>image/png</format><type>truncate</type><geometry>`+triangleWKT()+`</geometry></seedRequest>`, "Content-Type", "application/xml")
	if res.Status != 200 {
		t.Fatalf("XML truncate: %d %s", res.Status, res.Body)
	}
	var doc struct {
		Rows []struct {
			Longs []int64 `xml:"long"`
		} `xml:"long-array"`
	}
	if err := xml.Unmarshal([]byte(res.Body), &doc); err != nil || len(doc.Rows) != 1 || len(doc.Rows[0].Longs) != 5 {
		t.Fatalf("XML truncate answer %q: %v", res.Body, err)
	}
	waitFinished(t, a, []int64{doc.Rows[0].Longs[3]}, 30*time.Second)
	left := expectTriangleKeys(prefix, 0, 3)
	if got := keys(t, a, "demo:world/"); !slices.Equal(got, left) {
		t.Fatalf("after the truncate: %d tiles, want the %d of z0-3", len(got), len(left))
	}
}

// TestSeedByGeometryPerZoom: per-zoom geometries each restrict their own
// levels.
func TestSeedByGeometryPerZoom(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	// z0-1: the eastern hemisphere's northern half (4 + ... tiles), z2: a
	// buffered point.
	rows := seedReq(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2,"format":"image/png",
		"geometries":[
		  {"zoomStart":0,"zoomStop":1,"geometry":"POLYGON((0 0,180 0,180 90,0 90,0 0))"},
		  {"zoomStart":2,"zoomStop":2,"geometry":{"type":"Point","coordinates":[22.5,22.5]},"buffer":1000}
		]}}`)
	// z0: tile 1/0; z1: columns 2-3 of row 1; z2: the one tile holding the point.
	want := []string{"0/1/0.png", "1/2/1.png", "1/3/1.png", "2/4/2.png"}
	for i := range want {
		want[i] = "demo:world/EPSG:4326/png/default/" + want[i]
	}
	slices.Sort(want)
	if got := sumTotals(rows); got != int64(len(want)) {
		t.Fatalf("totals %d, want %d", got, len(want))
	}
	waitFinished(t, a, ids(rows), 30*time.Second)
	if got := keys(t, a, "demo:world/"); !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
}

// TestGeometryErrors: what cannot be an area is a 400 naming the problem.
func TestGeometryErrors(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	for _, tt := range []struct{ name, extra, want string }{
		{"line without buffer", `"geometry":"LINESTRING(0 0,10 10)"`, "covers no area without a buffer"},
		{"bad WKT", `"geometry":"POLYGON((0 0,1 1"`, "neither GeoJSON nor valid WKT"},
		{"bad GeoJSON", `"geometry":{"type":"Polygon","coordinates":"x"}`, "invalid GeoJSON Polygon"},
		{"unsupported type", `"geometry":"GEOMETRYCOLLECTION EMPTY"`, "geometry is empty"},
		{"outside the bounds", `"bounds":{"coords":{"double":[0,0,10,10]}},"geometry":"POLYGON((-50 -50,-40 -50,-40 -40,-50 -50))"`, "lies outside the request's bounds"},
		{"untransformable", `"geometry":"SRID=2154;POLYGON((0 0,1 0,1 1,0 0))"`, "cannot transform a geometry from EPSG:2154"},
		{"missing level", `"geometries":[{"zoomStart":0,"zoomStop":0,"geometry":"POLYGON((0 0,1 0,1 1,0 0))"}]`, "no geometry for zoom level 1"},
		{"buffer without geometry", `"buffer":10`, "buffer is given without a geometry"},
		{"negative buffer", `"geometry":"POINT(0 0)","buffer":-1`, "at least 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := a.Do(t, "POST", "/rest/seed/demo:world.json", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":1,`+tt.extra+`}}`)
			if res.Status != 400 || !strings.Contains(res.Body, tt.want) {
				t.Fatalf("got %d %q, want 400 naming %q", res.Status, res.Body, tt.want)
			}
		})
	}
}

// TestLayerCoverageGeometry: a layer's coverage geometry restricts every
// seed to the tiles it meets, and a miss outside it is a 404 that never
// reaches the WMS, while a miss inside renders and stores only the
// covered tiles of its metatile.
func TestLayerCoverageGeometry(t *testing.T) {
	t.Parallel()
	wms := newWMSProxy(t, nil)
	layers := apptest.Layers + fmt.Sprintf(`
  - name: cov:world
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    renderOnMiss: {enabled: true}
    coverage: {geometry: "%s"}
    source: {type: wms, url: "%s", layers: "polygons,lines,points"}
`, triangleWKT(), wms.URL)
	a := apptest.Start(t, apptest.Options{Layers: layers})
	const prefix = "cov:world/EPSG:4326/png/default/"
	rows := seedReq(t, a, "cov:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3}}`)
	want := expectTriangleKeys(prefix, 0, 3)
	if got := sumTotals(rows); got != int64(len(want)) {
		t.Fatalf("totals %d, want the coverage's %d tiles", got, len(want))
	}
	waitFinished(t, a, ids(rows), 60*time.Second)
	if got := keys(t, a, "cov:world/"); !slices.Equal(got, want) {
		t.Fatalf("stored %d tiles, want the %d of the coverage", len(got), len(want))
	}
	before := wms.getMaps.Load()
	// z5: tiles are 5.625° wide; (0, 0) is at -180, -90, far outside.
	if status, _, body := getTile(t, a.URL, "/tiles/cov:world/EPSG:4326/png/5/0/0.png"); status != 404 {
		t.Fatalf("miss outside the coverage: %d %.200q, want 404", status, body)
	}
	if n := wms.getMaps.Load(); n != before {
		t.Fatalf("a miss outside the coverage made %d GetMaps", n-before)
	}
	// Inside: the tile holding (-20, 10) at z5 is column 28, row 17.
	if status, _, body := getTile(t, a.URL, "/tiles/cov:world/EPSG:4326/png/5/28/17.png"); status != 200 {
		t.Fatalf("miss inside the coverage: %d %.200q", status, body)
	}
	var inMeta []string
	for _, k := range expectTriangleKeys(prefix, 5, 5) {
		var x, y int
		fmt.Sscanf(strings.TrimPrefix(k, prefix+"5/"), "%d/%d.png", &x, &y)
		if x/4 == 28/4 && y/4 == 17/4 {
			inMeta = append(inMeta, k)
		}
	}
	if got := keys(t, a, prefix+"5/"); !slices.Equal(got, inMeta) {
		t.Fatalf("the miss stored %v, want the covered tiles of its metatile %v", keys(t, a, prefix+"5/"), inMeta)
	}
}
