package layer_test

import (
	"slices"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
)

// TestRegistryStoredEntriesThatNoLongerFit: a stored layer that no longer
// fits the layer file (its grid set was removed from the file) is left
// out when the configuration is loaded, the others served; a change that
// leaves it so is saved, one that adds another such layer is refused.
func TestRegistryStoredEntriesThatNoLongerFit(t *testing.T) {
	const withGrid = `gridSets:
  - id: Gone
    epsg: 4326
    extent: [-180, -90, 180, 90]
    resolutions: [0.703125]
layers:
  - name: file:a
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
`
	const withoutGrid = `layers:
  - name: file:a
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
`
	store := openStore(t)
	r := open(t, withGrid, store, time.Hour)
	if _, err := r.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		if _, err := doc.PutLayer("s:gone", []byte("name: s:gone\ngridSubsets:\n  - gridSet: Gone\nformats: [image/png]\nsource: {type: testpattern}\n")); err != nil {
			return err
		}
		_, err := doc.PutLayer("s:kept", layerEntry("s:kept", "image/png"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	r = open(t, withoutGrid, store, time.Hour)
	c := r.Catalogue()
	if got := c.Names(); !slices.Equal(got, []string{"file:a", "s:kept"}) {
		t.Fatalf("layers %q, want file:a and s:kept", got)
	}
	if _, ok := c.Layer("s:gone"); ok {
		t.Fatal("s:gone is served without its grid set")
	}
	if l, ok := c.Layer("s:kept"); !ok || l.Managed != layer.ManagedByStore {
		t.Fatalf("s:kept: %+v, %v", l, ok)
	}
	next, err := r.Update(t.Context(), func(doc *layer.Config, cur *layer.Catalogue) error {
		if _, ok := cur.Layer("s:kept"); !ok {
			t.Error("the edit's catalogue lacks s:kept")
		}
		_, err := doc.PutLayer("s:new", layerEntry("s:new", "image/png"))
		return err
	})
	if err != nil {
		t.Fatalf("a change leaving s:gone skipped: %v", err)
	}
	if _, ok := next.Layer("s:new"); !ok {
		t.Fatal("s:new missing after its change")
	}
	_, err = r.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		_, err := doc.PutLayer("s:also-gone", []byte("name: s:also-gone\ngridSubsets: [{gridSet: Gone}]\nformats: [image/png]\nsource: {type: testpattern}\n"))
		return err
	})
	if !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("a change adding a layer that does not fit: %v, want Invalid", err)
	}
	if got := r.Catalogue().Names(); !slices.Equal(got, []string{"file:a", "s:kept", "s:new"}) {
		t.Fatalf("layers %q after the refused change", got)
	}
}
