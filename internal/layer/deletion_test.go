package layer_test

import (
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
)

// TestDeletionMarks: a layer deleted with its tiles leaves a mark in the
// same save; the mark survives other changes and a second process's
// read, refuses a layer of that name or id (409) until it is removed, and
// a layer file may not hold one.
func TestDeletionMarks(t *testing.T) {
	store := openStore(t)
	r := open(t, fileLayers, store, time.Hour)
	since := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	if _, err := r.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		if !doc.DeleteLayer("seeded:b") {
			t.Error("seeded:b not in the stored document")
		}
		doc.MarkDeleted(layer.Deletion{Name: "seeded:b", ID: "seeded:b", Since: since})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := layer.Deletion{Name: "seeded:b", ID: "seeded:b", Since: since}
	if d, ok := r.Catalogue().Deleting("seeded:b"); !ok || d != want {
		t.Fatalf("mark %+v %v, want %+v", d, ok, want)
	}
	// Another change keeps the mark; another process reads it.
	if _, err := r.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		_, err := doc.PutLayer("other", layerEntry("other", "image/png"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	r2 := open(t, fileLayers, store, time.Hour)
	if d, ok := r2.Catalogue().Deleting("seeded:b"); !ok || d != want {
		t.Fatalf("second process: mark %+v %v", d, ok)
	}
	// The name, and another name with the id, are refused while it is there.
	for name, entry := range map[string][]byte{
		"seeded:b": layerEntry("seeded:b", "image/png"),
		"renamed":  []byte("name: renamed\nid: seeded:b\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n"),
	} {
		_, err := r2.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
			_, err := doc.PutLayer(name, entry)
			return err
		})
		if !apperr.Is(err, apperr.Conflict) {
			t.Errorf("a layer on the marked id while it is truncated: %v, want a conflict", err)
		}
	}
	// Removed: the name may be used again.
	if _, err := r.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		if !doc.Unmark("seeded:b", "seeded:b") {
			t.Error("no mark to remove")
		}
		_, err := doc.PutLayer("seeded:b", layerEntry("seeded:b", "image/png"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Catalogue().Deleting("seeded:b"); ok {
		t.Error("mark still there")
	}
	if _, err := layer.Parse([]byte(fileLayers+"deleting: [{name: x, id: x}]\n"), "layers.yaml"); err == nil {
		t.Error("a layer file with deletion marks was accepted")
	}
}
