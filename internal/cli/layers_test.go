package cli_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/cli"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/testkit/testenv"
)

// owslibBBoxes is a Python program: OWSLib's WebMapService, a real WMS
// client, prints the WGS84 bounding box of each layer of argv[3:] from the
// capabilities of the WMS at argv[1] in version argv[2], one per line.
const owslibBBoxes = `
import sys
from owslib.wms import WebMapService
w = WebMapService(sys.argv[1], version=sys.argv[2])
for name in sys.argv[3:]:
    print(" ".join(repr(float(v)) for v in w[name].boundingBoxWGS84[:4]))
`

// TestLayersFromCapabilities asks the project's test WMS (MapServer) for
// its capabilities in both versions and checks the proposed layer file:
// it parses, each layer's source is the WMS layer, the subsets' extents
// are the layer's bounding box as OWSLib reads it (in Web Mercator
// projected), and the upstream format is PNG, or TIFF with --near; one
// layer as a wmsLayer document, several into a directory; an unknown layer
// is refused by name.
func TestLayersFromCapabilities(t *testing.T) {
	wms := testenv.RequireWMS(t)
	python := testenv.RequireOWSLib(t)
	for _, version := range []string{"1.1.1", "1.3.0"} {
		t.Run(version, func(t *testing.T) {
			out, err := exec.Command(python, "-c", owslibBBoxes, wms, version, "sparse").Output()
			if err != nil {
				t.Fatalf("OWSLib: %v", err)
			}
			var want [4]float64
			if _, err := fmt.Sscan(string(out), &want[0], &want[1], &want[2], &want[3]); err != nil {
				t.Fatalf("OWSLib printed %q: %v", out, err)
			}
			r := runCLI(t, cli.Env{}, "layers", "from-capabilities", wms, "--version", version, "--layers", "sparse,polygons")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			c, err := layer.Parse([]byte(r.stdout), "proposal")
			if err != nil {
				t.Fatalf("the proposal is no layer file: %v\n%s", err, r.stdout)
			}
			if got := c.Names(); !slices.Equal(got, []string{"sparse", "polygons"}) {
				t.Errorf("layers: got %v", got)
			}
			sparse, _ := c.Layer("sparse")
			geo, ok := sparse.Subset("EPSG:4326")
			if !ok {
				t.Fatalf("sparse has no EPSG:4326 subset:\n%s", r.stdout)
			}
			if e := geo.Extent(); e.MinX != want[0] || e.MinY != want[1] || e.MaxX != want[2] || e.MaxY != want[3] {
				t.Errorf("sparse's EPSG:4326 extent: got %+v, want OWSLib's %v", e, want)
			}
			const r0 = 6378137.0
			mx := func(lon float64) float64 { return lon * math.Pi / 180 * r0 }
			my := func(lat float64) float64 { return math.Log(math.Tan(math.Pi/4+lat*math.Pi/360)) * r0 }
			merc, ok := sparse.Subset("EPSG:900913")
			if e := merc.Extent(); !ok || math.Abs(e.MinX-mx(want[0])) > 0.01 || math.Abs(e.MinY-my(want[1])) > 0.01 ||
				math.Abs(e.MaxX-mx(want[2])) > 0.01 || math.Abs(e.MaxY-my(want[3])) > 0.01 {
				t.Errorf("sparse's EPSG:900913 extent: got %+v, want the projection of %v", e, want)
			}
			for _, want := range []string{"type: wms", "layers: sparse", "format: image/png", "transparent: true"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("no %q in\n%s", want, r.stdout)
				}
			}
		})
	}
	r := runCLI(t, cli.Env{}, "layers", "from-capabilities", wms, "--layers", "hillshade", "--near")
	if r.code != 0 || !strings.Contains(r.stdout, "format: image/tiff") {
		t.Errorf("--near: exit %d, want format image/tiff in\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, cli.Env{}, "layers", "from-capabilities", wms, "--layers", "points", "--format", "xml")
	l, err := gwc.DecodeLayer([]byte(r.stdout))
	if r.code != 0 || err != nil || l.Name != "points" || l.Source.Layers != "points" || !strings.HasPrefix(l.Source.URL, "http://127.0.0.1:") {
		t.Errorf("--format xml: exit %d, %v, %+v\n%s%s", r.code, err, l, r.stdout, r.stderr)
	}
	dir := t.TempDir()
	r = runCLI(t, cli.Env{}, "layers", "from-capabilities", wms, "--layers", "points,lines", "--format", "xml", "--out", dir)
	for _, name := range []string{"points", "lines"} {
		data, err := os.ReadFile(filepath.Join(dir, name+".xml"))
		if r.code != 0 || err != nil {
			t.Fatalf("--out: exit %d, %v\n%s", r.code, err, r.stderr)
		}
		if l, err := gwc.DecodeLayer(data); err != nil || l.Name != name {
			t.Errorf("%s.xml: %v, %+v", name, err, l)
		}
	}
	r = runCLI(t, cli.Env{}, "layers", "from-capabilities", wms, "--layers", "points,nope")
	if r.code == 0 || !strings.Contains(r.stderr, "no layer named nope") {
		t.Errorf("unknown layer: exit %d, stderr %q; want a failure naming nope", r.code, r.stderr)
	}
}

// TestLayersImport converts a GeoWebCache configuration: every item of
// the first file is mapped (its top-level settings are listed as not
// mapped); in the second, the items that cannot be mapped are named on
// stderr, the others printed, and the exit status says not all were.
func TestLayersImport(t *testing.T) {
	r := runCLI(t, cli.Env{}, "layers", "import", "--print", "testdata/geowebcache.xml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	c, err := layer.Parse([]byte(r.stdout), "imported")
	if err != nil {
		t.Fatalf("the import is no layer file: %v\n%s", err, r.stdout)
	}
	if got := c.Names(); !slices.Equal(got, []string{"topp:states", "swiss roads"}) {
		t.Errorf("layers: got %v", got)
	}
	states, _ := c.Layer("topp:states")
	if age, ok := states.ClientMaxAge(11); !ok || age != 3600 {
		t.Errorf("topp:states client max-age at z11: %d %v, want 3600", age, ok)
	}
	if g, info, ok := c.GridSet("Swiss"); !ok || g.EPSG != 2056 || !slices.Equal(info.ScaleNames, []string{"s0", "s1", "s2"}) {
		t.Errorf("grid set Swiss: %+v %+v %v", g, info, ok)
	}
	for _, want := range []string{"not mapped (no counterpart in tilecache): version", "not mapped (no counterpart in tilecache): backendTimeout",
		"imported layer topp:states", "imported layer swiss roads"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	r = runCLI(t, cli.Env{}, "layers", "import", "--print", "testdata/geowebcache-partial.xml")
	if r.code == 0 {
		t.Errorf("partial import: exit 0, want non-zero")
	}
	c, err = layer.Parse([]byte(r.stdout), "imported")
	if err != nil || !slices.Equal(c.Names(), []string{"good"}) {
		t.Errorf("partial import: %v, layers %v\n%s", err, c, r.stdout)
	}
	for _, want := range []string{"not imported: layers/wmsLayer[1] in memory", "wmsLayer/blobStoreId", "wmsLayer/inMemoryCached",
		"not imported: layers/arcgisLayer[2]"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("partial import: stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// TestLayersImportThroughREST creates a GeoWebCache configuration using
// every element tilecache reads on a server, through its REST interface:
// each layer then reads back as the layer file --print proposes; a second
// import leaves what exists; a configuration with items that cannot be
// mapped creates the others whole and none of them in part.
func TestLayersImportThroughREST(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	r := runCLI(t, cli.Env{}, append([]string{"layers", "import", "testdata/geowebcache-full.xml"}, auth(a)...)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"created grid set World512", "created grid set Swiss", "created layer full:world", "created layer full:cache control"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	// The file's own <version> is all that has no counterpart.
	if strings.TrimSpace(r.stderr) != "not mapped (no counterpart in tilecache): version" {
		t.Errorf("every layer and grid set element should be mapped:\n%s", r.stderr)
	}
	p := runCLI(t, cli.Env{}, "layers", "import", "--print", "testdata/geowebcache-full.xml")
	want, err := layer.Parse([]byte(p.stdout), "printed")
	if err != nil {
		t.Fatalf("--print: %v\n%s", err, p.stdout)
	}
	for _, name := range want.Names() {
		res := a.Do(t, "GET", "/rest/layers/"+strings.ReplaceAll(name, " ", "%20")+".xml", "")
		got, err := gwc.DecodeLayer([]byte(res.Body))
		if res.Status != 200 || err != nil {
			t.Fatalf("GET layer %s: %d %v\n%s", name, res.Status, err, res.Body)
		}
		wl, _ := want.Layer(name)
		doc, err := gwc.EncodeLayer(wl)
		if err != nil {
			t.Fatal(err)
		}
		exp, _ := gwc.DecodeLayer(doc)
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("layer %s reads back as\n%+v\nwant\n%+v", name, got, exp)
		}
	}
	res := a.Do(t, "GET", "/rest/gridsets/Swiss.xml", "")
	if g, err := gwc.DecodeGridSet([]byte(res.Body)); err != nil || g.EPSG != 2056 || !slices.Equal(g.ScaleDenominators, []float64{1000000, 500000, 250000}) {
		t.Errorf("grid set Swiss: %+v %v", g, err)
	}

	r = runCLI(t, cli.Env{}, append([]string{"layers", "import", "testdata/geowebcache-full.xml"}, auth(a)...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "exists, left as it is (--replace replaces it): layer full:world") {
		t.Errorf("a second import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = runCLI(t, cli.Env{}, append([]string{"layers", "import", "testdata/geowebcache-partial.xml"}, auth(a)...)...)
	if r.code == 0 || !strings.Contains(r.stdout, "created layer good") || !strings.Contains(r.stderr, "wmsLayer/blobStoreId") {
		t.Errorf("partial import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	list := a.Do(t, "GET", "/rest/layers", "").Body
	if !strings.Contains(list, "<name>good</name>") || strings.Contains(list, "in memory") {
		t.Errorf("after the partial import the server lists\n%s", list)
	}
}

// TestLayersListAndGet reads a server's layers through the CLI.
func TestLayersListAndGet(t *testing.T) {
	a := apptest.Start(t, apptest.Options{Layers: apptest.Layers + `  - name: roads
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: wms, url: "http://127.0.0.1:1/wms", layers: roads}
`})
	r := runCLI(t, cli.Env{}, append([]string{"layers", "list"}, auth(a)...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "<name>roads</name>") || !strings.Contains(r.stdout, "<name>demo:world</name>") {
		t.Errorf("layers list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, cli.Env{}, append([]string{"layers", "get", "roads"}, auth(a)...)...)
	if l, err := gwc.DecodeLayer([]byte(r.stdout)); r.code != 0 || err != nil || l.Source.Layers != "roads" {
		t.Errorf("layers get roads: exit %d, %v, %+v\n%s", r.code, err, l, r.stderr)
	}
	r = runCLI(t, cli.Env{}, append([]string{"layers", "get", "nope"}, auth(a)...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "404") || !strings.Contains(r.stderr, "Unknown layer: nope") {
		t.Errorf("layers get nope: exit %d, stderr %q", r.code, r.stderr)
	}
}
