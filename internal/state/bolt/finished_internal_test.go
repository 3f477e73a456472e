package bolt

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/task"
)

func ids(ts []task.Task) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// TestFinishedIndexConvertedAndOrdered: a store written by an older
// version (finished tasks in an id -> time bucket) is converted at Open;
// List then lists exactly the tasks finished since the time asked, and a
// finish forgets those finished more than finishedKeep before it.
func TestFinishedIndexConvertedAndOrdered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	s, err := openAll(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, []task.Lane{{End: 1, Tiles: 1}, {End: 1, Tiles: 1}, {End: 1, Tiles: 1}, {End: 1, Tiles: 1}}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Promote(ctx, 4, nil, t0); err != nil {
		t.Fatal(err)
	}
	// Tasks 1, 2 and 3 finished at t0+3s, t0+1s and t0+2s; 4 runs. Then
	// the finished index as an older version kept it.
	for i, at := range []int{3, 1, 2} {
		if _, err := s.Finish(ctx, int64(i+1), task.Aborted, t0.Add(time.Duration(at)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bucketFinishedAt); err != nil {
			return err
		}
		old, err := tx.CreateBucket(bucketFinished)
		if err != nil {
			return err
		}
		for i, at := range []int{3, 1, 2} {
			if err := old.Put(itob(int64(i+1)), itob(t0.Add(time.Duration(at)*time.Second).UnixNano())); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = openAll(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketFinished) != nil {
			t.Error("the older finished bucket is still there after Open")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		since int
		want  []int64
	}{{0, []int64{1, 2, 3, 4}}, {2, []int64{1, 3, 4}}, {3, []int64{1, 4}}, {4, []int64{4}}} {
		got, err := s.List(ctx, t0.Add(time.Duration(c.since)*time.Second))
		if err != nil || !slices.Equal(ids(got), c.want) {
			t.Errorf("List(t0+%ds): %v, %v; want %v", c.since, ids(got), err, c.want)
		}
	}
	// Task 4 finishing finishedKeep and 2.5 s after t0 forgets tasks 2 and 3
	// (finished more than finishedKeep before), not task 1.
	if _, err := s.Finish(ctx, 4, task.Aborted, t0.Add(finishedKeep+2500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	got, err := s.List(ctx, t0)
	if err != nil || !slices.Equal(ids(got), []int64{1, 4}) {
		t.Fatalf("List(t0) after the forgetting finish: %v, %v; want [1 4]", ids(got), err)
	}
}
