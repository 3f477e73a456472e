package seed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"tilecache/internal/task"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/filestore"
)

// countingTiles is a tile store that records the size of every Delete
// call, and fails the calls whose first key is in fail.
type countingTiles struct {
	tilestore.Store
	mu    sync.Mutex
	calls []int
	fail  map[string]bool
}

func (c *countingTiles) Delete(ctx context.Context, keys []string) (int, error) {
	c.mu.Lock()
	c.calls = append(c.calls, len(keys))
	failed := c.fail[keys[0]]
	c.mu.Unlock()
	if failed {
		return 0, errors.New("refused")
	}
	return c.Store.Delete(ctx, keys)
}

func storeWith(t *testing.T, keys []string) *countingTiles {
	t.Helper()
	fs, err := filestore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := fs.Put(t.Context(), k, []byte("x"), tilestore.Meta{ContentType: "image/png"}); err != nil {
			t.Fatal(err)
		}
	}
	return &countingTiles{Store: fs}
}

func keysUnder(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%sk%05d.png", prefix, i)
	}
	return keys
}

// TestDeleteKeysBatches: every delete by key reaches the store in calls
// of at most truncateBatch keys, and counts what they deleted, those of a
// failed call left out.
func TestDeleteKeysBatches(t *testing.T) {
	keys := keysUnder("a/", 2*truncateBatch+5)
	tiles := storeWith(t, keys)
	n, err := deleteKeys(t.Context(), tiles, keys)
	if err != nil || n != int64(len(keys)) {
		t.Fatalf("deleted %d, %v; want %d", n, err, len(keys))
	}
	slices.Sort(tiles.calls)
	if want := []int{5, truncateBatch, truncateBatch}; !slices.Equal(tiles.calls, want) {
		t.Errorf("Delete calls of %v keys, want %v", tiles.calls, want)
	}

	keys = keysUnder("b/", truncateBatch+1)
	tiles = storeWith(t, keys)
	tiles.fail = map[string]bool{keys[truncateBatch]: true}
	n, err = deleteKeys(t.Context(), tiles, keys)
	if err == nil || n != truncateBatch {
		t.Errorf("with a failed call: deleted %d, %v; want %d and the error", n, err, truncateBatch)
	}
}

// TestDeletePrefixPages: a prefix is deleted a page at a time in key
// order from the key after, each page handed on with last set on the
// final one; a stop ends it there, and only the prefix's keys go.
func TestDeletePrefixPages(t *testing.T) {
	keys := keysUnder("l/", 7)
	other := keysUnder("m/", 2)
	tiles := storeWith(t, append(slices.Clone(keys), other...))
	tr := &Truncation{tiles: tiles, log: slog.New(slog.DiscardHandler)}
	var pages [][]string
	var lasts []bool
	n, err := tr.deletePrefix(t.Context(), "l/", keys[0], 3, func(page []string, last bool) (bool, error) {
		pages, lasts = append(pages, page), append(lasts, last)
		return false, nil
	})
	if err != nil || n != 6 {
		t.Fatalf("deleted %d, %v; want the 6 keys after the first", n, err)
	}
	want := [][]string{keys[1:4], keys[4:7], {}}
	if len(pages) != len(want) || !slices.Equal(lasts, []bool{false, false, true}) {
		t.Fatalf("pages %v (last %v), want %v", pages, lasts, want)
	}
	for i := range want {
		if !slices.Equal(pages[i], want[i]) {
			t.Errorf("page %d: %v, want %v", i, pages[i], want[i])
		}
	}
	left, err := tr.listPage(t.Context(), "", "", 100)
	if err != nil || !slices.Equal(left, append([]string{keys[0]}, other...)) {
		t.Errorf("left %v, %v; want the first key and the other prefix's", left, err)
	}

	// A stop after the first page leaves the rest.
	n, err = tr.deletePrefix(t.Context(), "m/", "", 1, func([]string, bool) (bool, error) { return true, nil })
	if err != nil || n != 1 {
		t.Errorf("stopped: deleted %d, %v; want 1", n, err)
	}
}

// listedTasks is a task store whose List answers tasks (its other calls
// are not made here).
type listedTasks struct {
	task.Store
	tasks []task.Task
}

func (l listedTasks) List(context.Context, time.Time) ([]task.Task, error) { return l.tasks, nil }

// removals records RemoveLayer's calls (its other calls are not made here).
type removals struct {
	Usage
	dirty map[string]bool
}

func (r *removals) RemoveLayer(_ context.Context, layer string, dirty bool) error {
	r.dirty[layer] = dirty
	return nil
}

// TestRemovedMarksWhileAnotherTaskRuns: a truncation that emptied a
// layer's prefix removes its usage, left dirty exactly when a task of the
// layer other than the truncation's own is active (its next checkpoint
// may count tiles deleted here), for a mass truncation (no task of its
// own) and a deleted layer's (its task) alike.
func TestRemovedMarksWhileAnotherTaskRuns(t *testing.T) {
	tasks := listedTasks{tasks: []task.Task{
		{ID: 1, Layer: "busy", Status: task.Running},
		{ID: 2, Layer: "deleting", Status: task.Running}, // the deletion's own
		{ID: 3, Layer: "done", Status: task.Done},
	}}
	u := &removals{dirty: map[string]bool{}}
	tr := &Truncation{tasks: tasks, opts: Options{Usage: u}, log: slog.New(slog.DiscardHandler)}
	for _, c := range []struct {
		layer  string
		except int64
		dirty  bool
	}{{"busy", 0, true}, {"deleting", 2, false}, {"busy", 2, true}, {"done", 0, false}} {
		if err := tr.removed(t.Context(), c.layer, c.layer+"/", 1, c.except); err != nil {
			t.Fatal(err)
		}
		if got, ok := u.dirty[c.layer]; !ok || got != c.dirty {
			t.Errorf("layer %s (except task %d): removed %v, dirty %v; want dirty %v", c.layer, c.except, ok, got, c.dirty)
		}
	}
}
