package layer_test

// The registry on a real configuration store (bbolt): which of the layer
// file and the store wins, the first start's copy, refreshes bounded to
// one version read per period, versioned updates that lose no concurrent
// change, and validation before a save.

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
	"tilecache/internal/state/bolt"
)

const fileLayers = `gridSets:
  - id: FileGrid
    epsg: 4326
    extent: [-180, -90, 180, 90]
    resolutions: [0.703125, 0.3515625]
  - id: Seeded
    managedBy: store
    epsg: 4326
    extent: [-180, -90, 180, 90]
    resolutions: [0.3515625]
layers:
  - name: file:a
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
  - name: seeded:b
    managedBy: store
    gridSubsets: [{gridSet: Seeded}]
    formats: [image/png]
    source: {type: testpattern}
`

func layerEntry(name, formats string) []byte {
	return fmt.Appendf(nil, "name: %s\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [%s]\nsource: {type: testpattern}\n", name, formats)
}

// countingStore counts the version reads of a store.
type countingStore struct {
	layer.ConfigStore
	versionReads atomic.Int64
}

func (c *countingStore) ConfigVersion(ctx context.Context) (int64, error) {
	c.versionReads.Add(1)
	return c.ConfigStore.ConfigVersion(ctx)
}

func openStore(t *testing.T) *bolt.Config {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db.Config()
}

