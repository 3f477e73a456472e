package layer_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
)

// writeEntry is stored layer i's entry; layers whose i is a multiple of 10
// use the stored grid set Shared.
func writeEntry(i int, title string) []byte {
	grid := "EPSG:4326"
	if i%10 == 0 {
		grid = "Shared"
	}
	return fmt.Appendf(nil, "name: s:l%03d\ntitle: %s\ngridSubsets:\n  - gridSet: %s\n    zoomStop: 1\nformats: [image/png]\nsource: {type: testpattern}\n", i, title, grid)
}

func sharedGrid(levels int) []byte {
	res := "0.703125"
	if levels > 1 {
		res += ", 0.3515625"
	}
	return fmt.Appendf(nil, "id: Shared\nepsg: 4326\nextent: [-180, -90, 180, 90]\nresolutions: [%s]\n", res)
}

// TestRegistryWriteCostsTheEntriesItTouches: over a stored configuration
// of 300 layers, a change of one layer builds and validates that layer,
// not the configuration; a change of a grid set those of its 30 users.
// What is saved and served is what the whole configuration makes.
// writeRig is a registry holding n stored layers, a tenth of them on the
// grid set Shared, with hooks that record what each change touched.
type writeRig struct {
	store     layer.ConfigStore
	r         *layer.Registry
	hooked    []string
	validated []string
}

func newWriteRig(t *testing.T, n int) *writeRig {
	t.Helper()
	w := &writeRig{}
	w.store = openStore(t)
	w.r = open(t, fileLayers, w.store, time.Hour)
	if _, err := w.r.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		if _, err := doc.PutGridSet("Shared", sharedGrid(2)); err != nil {
			return err
		}
		for i := range n {
			if _, err := doc.PutLayer(fmt.Sprintf("s:l%03d", i), writeEntry(i, "one")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w.r.OnUpdate(func(_ context.Context, _ *layer.Catalogue, changed []string) { w.hooked = changed })
	w.r.Validate(func(c *layer.Catalogue) error {
		w.validated = append(w.validated, c.Names()...)
		return nil
	})
	return w
}

// write runs one change and returns the layers it built.
func (w *writeRig) write(t *testing.T, edit func(doc *layer.Config) error) (*layer.Catalogue, int64, error) {
	t.Helper()
	w.validated = nil
	before := layer.LayersBuilt()
	c, err := w.r.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error { return edit(doc) })
	return c, layer.LayersBuilt() - before, err
}

func TestRegistryWriteCostsTheEntriesItTouches(t *testing.T) {
	const n = 300
	w := newWriteRig(t, n)
	t.Run("one layer", func(t *testing.T) {
		c, built, err := w.write(t, func(doc *layer.Config) error {
			_, err := doc.PutLayer("s:l150", writeEntry(150, "two"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := c.Layer("s:l150"); !ok || l.Title != "two" {
			t.Fatalf("the changed layer: %+v, %v", l, ok)
		}
		// The layer file's layer (built with each catalogue made) and the
		// changed one, a few times: not hundreds.
		if built > 8 {
			t.Errorf("a change of one layer built %d layers, want at most 8 (not the %d stored)", built, n)
		}
		if !slices.Equal(w.hooked, []string{"s:l150"}) {
			t.Errorf("the update hooks were told of %q changed, want s:l150", w.hooked)
		}
		if !slices.Equal(w.validated, []string{"s:l150"}) {
			t.Errorf("the Validate hook was given %d layers (%q…), want the changed layer alone", len(w.validated), w.validated[:min(3, len(w.validated))])
		}
	})
	t.Run("a grid set", func(t *testing.T) {
		_, built, err := w.write(t, func(doc *layer.Config) error {
			_, err := doc.PutGridSet("Shared", fmt.Appendf(nil, "id: Shared\ndescription: renamed\nepsg: 4326\nextent: [-180, -90, 180, 90]\nresolutions: [0.703125, 0.3515625]\n"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(w.validated) != n/10 || w.validated[0] != "s:l000" || w.validated[len(w.validated)-1] != "s:l290" {
			t.Errorf("a change of a grid set w.validated %d layers (%q…), want its %d users", len(w.validated), w.validated[:min(3, len(w.validated))], n/10)
		}
		if built > 3*n/10+8 {
			t.Errorf("a change of a grid set with %d users built %d layers", n/10, built)
		}
		if !slices.Equal(w.hooked, w.validated) {
			t.Errorf("the update hooks were told of %d layers changed, want the grid set's %d users", len(w.hooked), len(w.validated))
		}
	})
	t.Run("the deletion marks alone", func(t *testing.T) {
		if _, _, err := w.write(t, func(doc *layer.Config) error {
			doc.MarkDeleted(layer.Deletion{Name: "gone", ID: "gone"})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if w.hooked == nil || len(w.hooked) != 0 || len(w.validated) != 0 {
			t.Errorf("a change of the deletion marks: hooks told of %q (nil: any), w.validated %q; want none", w.hooked, w.validated)
		}
	})
	t.Run("rejected changes", func(t *testing.T) {
		// A grid set its users no longer fit (zoomStop 1 needs two levels).
		_, _, err := w.write(t, func(doc *layer.Config) error {
			_, err := doc.PutGridSet("Shared", sharedGrid(1))
			return err
		})
		if !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("a grid set its users do not fit: %v, want Invalid", err)
		}
		// A layer taking another stored layer's id.
		_, _, err = w.write(t, func(doc *layer.Config) error {
			_, err := doc.PutLayer("s:l151", []byte("name: s:l151\nid: s:l152\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n"))
			return err
		})
		if !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("a layer with another's id: %v, want Invalid", err)
		}
	})
	t.Run("saved is the whole configuration", func(t *testing.T) {
		st, err := w.store.Config(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		whole, warnings, err := layer.Merge([]byte(fileLayers), "layers.yaml", st)
		if err != nil || len(warnings) > 0 {
			t.Fatalf("the saved configuration: %v, %q", err, warnings)
		}
		live := w.r.Catalogue()
		if !slices.Equal(live.Names(), whole.Names()) || len(whole.Names()) != n+2 { // and file:a, seeded:b
			t.Fatalf("live layers %d, whole %d", len(live.Names()), len(whole.Names()))
		}
		for _, name := range whole.Names() {
			w, _ := whole.Layer(name)
			l, ok := live.Layer(name)
			if !ok || l.Version != w.Version || l.Title != w.Title || l.ID != w.ID {
				t.Fatalf("layer %s: live %+v, whole %+v", name, l, w)
			}
		}
		if v, _, _ := live.GridSet("Shared"); v == nil || live.GridSetVersion("Shared") != whole.GridSetVersion("Shared") {
			t.Error("the live grid set Shared is not the saved one")
		}
	})
}
