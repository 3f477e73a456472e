package metatile

// The size lookup on its own: a writer built on an in-memory tile store
// that counts its requests, going through a plan as a truncate lane
// would.

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/grid"
	"tilecache/internal/tilestore"
)

// memTiles is a tile store of sizes (and MD5s, where sums has one) in
// memory that counts the requests made of it; failList makes every
// listing fail.
type memTiles struct {
	mu       sync.Mutex
	sizes    map[string]int64
	sums     map[string]string
	lists    []string // prefixes listed
	stats    int
	failList error
}

func (m *memTiles) Put(context.Context, string, []byte, tilestore.Meta) error {
	return errors.New("memTiles: Put is not expected here")
}

func (m *memTiles) Delete(context.Context, []string) (int, error) {
	return 0, errors.New("memTiles: Delete is not expected here")
}

func (m *memTiles) Stat(_ context.Context, key string) (tilestore.Object, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats++
	size, ok := m.sizes[key]
	return tilestore.Object{Key: key, Size: size, MD5: m.sums[key]}, ok, nil
}

func (m *memTiles) List(_ context.Context, prefix string, fn func(tilestore.Object) error) error {
	m.mu.Lock()
	m.lists = append(m.lists, prefix)
	keys := slices.Sorted(maps.Keys(m.sizes))
	sizes, sums := maps.Clone(m.sizes), maps.Clone(m.sums)
	fail := m.failList
	m.mu.Unlock()
	if fail != nil {
		return fail
	}
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			if err := fn(tilestore.Object{Key: k, Size: sizes[k], MD5: sums[k]}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *memTiles) counts() (lists, stats int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.lists), m.stats
}

// lane is a writer and the cursor of its owner in a plan (what it still
// visits bounds its listings).
type lane struct {
	*Writer
	plan        *grid.Plan
	cursor, end int64
}

// sizesLane returns a writer of level z of EPSG:4326 (1×1 metatiles,
// numbered by columns) on store, its owner at the start of the plan.
func sizesLane(t *testing.T, store *memTiles, z int) *lane {
	t.Helper()
	gs, ok := grid.Builtin("EPSG:4326")
	if !ok {
		t.Fatal("no EPSG:4326")
	}
	return sizesLaneOf(t, store, gs.GridRange(z))
}

// sizesLaneOf is sizesLane truncating the tiles of r alone.
func sizesLaneOf(t *testing.T, store *memTiles, r grid.TileRange) *lane {
	t.Helper()
	z := r.Z
	gs, ok := grid.Builtin("EPSG:4326")
	if !ok {
		t.Fatal("no EPSG:4326")
	}
	sub, err := grid.NewSubset(gs, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := grid.NewPlanOrdered(sub, gs.RangeExtent(r), z, z, 1, 1, grid.ByColumns)
	if err != nil {
		t.Fatal(err)
	}
	set := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, LayerID: "L1", Ext: "png"}
	ln := &lane{plan: plan, end: plan.Metatiles()}
	ln.Writer = &Writer{Tiles: store, PutConcurrency: 4, Subset: sub, Set: set,
		Ahead: func(z int) (grid.TileRange, bool) { return ln.plan.Ahead(z, ln.cursor, ln.end) }}
	return ln
}

// fill stores every n-th tile of a range of level z (sizes 100 + x + y).
func fill(store *memTiles, set tilestore.TileSet, r grid.TileRange, n int) {
	i := 0
	for x, y := range r.All() {
		if i%n == 0 {
			store.sizes[set.Key(r.Z, x, y)] = 100 + x + y
		}
		i++
	}
}

// refsOf returns the refs of the tiles of r.
func refsOf(set tilestore.TileSet, r grid.TileRange) []tileRef {
	var refs []tileRef
	for x, y := range r.All() {
		refs = append(refs, tileRef{z: r.Z, x: x, y: y, key: set.Key(r.Z, x, y)})
	}
	return refs
}

