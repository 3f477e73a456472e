package app_test

import (
	"bytes"
	"fmt"
	"image"
	"slices"
	"testing"

	"tilecache/internal/app/apptest"
)

// TestXYZSourceCachesATileService seeds layers of one app from another
// app's tile endpoint (a real tile service over HTTP): stored bytes pass
// through unchanged, {y} and {-y} count rows from the top and the bottom,
// png8 is re-encoded, and tiles the service does not have (404) are blank.
func TestXYZSourceCachesATileService(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "how a source treats a hostile or secret-bearing upstream")
	up := apptest.Start(t, apptest.Options{Layers: `
layers:
  - name: src:world
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [1, 1] # a truncate removes whole metatiles (contract §10.2)
    source: {type: testpattern}
`})
	wantDone(t, seedAndWait(t, up, "src:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2}}`))
	// The upstream lacks the western half of z2.
	wantDone(t, seedAndWait(t, up, "src:world", `{"seedRequest":{"zoomStart":2,"zoomStop":2,"type":"truncate",
		"bounds":{"coords":{"double":[-20037508.34,-20037508.34,0,20037508.34]}}}}`))
	srcPrefix := "src:world/EPSG:900913/png/default/"
	if n := len(keys(t, up, srcPrefix+"2/")); n != 8 {
		t.Fatalf("upstream has %d z2 tiles, want 8", n)
	}

	tmpl := up.URL + "/tiles/src:world/EPSG:900913/png/{z}/{x}/%s.png"
	a := apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(`
layers:
  - name: xyz:tms
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png, image/png8]
    metatiling: [2, 2]
    source: {type: xyz, url: "%[1]s"}
  - name: xyz:flip
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: xyz, url: "%[2]s", maxConcurrent: 2}
  - name: xyz:skip
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: xyz, url: "%[1]s", skipBlank: transparent}
`, fmt.Sprintf(tmpl, "{-y}"), fmt.Sprintf(tmpl, "{y}"))})

	// Pass-through: the same bytes; the missing half is stored blank.
	wantDone(t, seedAndWait(t, a, "xyz:tms", `{"seedRequest":{"zoomStart":0,"zoomStop":2}}`))
	prefix := "xyz:tms/EPSG:900913/png/default/"
	if got, want := keys(t, a, prefix), upKeys(1+4+16); !slices.Equal(got, want(prefix)) {
		t.Fatalf("stored %v", got)
	}
	for _, k := range []string{"0/0/0.png", "1/1/0.png", "2/3/2.png"} {
		want, _, _ := up.Get(t, srcPrefix+k)
		if got, _, _ := a.Get(t, prefix+k); !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, want the upstream's %d bytes unchanged", k, len(got), len(want))
		}
	}
	if _, found := uniformColour(decodeTile(t, a, prefix+"2/0/1.png", "image/png")); !found {
		t.Errorf("a tile missing upstream was not stored as a blank tile")
	}

	// png8: re-encoded, same pixels (the test pattern has few colours).
	wantDone(t, seedAndWait(t, a, "xyz:tms", `{"seedRequest":{"zoomStart":1,"zoomStop":1,"format":"image/png8"}}`))
	for _, k := range []string{"1/0/0.png", "1/1/1.png"} {
		ref, _, _ := up.Get(t, srcPrefix+k)
		refImg, _, err := image.Decode(bytes.NewReader(ref))
		if err != nil {
			t.Fatal(err)
		}
		tile := decodeTile(t, a, "xyz:tms/EPSG:900913/png8/default/"+k, "image/png")
		if m, w := pixelDiff(tile, refImg, 0, 0); m != 0 {
			t.Errorf("png8 %s differs from the upstream by %.3f (worst %d)", k, m, w)
		}
	}

	// {y} counts from the top: our row y is the service's row rows-1-y.
	wantDone(t, seedAndWait(t, a, "xyz:flip", `{"seedRequest":{"zoomStart":1,"zoomStop":1}}`))
	for _, xy := range [][2]int{{0, 0}, {1, 0}, {0, 1}} {
		want, _, _ := up.Get(t, fmt.Sprintf("%s1/%d/%d.png", srcPrefix, xy[0], 1-xy[1]))
		got, _, _ := a.Get(t, fmt.Sprintf("xyz:flip/EPSG:900913/png/default/1/%d/%d.png", xy[0], xy[1]))
		if !bytes.Equal(got, want) {
			t.Errorf("flip 1/%d/%d is not the upstream's 1/%d/%d", xy[0], xy[1], xy[0], 1-xy[1])
		}
	}

	// skipBlank: the missing tiles are processed, not stored.
	tasks := seedAndWait(t, a, "xyz:skip", `{"seedRequest":{"zoomStart":2,"zoomStop":2}}`)
	wantDone(t, tasks)
	if tasks[0].Done != 16 {
		t.Errorf("%d tiles processed, want 16", tasks[0].Done)
	}
	if n := len(keys(t, a, "xyz:skip/EPSG:900913/png/default/2/")); n != 8 {
		t.Errorf("%d tiles stored, want the 8 the upstream has", n)
	}
}

// upKeys lists the keys of EPSG:900913 levels 0.. holding n tiles in all.
func upKeys(n int) func(prefix string) []string {
	return func(prefix string) []string {
		var out []string
		for z := 0; len(out) < n; z++ {
			for x := range 1 << z {
				for y := range 1 << z {
					out = append(out, fmt.Sprintf("%s%d/%d/%d.png", prefix, z, x, y))
				}
			}
		}
		slices.Sort(out)
		return out
	}
}
