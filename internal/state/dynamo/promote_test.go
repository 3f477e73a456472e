package dynamo

import (
	"testing"
	"time"

	"tilecache/internal/state/dynamo/dynamotest"
	"tilecache/internal/task"
)

// TestPromoteBehindFullCapWrites dispatches again and again while lanes
// wait behind their layer's full cap, as every worker's sweep does: the
// waiting lanes must cost no "promote task" writes (a transaction refused
// by the cap's condition costs its three), while another layer's lane is
// still promoted and a freed slot is taken at once.
func TestPromoteBehindFullCapWrites(t *testing.T) {
	dynamotest.Client(t)
	s := newShared(t).store(t)
	ctx := t.Context()
	now := time.Now()
	const capA, waits = 2, 20
	laneCap := func(layer string) int {
		if layer == "a" {
			return capA
		}
		return 0
	}
	promoteWrites := func() int64 { return s.tbl.WritesByOp()["promote task"] }
	promote := func(want int) []task.Task {
		t.Helper()
		got, err := s.Promote(ctx, 100, laneCap, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != want {
			t.Fatalf("promoted %d tasks (%+v), want %d", len(got), got, want)
		}
		return got
	}
	ja, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, lanes(2+8), now) // 8 lanes wait behind the cap
	if err != nil {
		t.Fatal(err)
	}
	first := promote(capA)
	if w := promoteWrites(); w != capA*3 {
		t.Fatalf("promoting %d lanes wrote %d, want %d", capA, w, capA*3)
	}
	for range waits {
		promote(0)
	}
	if w := promoteWrites() - capA*3; w != 0 {
		t.Fatalf("%d dispatches with the cap full wrote %d promote writes (%.1f each), want 0", waits, w, float64(w)/waits)
	}
	// Another layer's lane behind the waiting ones is promoted.
	jb, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "b"}}, lanes(1), now)
	if err != nil {
		t.Fatal(err)
	}
	if got := promote(1); got[0].ID != jb.ID || got[0].Status != task.Running {
		t.Fatalf("promoted %+v, want task %d RUNNING", got[0], jb.ID)
	}
	if w := promoteWrites() - capA*3; w != 3 {
		t.Fatalf("promoting layer b's lane wrote %d promote writes, want 3", w)
	}
	// An ended lane frees a slot of the cap: the next waiting lane takes it.
	if _, err := s.Finish(ctx, first[0].ID, task.Aborted, now); err != nil {
		t.Fatal(err)
	}
	if got := promote(1); got[0].ID != ja.ID+capA || got[0].Layer != "a" {
		t.Fatalf("promoted %+v, want task %d of layer a", got[0], ja.ID+capA)
	}
	for range waits {
		promote(0)
	}
	if w := promoteWrites() - capA*3; w != 6 {
		t.Fatalf("after the freed slot was taken: %d promote writes, want 6 (layer b's lane and the freed slot)", w)
	}
}