// checkSizes asks ln for the sizes of refs and compares them with store.
func checkSizes(t *testing.T, ln *lane, store *memTiles, refs []tileRef) {
	t.Helper()
	got, err := ln.lookup(t.Context(), refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range refs {
		want, ok := store.sizes[r.key]
		if !ok {
			want = -1
		}
		if got[i].size != want {
			t.Fatalf("size of %s: got %d, want %d", r.key, got[i].size, want)
		}
	}
}

func TestSizesListsASmallLevelOnce(t *testing.T) {
	store := &memTiles{sizes: map[string]int64{}}
	ln := sizesLane(t, store, 4) // 32×16 tiles
	fill(store, ln.Set, ln.Subset.CoverageRange(4), 3)
	for c := range int64(32) { // the lane goes down column after column
		checkSizes(t, ln, store, refsOf(ln.Set, grid.TileRange{Z: 4, MinX: c, MaxX: c, MinY: 0, MaxY: 15}))
		ln.cursor += 16
	}
	lists, stats := store.counts()
	// One listing per first digit of the columns: "0/" and 1…9.
	if lists != 10 || stats != 0 {
		t.Fatalf("%d listings and %d Stats, want 10 and 0 (one listing of the level by key groups)", lists, stats)
	}
}

func TestSizesListsEachColumnOfABigLevel(t *testing.T) {
	store := &memTiles{sizes: map[string]int64{}}
	ln := sizesLane(t, store, 8) // 512×256 tiles: too many to list whole
	fill(store, ln.Set, grid.TileRange{Z: 8, MinX: 0, MaxX: 3, MinY: 0, MaxY: 255}, 2)
	// Two batches in column 1, the second within what the first listed.
	checkSizes(t, ln, store, refsOf(ln.Set, grid.TileRange{Z: 8, MinX: 1, MaxX: 1, MinY: 0, MaxY: 99}))
	checkSizes(t, ln, store, refsOf(ln.Set, grid.TileRange{Z: 8, MinX: 1, MaxX: 1, MinY: 100, MaxY: 255}))
	lists, stats := store.counts()
	if lists != 1 || stats != 0 {
		t.Fatalf("%d listings and %d Stats, want 1 and 0 (the column listed once, kept for the next batch)", lists, stats)
	}
	if store.lists[0] != ln.Set.LevelDir(8)+"1/" {
		t.Fatalf("listed %q, want the column's prefix %q", store.lists[0], ln.Set.LevelDir(8)+"1/")
	}
	// A lone tile of a column costs one Stat, not a listing.
	ln.cursor = ln.end - 1
	checkSizes(t, ln, store, refsOf(ln.Set, grid.TileRange{Z: 8, MinX: 511, MaxX: 511, MinY: 255, MaxY: 255}))
	if lists, stats := store.counts(); lists != 1 || stats != 1 {
		t.Fatalf("%d listings and %d Stats, want 1 and 1", lists, stats)
	}
}

// TestSizesTallColumns: a column taller than 1,000 rows is listed when the
// lane goes up enough of it for a listing to cost no more than a Stat per
// tile, even with every row stored, and looked up tile by tile when not.
func TestSizesTallColumns(t *testing.T) {
	r := grid.TileRange{Z: 11, MinX: 7, MaxX: 8, MinY: 40, MaxY: 49}
	t.Run("whole columns ahead", func(t *testing.T) {
		store := &memTiles{sizes: map[string]int64{}}
		ln := sizesLane(t, store, 11) // 4096×2048
		fill(store, ln.Set, r, 4)
		checkSizes(t, ln, store, refsOf(ln.Set, r))
		if lists, stats := store.counts(); lists != 2 || stats != 0 {
			t.Fatalf("%d listings and %d Stats, want 2 and 0", lists, stats)
		}
	})
	t.Run("two rows ahead", func(t *testing.T) {
		store := &memTiles{sizes: map[string]int64{}}
		few := grid.TileRange{Z: 11, MinX: 7, MaxX: 8, MinY: 40, MaxY: 41}
		ln := sizesLaneOf(t, store, few)
		fill(store, ln.Set, r, 4)
		checkSizes(t, ln, store, refsOf(ln.Set, few))
		if lists, stats := store.counts(); lists != 0 || stats != 4 {
			t.Fatalf("%d listings and %d Stats, want 0 and 4", lists, stats)
		}
	})
}

func TestSizesRandomBatchesMatchTheStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, z := range []int{2, 5, 8, 11} {
		store := &memTiles{sizes: map[string]int64{}}
		ln := sizesLane(t, store, z)
		full := ln.Subset.CoverageRange(z)
		full.MaxX = min(full.MaxX, 24) // the first columns: enough for every way
		full.MaxY = min(full.MaxY, 1100)
		fill(store, ln.Set, full, 1+rng.IntN(5))
		for range 20 {
			var refs []tileRef
			for range 1 + rng.IntN(30) {
				x, y := full.MinX+rng.Int64N(full.MaxX-full.MinX+1), full.MinY+rng.Int64N(full.MaxY-full.MinY+1)
				refs = append(refs, tileRef{z: z, x: x, y: y, key: ln.Set.Key(z, x, y)})
			}
			checkSizes(t, ln, store, refs)
		}
	}
}

