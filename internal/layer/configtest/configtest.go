// Package configtest is the conformance suite every layer.ConfigStore must
// pass: versions counting the saves from 0, documents kept byte for byte
// (up to layer.MaxStoredConfig of YAML), a save that is a compare-and-set
// of the version, and nothing stored by a save refused.
package configtest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
)

// doc is a small layer file document.
const doc = "layers:\n  - name: topp:states\n    mimeFormats: [image/png]\n"

// Harness is what every test of the suite runs against.
type Harness struct {
	NewStore func(t *testing.T) layer.ConfigStore
}

// Test is one behaviour of the suite.
type Test struct {
	Name string
	Run  func(t *testing.T, h Harness)
}

// Tests lists the suite's behaviours, in the order Run runs them.
var Tests = []Test{
	{"Empty", testEmpty},
	{"SaveAndRead", testSaveAndRead},
	{"StaleVersionConflicts", testStaleVersionConflicts},
	{"SuccessiveSaves", testSuccessiveSaves},
	{"LargeDocument", testLargeDocument},
	{"TooLarge", testTooLarge},
	{"RegistrySkipsConflictingEntries", testRegistrySkipsConflictingEntries},
	{"ConcurrentSavers", testConcurrentSavers},
}

// Run runs the suite, each behaviour a subtest of its name; newStore must
// return a fresh, empty store per call.
func Run(t *testing.T, newStore func(t *testing.T) layer.ConfigStore) {
	h := Harness{NewStore: newStore}
	for _, tc := range Tests {
		t.Run(tc.Name, func(t *testing.T) { tc.Run(t, h) })
	}
}

