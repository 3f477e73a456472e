package bolt

import (
	"path/filepath"
	"testing"
	"time"

	"tilecache/internal/task"
)

// TestPromoteBehindFullCapWritesNothing dispatches again and again while
// lanes wait behind their layer's full cap: no page of the file is written
// (a bbolt commit writes its meta page even when nothing changed), and a
// freed slot is still taken.
func TestPromoteBehindFullCapWritesNothing(t *testing.T) {
	a, err := openAll(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := t.Context()
	now := time.Now()
	laneCap := func(string) int { return 2 }
	ls := make([]task.Lane, 6)
	for i := range ls {
		ls[i] = task.Lane{Start: int64(i), End: int64(i) + 1, Tiles: 1}
	}
	j, _, err := a.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, ls, now)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := a.Promote(ctx, 10, laneCap, now); err != nil || len(p) != 2 {
		t.Fatalf("Promote: %d tasks, %v; want 2", len(p), err)
	}
	writes := func() int64 { st := a.db.Stats(); return st.TxStats.GetWrite() }
	before := writes()
	for range 20 {
		if p, err := a.Promote(ctx, 10, laneCap, now); err != nil || len(p) != 0 {
			t.Fatalf("Promote with the cap full: %d tasks, %v; want none", len(p), err)
		}
	}
	if w := writes() - before; w != 0 {
		t.Fatalf("20 dispatches with the cap full wrote %d pages, want 0", w)
	}
	if _, err := a.Finish(ctx, j.ID, task.Aborted, now); err != nil {
		t.Fatal(err)
	}
	if p, err := a.Promote(ctx, 10, laneCap, now); err != nil || len(p) != 1 || p[0].ID != j.ID+2 {
		t.Fatalf("Promote after a slot freed: %+v, %v; want task %d", p, err, j.ID+2)
	}
}
