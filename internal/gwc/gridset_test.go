package gwc_test

import (
	"reflect"
	"strings"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
)

func TestGridSetSample(t *testing.T) {
	g, err := gwc.DecodeGridSet(mustRead(t, "gwc_gridset.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if g.ID != "EPSG:2163" || g.EPSG != 2163 || g.TileWidth != 200 || g.TileHeight != 200 || g.AlignTopLeft ||
		!reflect.DeepEqual(g.ScaleDenominators, []float64{2.5e7, 1e6, 1e5, 25000}) || *g.MetersPerUnit != 1 || *g.PixelSize != 0.00028 ||
		!reflect.DeepEqual(g.ScaleNames, []string{"EPSG:2163:0", "EPSG:2163:1", "EPSG:2163:2", "EPSG:2163:3"}) {
		t.Errorf("got %+v", g)
	}
	l := gwc.Layer{Name: "a", GridSubsets: []gwc.Subset{{GridSet: g.ID}}, Formats: []string{"image/png"},
		Source: gwc.WMSSource{Type: "wms", URL: "http://h/", Layers: "a"}}
	c := mustParse(t, []gwc.GridSet{g}, l)
	gs, info, _ := c.GridSet("EPSG:2163")
	pixel := 0.00028
	for z, sd := range []float64{2.5e7, 1e6, 1e5, 25000} {
		if want := pixel * (sd / 1.0); gs.Resolutions[z] != want {
			t.Errorf("level %d: got resolution %v, want %v", z, gs.Resolutions[z], want)
		}
	}
	doc, err := gwc.EncodeGridSet(gs, info)
	if err != nil {
		t.Fatal(err)
	}
	sample := string(mustRead(t, "gwc_gridset.xml"))
	sample = sample[strings.Index(sample, "<gridSet>"):]
	if string(doc) != strings.TrimSpace(sample)+"\n" {
		t.Errorf("encoded grid set differs from GeoWebCache's sample:\n%s", doc)
	}
}

func TestScaleDenominatorsDegrees(t *testing.T) {
	doc := `<gridSet><name>D</name><srs><number>4326</number></srs><extent><coords><double>-180</double><double>-90</double><double>180</double><double>90</double></coords></extent>
<scaleDenominators><double>279541132.0143589</double><double>139770566.00717944</double></scaleDenominators></gridSet>`
	g, err := gwc.DecodeGridSet([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	l := gwc.Layer{Name: "a", GridSubsets: []gwc.Subset{{GridSet: "D"}}, Formats: []string{"image/png"},
		Source: gwc.WMSSource{Type: "wms", URL: "http://h/", Layers: "a"}}
	gs, _, _ := mustParse(t, []gwc.GridSet{g}, l).GridSet("D")
	mpu := 111319.49079327358
	for z, sd := range []float64{279541132.0143589, 139770566.00717944} {
		if want := 0.00028 * (sd / mpu); gs.Resolutions[z] != want {
			t.Errorf("level %d: got %v, want %v (GeoWebCache's metres per degree)", z, gs.Resolutions[z], want)
		}
	}
	if r := gs.Resolutions[0]; r < 0.70312 || r > 0.70313 {
		t.Errorf("level 0: got %v, want about 0.703125", r)
	}
}

func TestGridSetRoundTrip(t *testing.T) {
	src := &grid.GridSet{ID: "G", EPSG: 3035, Extent: grid.Extent{MinX: 0, MinY: 0, MaxX: 4096, MaxY: 2048}, TileWidth: 256, TileHeight: 512,
		Resolutions: []float64{8, 4, 1.5}, TopLeft: true}
	info := layer.GridSetInfo{Description: "d & <e>", ScaleNames: []string{"a", "b", "c"}, YCoordinateFirst: true, Managed: layer.ManagedByFile}
	doc, err := gwc.EncodeGridSet(src, info)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gwc.DecodeGridSet(doc)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	l := gwc.Layer{Name: "a", GridSubsets: []gwc.Subset{{GridSet: "G"}}, Formats: []string{"image/png"},
		Source: gwc.WMSSource{Type: "wms", URL: "http://h/", Layers: "a"}}
	got, gotInfo, _ := mustParse(t, []gwc.GridSet{g}, l).GridSet("G")
	if !reflect.DeepEqual(got, src) || !reflect.DeepEqual(gotInfo, info) {
		t.Errorf("got %+v %+v\nwant %+v %+v", got, gotInfo, src, info)
	}
}

func TestDecodeGridSetErrors(t *testing.T) {
	const ext = `<extent><coords><double>0</double><double>0</double><double>1</double><double>1</double></coords></extent>`
	for _, tc := range []struct{ name, doc string }{
		{"name missing", `<gridSet><srs><number>1</number></srs>` + ext + `<resolutions><double>1</double></resolutions></gridSet>`},
		{"levels", `<gridSet><name>G</name><srs><number>1</number></srs>` + ext + `<levels>5</levels><yCoordinateFirst>maybe</yCoordinateFirst><tileWidth>w</tileWidth><foo/></gridSet>`},
		{"malformed", `<gridSet><name>G</gridSet>`},
		{"both", `<gridSet><name>G</name><srs><number>1</number></srs>` + ext + `<resolutions><double>1</double></resolutions><scaleDenominators><double>1</double></scaleDenominators></gridSet>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gwc.DecodeGridSet([]byte(tc.doc))
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("got %v, want an Invalid error", err)
			}
			msg := apperr.Message(err)
			var want []string
			switch tc.name {
			case "name missing":
				want = []string{"gridSet/name: a grid set name is required"}
			case "levels":
				want = []string{"gridSet/levels", "gridSet/foo", "maybe is not true or false", "gridSet/tileWidth: w is not an integer", "resolutions or scaleDenominators are required"}
			case "malformed":
				want = []string{"malformed XML"}
			case "both":
				want = []string{"either resolutions or scaleDenominators"}
			}
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("message does not contain %q:\n%s", w, msg)
				}
			}
		})
	}
}
