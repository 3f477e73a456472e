package bolt_test

import (
	"path/filepath"
	"testing"
	"time"

	"tilecache/internal/state/bolt"
	"tilecache/internal/task"
	"tilecache/internal/task/tasktest"
)

// adapters is every adapter in one file as one value, for the suites that
// use several ports of one file (tasktest's usage deltas through
// checkpoints, scheduletest's ticker reading tasks). Schedules and Config
// are embedded under other names: a field called Schedules or Config would
// hide the method of that name.
type adapters struct {
	db *bolt.DB
	*bolt.Tasks
	*bolt.Usage
	*schedulesPort
	*configPort
	*bolt.Claims
}

type (
	schedulesPort = bolt.Schedules
	configPort    = bolt.Config
)

// openAll opens the file at path and returns its adapters.
func openAll(path string) (*adapters, error) {
	d, err := bolt.Open(path)
	if err != nil {
		return nil, err
	}
	return &adapters{d, d.Tasks(), d.Usage(), d.Schedules(), d.Config(), d.Claims()}, nil
}

func (a *adapters) Close() error { return a.db.Close() }

func newStore(t *testing.T) task.Store {
	t.Helper()
	s, err := openAll(filepath.Join(t.TempDir(), "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) { tasktest.Run(t, newStore) }

func TestSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	now := time.Now()
	s, err := openAll(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(t.Context(), task.Job{Header: task.Header{Layer: "a"}}, []task.Lane{{Start: 0, End: 4, Tiles: 16}, {Start: 4, End: 8, Tiles: 16}}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Promote(t.Context(), 1, nil, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 2, Tiles: 8}, now); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = openAll(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Get(t.Context(), 1)
	if err != nil || got.Status != task.Running || got.Cursor != 2 || got.Done != 8 {
		t.Fatalf("after reopen: got %+v, %v; want RUNNING at 2 with 8 done", got, err)
	}
	// The pool is still taken by task 1, and the sequence continues.
	if p, _ := s.Promote(t.Context(), 1, nil, now); len(p) != 0 {
		t.Fatalf("got %d promoted, want 0", len(p))
	}
	_, ts, err := s.Create(t.Context(), task.Job{Header: task.Header{Layer: "a"}}, []task.Lane{{Start: 0, End: 1, Tiles: 1}}, now)
	if err != nil || ts[0].ID != 3 {
		t.Fatalf("got %+v, %v; want id 3", ts, err)
	}
}
