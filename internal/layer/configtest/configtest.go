// Package configtest is the conformance suite every layer.ConfigStore must
// pass: versions counting the saves from 0, documents kept byte for byte
// (up to layer.MaxStoredConfig of YAML), a save that is a compare-and-set
// of the version, and nothing stored by a save refused.
package configtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
)

// doc is a small layer file document.
const doc = "layers:\n  - name: topp:states\n    mimeFormats: [image/png]\n"

// Run runs the suite; newStore must return a fresh, empty store per call.
func Run(t *testing.T, newStore func(t *testing.T) layer.ConfigStore) {
	want := func(t *testing.T, s layer.ConfigStore, version int64, doc []byte) {
		t.Helper()
		got, err := s.Config(t.Context())
		if err != nil {
			t.Fatalf("Config: %v", err)
		}
		if got.Version != version || !bytes.Equal(got.Doc, doc) {
			t.Fatalf("Config: got version %d, %d bytes %.60q; want version %d, %d bytes %.60q",
				got.Version, len(got.Doc), got.Doc, version, len(doc), doc)
		}
		if v, err := s.ConfigVersion(t.Context()); err != nil || v != version {
			t.Fatalf("ConfigVersion: got %d, %v; want %d", v, err, version)
		}
	}
	save := func(t *testing.T, s layer.ConfigStore, expect int64, doc []byte) {
		t.Helper()
		v, err := s.SaveConfig(t.Context(), expect, doc)
		if err != nil || v != expect+1 {
			t.Fatalf("SaveConfig(%d, %d bytes): got %d, %v; want %d", expect, len(doc), v, err, expect+1)
		}
	}
	wantKind := func(t *testing.T, err error, k apperr.Kind) {
		t.Helper()
		if got := apperr.KindOf(err); err == nil || got != k {
			t.Fatalf("got error %v (kind %v), want kind %v", err, got, k)
		}
	}

	t.Run("Empty", func(t *testing.T) {
		s := newStore(t)
		got, err := s.Config(t.Context())
		if err != nil || got.Version != 0 || len(got.Doc) != 0 {
			t.Fatalf("empty store: got version %d, %q, %v; want version 0 and no document", got.Version, got.Doc, err)
		}
		if v, err := s.ConfigVersion(t.Context()); err != nil || v != 0 {
			t.Fatalf("empty store: ConfigVersion got %d, %v; want 0", v, err)
		}
	})
	t.Run("SaveAndRead", func(t *testing.T) {
		s := newStore(t)
		in := []byte(doc)
		save(t, s, 0, in)
		want(t, s, 1, []byte(doc))
		// Neither the caller's slice nor the one returned is the stored one.
		in[0] = 'X'
		got, err := s.Config(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got.Doc[1] = 'Y'
		want(t, s, 1, []byte(doc))
	})
	t.Run("StaleVersionConflicts", func(t *testing.T) {
		s := newStore(t)
		save(t, s, 0, []byte(doc))
		for _, expect := range []int64{0, 5, -1} {
			_, err := s.SaveConfig(t.Context(), expect, []byte("layers: []\n"))
			wantKind(t, err, apperr.Conflict)
			want(t, s, 1, []byte(doc))
		}
		// A conflict on the empty store stores nothing either.
		e := newStore(t)
		_, err := e.SaveConfig(t.Context(), 1, []byte(doc))
		wantKind(t, err, apperr.Conflict)
		want(t, e, 0, nil)
	})
	t.Run("SuccessiveSaves", func(t *testing.T) {
		s := newStore(t)
		for v := range int64(3) {
			d := fmt.Appendf(nil, "%s# save %d\n", doc, v+1)
			save(t, s, v, d)
			want(t, s, v+1, d)
		}
		// An empty document is a document.
		save(t, s, 3, []byte{})
		want(t, s, 4, nil)
	})
	t.Run("LargeDocument", func(t *testing.T) {
		s := newStore(t)
		big := largeDoc(3 << 20)
		save(t, s, 0, big)
		want(t, s, 1, big)
		big2 := largeDoc(layer.MaxStoredConfig)
		save(t, s, 1, big2)
		want(t, s, 2, big2)
	})
	t.Run("TooLarge", func(t *testing.T) {
		s := newStore(t)
		save(t, s, 0, []byte(doc))
		_, err := s.SaveConfig(t.Context(), 1, largeDoc(layer.MaxStoredConfig+1))
		wantKind(t, err, apperr.Invalid)
		want(t, s, 1, []byte(doc))
		e := newStore(t)
		_, err = e.SaveConfig(t.Context(), 0, largeDoc(layer.MaxStoredConfig+1))
		wantKind(t, err, apperr.Invalid)
		want(t, e, 0, nil)
	})
	t.Run("ConcurrentSavers", func(t *testing.T) {
		s := newStore(t)
		const savers, tries = 8, 50
		docs := make([][]byte, savers)
		for i := range docs {
			docs[i] = fmt.Appendf(nil, "%s# saver %d\n", doc, i)
		}
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			versions []int64
		)
		for i := range savers {
			wg.Go(func() {
				for try := range tries {
					v, err := s.ConfigVersion(t.Context())
					if err != nil {
						t.Errorf("saver %d: ConfigVersion: %v", i, err)
						return
					}
					n, err := s.SaveConfig(t.Context(), v, docs[i])
					if err == nil {
						if n != v+1 {
							t.Errorf("saver %d: SaveConfig(%d) gave version %d", i, v, n)
						}
						mu.Lock()
						versions = append(versions, n)
						mu.Unlock()
						return
					}
					if !apperr.Is(err, apperr.Conflict) {
						t.Errorf("saver %d, try %d: SaveConfig(%d): %v", i, try, v, err)
						return
					}
					time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
				}
				t.Errorf("saver %d: no save in %d tries", i, tries)
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		slices.Sort(versions)
		if !slices.Equal(versions, []int64{1, 2, 3, 4, 5, 6, 7, 8}) {
			t.Fatalf("saves gave versions %v, want 1 to 8 once each", versions)
		}
		got, err := s.Config(t.Context())
		if err != nil || got.Version != savers {
			t.Fatalf("after the saves: version %d, %v; want %d", got.Version, err, savers)
		}
		if !slices.ContainsFunc(docs, func(d []byte) bool { return bytes.Equal(d, got.Doc) }) {
			t.Fatalf("after the saves: document %q is none of the savers'", got.Doc)
		}
	})
}

// largeDoc returns a layer file document of exactly n bytes: layer entries
// of varying names, grid sets and bounds, as a configuration of about a
// thousand layers is (it compresses as such a document does).
func largeDoc(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	workspaces := []string{"topp", "demo", "osm", "ne", "cadastre", "hydro", "roads", "landuse"}
	themes := []string{"states", "rivers", "buildings", "parcels", "contours", "forests", "railways", "boundaries", "coastline", "urban_areas"}
	gridsets := []string{"EPSG:4326", "EPSG:900913", "EPSG:3857", "EPSG:2154", "EPSG:25832"}
	var b strings.Builder
	b.WriteString("# layers managed at run time\nlayers:\n")
	for i := 0; b.Len() < n; i++ {
		ws, theme := workspaces[r.IntN(len(workspaces))], themes[r.IntN(len(themes))]
		fmt.Fprintf(&b, "  - name: %s:%s_%04d\n", ws, theme, i)
		fmt.Fprintf(&b, "    title: %s %s, sheet %d\n", strings.ToUpper(ws), strings.ReplaceAll(theme, "_", " "), i)
		fmt.Fprintf(&b, "    wmsUrl: [http://wms.example/%s/wms]\n", ws)
		fmt.Fprintf(&b, "    wmsLayers: %s:%s\n", ws, theme)
		b.WriteString("    mimeFormats: [image/png, image/jpeg]\n")
		b.WriteString("    metaWidthHeight: [4, 4]\n    gutter: 0\n    expireCache: 0\n    expireClients: 3600\n")
		b.WriteString("    gridSubsets:\n")
		for range 1 + r.IntN(2) {
			g := gridsets[r.IntN(len(gridsets))]
			x, y := -180+r.Float64()*300, -90+r.Float64()*150
			fmt.Fprintf(&b, "      - gridSetName: %s\n        extent: [%.2f, %.2f, %.2f, %.2f]\n        zoomStart: 0\n        zoomStop: %d\n",
				g, x, y, x+r.Float64()*20, y+r.Float64()*20, 12+r.IntN(9))
		}
		if r.IntN(3) == 0 {
			fmt.Fprintf(&b, "    parameterFilters:\n      - key: STYLES\n        default: %s_default\n        values: [%s_default, %s_dark]\n", theme, theme, theme)
		}
	}
	out := []byte(b.String())[:n]
	out[n-1] = '\n'
	return out
}