func TestSizesListingFailureIsAStorageError(t *testing.T) {
	store := &memTiles{sizes: map[string]int64{}, failList: errors.New("connection reset")}
	ln := sizesLane(t, store, 8)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := ln.lookup(ctx, refsOf(ln.Set, grid.TileRange{Z: 8, MinX: 1, MaxX: 1, MinY: 0, MaxY: 9}))
	if _, ok := errors.AsType[*StorageError](err); !ok || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("got %v, want a storage error naming the cause", err)
	}
}

// TestLookupCarriesMD5s: what a reseed compares its tiles with comes from
// the same requests as the sizes, whichever way they are learnt (a listing
// of the level or of a column, or a Stat): a tile's MD5 where the store
// reports one, unknown (never matching) where it does not.
func TestLookupCarriesMD5s(t *testing.T) {
	for _, tt := range []struct {
		name   string
		z      int
		r      grid.TileRange
		lists  int
		stats  int
		cursor int64
	}{
		{"level listing", 4, grid.TileRange{Z: 4, MinX: 0, MaxX: 0, MinY: 0, MaxY: 15}, 10, 0, 0},
		{"column listing", 8, grid.TileRange{Z: 8, MinX: 1, MaxX: 1, MinY: 0, MaxY: 255}, 1, 0, 256},
		{"one Stat per tile", 11, grid.TileRange{Z: 11, MinX: 7, MaxX: 8, MinY: 40, MaxY: 41}, 0, 4, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &memTiles{sizes: map[string]int64{}, sums: map[string]string{}}
			ln := sizesLane(t, store, tt.z)
			if tt.stats > 0 {
				ln = sizesLaneOf(t, store, tt.r) // the lane visits these rows alone
			}
			ln.cursor = tt.cursor
			contents := map[string][]byte{}
			i := 0
			for x, y := range tt.r.All() {
				k := ln.Set.Key(tt.z, x, y)
				data := []byte(k)
				switch i % 3 {
				case 0: // stored, MD5 known
					store.sizes[k], store.sums[k] = int64(len(data)), tilestore.ContentMD5(data)
				case 1: // stored, MD5 unknown
					store.sizes[k] = int64(len(data))
				}
				contents[k] = data
				i++
			}
			refs := refsOf(ln.Set, tt.r)
			got, err := ln.lookup(t.Context(), refs)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range refs {
				_, stored := store.sizes[r.key]
				_, summed := store.sums[r.key]
				if st := got[i]; st.summed != summed || (st.size >= 0) != stored || st.holds(contents[r.key]) != summed {
					t.Errorf("%s: got %+v, want stored %v, MD5 known %v", r.key, st, stored, summed)
				}
				if got[i].holds([]byte("other content")) {
					t.Errorf("%s: holds other content", r.key)
				}
			}
			if lists, stats := store.counts(); lists != tt.lists || stats != tt.stats {
				t.Errorf("%d listings and %d Stats, want %d and %d", lists, stats, tt.lists, tt.stats)
			}
		})
	}
}