func want(t *testing.T, s layer.ConfigStore, version int64, doc []byte) {
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

func save(t *testing.T, s layer.ConfigStore, expect int64, doc []byte) {
	t.Helper()
	v, err := s.SaveConfig(t.Context(), expect, doc)
	if err != nil || v != expect+1 {
		t.Fatalf("SaveConfig(%d, %d bytes): got %d, %v; want %d", expect, len(doc), v, err, expect+1)
	}
}

func wantKind(t *testing.T, err error, k apperr.Kind) {
	t.Helper()
	if got := apperr.KindOf(err); err == nil || got != k {
		t.Fatalf("got error %v (kind %v), want kind %v", err, got, k)
	}
}

func testEmpty(t *testing.T, h Harness) {
	s := h.NewStore(t)
	got, err := s.Config(t.Context())
	if err != nil || got.Version != 0 || len(got.Doc) != 0 {
		t.Fatalf("empty store: got version %d, %q, %v; want version 0 and no document", got.Version, got.Doc, err)
	}
	if v, err := s.ConfigVersion(t.Context()); err != nil || v != 0 {
		t.Fatalf("empty store: ConfigVersion got %d, %v; want 0", v, err)
	}
}

func testSaveAndRead(t *testing.T, h Harness) {
	s := h.NewStore(t)
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
}

func testStaleVersionConflicts(t *testing.T, h Harness) {
	s := h.NewStore(t)
	save(t, s, 0, []byte(doc))
	for _, expect := range []int64{0, 5, -1} {
		_, err := s.SaveConfig(t.Context(), expect, []byte("layers: []\n"))
		wantKind(t, err, apperr.Conflict)
		want(t, s, 1, []byte(doc))
	}
	// A conflict on the empty store stores nothing either.
	e := h.NewStore(t)
	_, err := e.SaveConfig(t.Context(), 1, []byte(doc))
	wantKind(t, err, apperr.Conflict)
	want(t, e, 0, nil)
}

func testSuccessiveSaves(t *testing.T, h Harness) {
	s := h.NewStore(t)
	for v := range int64(3) {
		d := fmt.Appendf(nil, "%s# save %d\n", doc, v+1)
		save(t, s, v, d)
		want(t, s, v+1, d)
	}
	// An empty document is a document.
	save(t, s, 3, []byte{})
	want(t, s, 4, nil)
}

func testLargeDocument(t *testing.T, h Harness) {
	s := h.NewStore(t)
	big := largeDoc(3 << 20)
	save(t, s, 0, big)
	want(t, s, 1, big)
	big2 := largeDoc(layer.MaxStoredConfig)
	save(t, s, 1, big2)
	want(t, s, 2, big2)
}

func testTooLarge(t *testing.T, h Harness) {
	s := h.NewStore(t)
	save(t, s, 0, []byte(doc))
	_, err := s.SaveConfig(t.Context(), 1, largeDoc(layer.MaxStoredConfig+1))
	wantKind(t, err, apperr.Invalid)
	want(t, s, 1, []byte(doc))
	e := h.NewStore(t)
	_, err = e.SaveConfig(t.Context(), 0, largeDoc(layer.MaxStoredConfig+1))
	wantKind(t, err, apperr.Invalid)
	want(t, e, 0, nil)
}

func testRegistrySkipsConflictingEntries(t *testing.T, h Harness) {
	registrySkipsConflictingEntries(t, h.NewStore(t))
}

func testConcurrentSavers(t *testing.T, h Harness) {
	s := h.NewStore(t)
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

// countingStore counts the reads of a store's whole document.
type countingStore struct {
	layer.ConfigStore
	docReads atomic.Int64
}

func (c *countingStore) Config(ctx context.Context) (layer.StoredConfig, error) {
	c.docReads.Add(1)
	return c.ConfigStore.Config(ctx)
}

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// registrySkipsConflictingEntries: a layer file changed so that some
// stored entries no longer fit it skips those entries one by one (each
// named in a warning) and keeps the rest; a stored version that cannot be
// loaded at all is not read again every period.
func registrySkipsConflictingEntries(t *testing.T, s layer.ConfigStore) {
	const fileV1 = `gridSets:
  - id: FileGrid
    epsg: 4326
    extent: [-180, -90, 180, 90]
    resolutions: [0.703125, 0.3515625]
layers:
  - name: file:a
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
`
	// The next layer file drops FileGrid and gives a layer the id x.
	const fileV2 = `layers:
  - name: file:a
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
  - name: file:x
    id: x
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
`
	entry := func(name, id, gridSet string) []byte {
		return fmt.Appendf(nil, "name: %s\nid: %s\ngridSubsets: [{gridSet: %s}]\nformats: [image/png]\nsource: {type: testpattern}\n", name, id, gridSet)
	}
	quiet := slog.New(slog.DiscardHandler)
	r1, err := layer.OpenRegistry(t.Context(), []byte(fileV1), "layers.yaml", s, time.Hour, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r1.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		for _, e := range [][3]string{{"s:ok", "ok", "EPSG:4326"}, {"s:grid", "grid", "FileGrid"}, {"s:id", "x", "EPSG:4326"}} {
			if _, err := doc.PutLayer(e[0], entry(e[0], e[1], e[2])); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	counting := &countingStore{ConfigStore: s}
	var logs syncBuffer
	const every = 20 * time.Millisecond
	r2, err := layer.OpenRegistry(t.Context(), []byte(fileV2), "layers.yaml", counting, every, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	c := r2.Catalogue()
	if got, want := c.Names(), []string{"file:a", "file:x", "s:ok"}; !slices.Equal(got, want) {
		t.Fatalf("layers with the changed file: %v, want %v (the entries that fit kept)\n%s", got, want, logs.String())
	}
	for _, name := range []string{"s:grid", "s:id"} {
		if !strings.Contains(logs.String(), "level=WARN msg=\"layer \\\""+name+"\\\" of the stored configuration") {
			t.Errorf("no warning names the skipped layer %s:\n%s", name, logs.String())
		}
	}

	// The skipped entries are the stored configuration's version, loaded:
	// the periods read the version alone.
	reads := counting.docReads.Load()
	for start := time.Now(); time.Since(start) < 10*every; time.Sleep(every / 4) {
		if _, err := r2.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n := counting.docReads.Load() - reads; n != 0 {
		t.Errorf("%d whole-document reads in %v of refreshes with nothing changed, want 0", n, 10*every)
	}

	// A change is refused when it adds a conflict, and made when the
	// skipped entries stay as they were.
	_, err = r2.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		_, err := doc.PutLayer("s:x2", entry("s:x2", "x", "EPSG:4326"))
		return err
	})
	if !apperr.Is(err, apperr.Invalid) || !strings.Contains(err.Error(), "s:x2") {
		t.Errorf("a new layer with a file layer's id: %v, want an Invalid error naming it", err)
	}
	if _, err := r2.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		_, err := doc.PutLayer("s:new", entry("s:new", "new", "EPSG:4326"))
		return err
	}); err != nil {
		t.Fatalf("a change beside skipped entries: %v", err)
	}
	if _, ok := c.Layer("s:new"); !ok {
		t.Error("s:new not in the catalogue after its save")
	}

	// A stored document that cannot be read at all: the version that
	// failed is read once, not every period.
	v, err := s.ConfigVersion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveConfig(t.Context(), v, []byte("layers: [\n")); err != nil {
		t.Fatal(err)
	}
	reads = counting.docReads.Load()
	failures := 0
	for start := time.Now(); time.Since(start) < 10*every; time.Sleep(every / 4) {
		if _, err := r2.Refresh(t.Context()); err != nil {
			failures++
		}
	}
	if n := counting.docReads.Load() - reads; n != 1 || failures != 1 {
		t.Errorf("a version that fails to load: %d whole-document reads and %d failed refreshes in %v, want 1 and 1", n, failures, 10*every)
	}
	if _, ok := c.Layer("s:ok"); !ok {
		t.Error("the catalogue lost s:ok when a later version failed to load")
	}
}