func open(t *testing.T, file string, store layer.ConfigStore, every time.Duration) *layer.Registry {
	t.Helper()
	r, err := layer.OpenRegistry(t.Context(), []byte(file), "layers.yaml", store, every, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRegistryFirstStartAndManagement(t *testing.T) {
	store := openStore(t)
	r := open(t, fileLayers, store, time.Hour)
	c := r.Catalogue()
	if got := c.Names(); !slices.Equal(got, []string{"file:a", "seeded:b"}) {
		t.Fatalf("layers %v", got)
	}
	a, _ := c.Layer("file:a")
	b, _ := c.Layer("seeded:b")
	if a.Managed != layer.ManagedByFile || b.Managed != layer.ManagedByStore {
		t.Errorf("managed: file:a %q, seeded:b %q", a.Managed, b.Managed)
	}
	if _, info, _ := c.GridSet("Seeded"); info.Managed != layer.ManagedByStore {
		t.Errorf("grid set Seeded is managed by %q", info.Managed)
	}
	if _, info, _ := c.GridSet("FileGrid"); info.Managed != layer.ManagedByFile {
		t.Errorf("grid set FileGrid is managed by %q", info.Managed)
	}
	// The first start copied the store-managed entries, once.
	st, err := store.Config(t.Context())
	if err != nil || st.Version != 1 || !strings.Contains(string(st.Doc), "seeded:b") || strings.Contains(string(st.Doc), "file:a") {
		t.Fatalf("stored after the first start: version %d %v\n%s", st.Version, err, st.Doc)
	}
	if c.Version() != 1 {
		t.Errorf("catalogue version %d, want 1", c.Version())
	}

	// A deleted store-managed layer stays deleted at the next start.
	if _, err := r.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		doc.DeleteLayer("seeded:b")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Layer("seeded:b"); ok {
		t.Error("seeded:b still in the live catalogue after its deletion")
	}
	r2 := open(t, fileLayers, store, time.Hour)
	if _, ok := r2.Catalogue().Layer("seeded:b"); ok {
		t.Error("seeded:b came back at the next start")
	}

	// A stored layer named like a file-managed one: the file's is used.
	if _, err := r.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		_, err := doc.PutLayer("file:a", layerEntry("file:a", "image/jpeg"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if l, _ := c.Layer("file:a"); !slices.Equal(l.Formats, []string{"image/png"}) || l.Managed != layer.ManagedByFile {
		t.Errorf("file:a is %v managed by %s, want the file's", l.Formats, l.Managed)
	}
}

func TestRegistryRefreshAndSnapshots(t *testing.T) {
	store := &countingStore{ConfigStore: openStore(t)}
	const every = 200 * time.Millisecond
	r1 := open(t, fileLayers, store, every)
	r2 := open(t, fileLayers, store, every)
	snap := r2.Catalogue().Snapshot()
	if _, err := r1.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		_, err := doc.PutLayer("new:c", layerEntry("new:c", "image/png"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	store.versionReads.Store(0)
	// r2 sees it within the period, reading the version at most once per
	// period however often it is asked: asked every millisecond of a
	// virtual clock.
	start := time.Now()
	clock := start
	r2.SetClock(func() time.Time { return clock })
	elapsed := func() time.Duration { return clock.Sub(start) }
	calls := 0
	for elapsed() < 5*every {
		calls++
		clock = clock.Add(time.Millisecond)
		if _, err := r2.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, ok := r2.Catalogue().Layer("new:c"); ok {
			break
		}
	}
	if _, ok := r2.Catalogue().Layer("new:c"); !ok {
		t.Fatalf("r2 did not see the change within %v", 5*every)
	}
	seen := elapsed()
	for elapsed() < 3*every {
		calls++
		clock = clock.Add(time.Millisecond)
		r2.Refresh(t.Context())
	}
	reads := store.versionReads.Load()
	t.Logf("seen after %v; %d Refresh calls made %d version reads in %v (one per %v)", seen, calls, reads, elapsed(), every)
	if seen > 2*every {
		t.Errorf("seen after %v, more than the period %v allows", seen, every)
	}
	if limit := int64(elapsed()/every) + 1; reads > limit {
		t.Errorf("%d version reads in %v, want at most %d", reads, elapsed(), limit)
	}
	// A snapshot taken before keeps its contents.
	if _, ok := snap.Layer("new:c"); ok {
		t.Error("a snapshot taken before the change sees it")
	}
}

func TestRegistryConcurrentUpdatesLoseNothing(t *testing.T) {
	store := openStore(t)
	regs := []*layer.Registry{open(t, fileLayers, store, time.Hour), open(t, fileLayers, store, time.Hour)}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("c:%d", i)
			_, err := regs[i%2].Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
				_, err := doc.PutLayer(name, layerEntry(name, "image/png"))
				return err
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			// Eight writers on one document may exhaust an update's rounds:
			// a Conflict the client retries, never a lost change.
			if !apperr.Is(err, apperr.Conflict) {
				t.Fatal(err)
			}
			failed++
		}
	}
	st, err := store.Config(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := layer.ParseConfig(st.Doc)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, n := range cfg.Layers() {
		if strings.HasPrefix(n, "c:") {
			got++
		}
	}
	if got != 8-failed || st.Version != int64(1+8-failed) {
		t.Errorf("%d layers stored at version %d with %d updates refused, want %d at version %d", got, st.Version, failed, 8-failed, 1+8-failed)
	}
}

func TestRegistryRefusesInvalidChanges(t *testing.T) {
	store := openStore(t)
	r := open(t, fileLayers, store, time.Hour)
	before, _ := store.Config(t.Context())
	for name, edit := range map[string]func(doc *layer.Config, _ *layer.Catalogue) error{
		"unknown grid set": func(doc *layer.Config, _ *layer.Catalogue) error {
			_, err := doc.PutLayer("x", []byte("name: x\ngridSubsets: [{gridSet: Nowhere}]\nformats: [image/png]\nsource: {type: testpattern}\n"))
			return err
		},
		"id of another layer": func(doc *layer.Config, _ *layer.Catalogue) error {
			_, err := doc.PutLayer("y", []byte("name: y\nid: file:a\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n"))
			return err
		},
		"grid set in use removed": func(doc *layer.Config, _ *layer.Catalogue) error {
			doc.DeleteGridSet("Seeded")
			return nil
		},
	} {
		if _, err := r.Update(t.Context(), edit); !apperr.Is(err, apperr.Invalid) {
			t.Errorf("%s: got %v, want Invalid", name, err)
		}
	}
	r.Validate(func(c *layer.Catalogue) error {
		if _, ok := c.Layer("vetoed"); ok {
			return fmt.Errorf("layer vetoed has no source")
		}
		return nil
	})
	_, err := r.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		_, err := doc.PutLayer("vetoed", layerEntry("vetoed", "image/png"))
		return err
	})
	if !apperr.Is(err, apperr.Invalid) || !strings.Contains(err.Error(), "vetoed has no source") {
		t.Errorf("a vetoed change: %v", err)
	}
	if after, _ := store.Config(t.Context()); after.Version != before.Version {
		t.Errorf("refused changes saved: version %d → %d", before.Version, after.Version)
	}
}

func TestDocumentKeepsADefinition(t *testing.T) {
	c, err := layer.Parse([]byte(fileLayers), "layers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, ok := c.Document("seeded:b")
	if !ok {
		t.Fatal("no document")
	}
	l, err := layer.ParseDefinition(doc, "seeded:b")
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	orig, _ := c.Layer("seeded:b")
	if l.Version != orig.Version || l.Subsets[0].GridSet.ID != "Seeded" {
		t.Errorf("read back: version %s (was %s), grid set %s", l.Version, orig.Version, l.Subsets[0].GridSet.ID)
	}
	if strings.Contains(string(doc), "file:a") || strings.Contains(string(doc), "FileGrid") {
		t.Errorf("the document holds more than the layer and its grid sets:\n%s", doc)
	}
}
