package dynamo

import (
	"testing"
	"time"

	"tilecache/internal/quota"
	"tilecache/internal/state/dynamo/dynamotest"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// TestLostAnswersAreNotConflicts runs each conditional write of a lane's
// life with its first answer lost: the SDK's retry fails the condition the
// first attempt made true, and the store must recognise its own write.
func TestLostAnswersAreNotConflicts(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	ctx := t.Context()
	c, loser := dynamotest.LosingClient(t)
	s := all(New(c, sh.table, WithNamespace("lost/")))
	now := time.Now()
	if _, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a", Tiles: 30}}, lanes(2), now); err != nil {
		t.Fatal(err)
	}

	loser.Lose("TransactWriteItems", 1)
	p, err := s.Promote(ctx, 1, nil, now)
	if err != nil || len(p) != 1 || p[0].ID != 1 {
		t.Fatalf("Promote with its answer lost: %+v, %v; want task 1 promoted", p, err)
	}
	if n, err := s.Running(ctx); err != nil || n != 1 {
		t.Fatalf("running: %d, %v; want 1 (the pool counted once)", n, err)
	}

	loser.Lose("UpdateItem", 1)
	if tk, err := s.Acquire(ctx, 1, "w1", time.Minute, now); err != nil || tk.Owner != "w1" {
		t.Fatalf("Acquire with its answer lost: %+v, %v", tk, err)
	}

	loser.Lose("UpdateItem", 1)
	tk, err := s.Checkpoint(ctx, task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 5, Owner: "w1", Token: "cp1"}, now)
	if err != nil || tk.Cursor != 1 || tk.Done != 5 {
		t.Fatalf("Checkpoint with its answer lost: %+v, %v; want cursor 1, done 5", tk, err)
	}

	set := tilestore.SetName{Layer: "a", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}
	usage := []quota.PageDelta{{Page: quota.PageKey{Set: set, Z: 3}, Tiles: 5, Bytes: 5 * 4096}}
	loser.Lose("TransactWriteItems", 1)
	tk, err = s.Checkpoint(ctx, task.Checkpoint{ID: 1, From: 1, To: 2, Tiles: 5, Owner: "w1", Token: "cp2", Usage: usage}, now)
	if err != nil || tk.Cursor != 2 || tk.Done != 10 {
		t.Fatalf("Checkpoint with usage, its answer lost: %+v, %v; want cursor 2, done 10", tk, err)
	}
	ls, err := s.Layers(ctx)
	if err != nil || len(ls) != 1 || ls[0].Tiles != 5 || ls[0].Bytes != 5*4096 {
		t.Fatalf("usage after the lost answer: %+v, %v; want 5 tiles, %d bytes (counted once)", ls, err, 5*4096)
	}

	loser.Lose("TransactWriteItems", 1)
	if tk, err := s.Finish(ctx, 1, task.Done, now); err != nil || tk.Status != task.Done {
		t.Fatalf("Finish with its answer lost: %+v, %v", tk, err)
	}
	if n, err := s.Running(ctx); err != nil || n != 0 {
		t.Fatalf("running: %d, %v; want 0 (the thread freed once)", n, err)
	}
	loser.Lose("TransactWriteItems", 1)
	if before, err := s.Kill(ctx, 2, task.Pending, now); err != nil || before.Status != task.Pending {
		t.Fatalf("Kill with its answer lost: %+v, %v", before, err)
	}
	if got, _ := s.Get(ctx, 2); got.Status != task.Aborted || !got.Killed {
		t.Fatalf("task 2 after the kill: %+v", got)
	}
	if len(loser.Lost()) != 6 {
		t.Fatalf("lost %d answers (%v), want 6: the test did not inject what it says", len(loser.Lost()), loser.Lost())
	}
}
