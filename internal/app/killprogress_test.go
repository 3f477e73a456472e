package app_test

import (
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/testenv"
)

// TestKilledTaskKeepsItsProgress: a task killed between checkpoints keeps
// the count its lane reached (the tiles it stored are stored): its row,
// and the finished task the console lists, say how far it got, not the
// last checkpoint's 0.
func TestKilledTaskKeepsItsProgress(t *testing.T) {
	t.Parallel()
	// Checkpoints 20 s apart: the kill comes before the first.
	a := apptest.Start(t, apptest.Options{Checkpoint: 20 * time.Second, Slice: time.Minute, SeedThreads: 1})
	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":1}}`)
	id := rows[0][3]
	var live int64
	testenv.Eventually(t, 20*time.Second, "the lane to process 10 tiles", func() bool {
		for _, r := range listRows(t, a, "/rest/seed.json") {
			if r[3] == id {
				live = r[0]
			}
		}
		return live >= 10
	})
	if tk, _ := a.Local.Tasks.Get(t.Context(), id); tk.Done != 0 {
		t.Fatalf("task %d checkpointed %d tiles before the kill; the test needs none", id, tk.Done)
	}
	kill(t, a, "/rest/seed", "running")
	var tk task.Task
	testenv.Eventually(t, 10*time.Second, "the killed lane to record its count", func() bool {
		tk, _ = a.Local.Tasks.Get(t.Context(), id)
		return tk.Done >= live
	})
	stored := int64(len(keys(t, a, "slow:world/")))
	if tk.Status != task.Aborted || !tk.Killed || tk.Done > tk.Total || tk.Done > stored {
		t.Errorf("killed task: %+v with %d tiles stored; want ABORTED, killed, at least %d and at most the %d stored", tk, stored, live, stored)
	}
	t.Logf("killed at %d tiles processed (%d seen live, %d stored)", tk.Done, live, stored)
}
