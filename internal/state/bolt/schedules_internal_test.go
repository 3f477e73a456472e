package bolt

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/schedule"
	"tilecache/internal/schedule/scheduletest"
)

func TestScheduleConformance(t *testing.T) {
	scheduletest.Run(t, func(t *testing.T) scheduletest.Stores {
		s, err := openAll(filepath.Join(t.TempDir(), "tasks.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, func(t *testing.T, st scheduletest.Stores, name string) {
		// A value cut short, as a write of another version or a hand edit
		// could leave it.
		err := st.(*adapters).db.Update(func(tx *bbolt.Tx) error {
			return tx.Bucket(bucketSched).Put([]byte(name), []byte(`{"name":"`+name+`","next":`))
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestNextRunsOfSchedulesSavedBefore: a schedule saved without its entry
// in the next-time bucket (by an earlier version) is listed with the next
// time its value holds, and one whose value is damaged too is reported.
func TestNextRunsOfSchedulesSavedBefore(t *testing.T) {
	s, err := openAll(filepath.Join(t.TempDir(), "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, name := range []string{"old", "old-bad", "new"} {
		sc, err := schedule.New(name, "0 * * * *", "", "l", json.RawMessage(`{"seedRequest":{}}`), t0)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateSchedule(t.Context(), sc); err != nil {
			t.Fatal(err)
		}
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range []string{"old", "old-bad"} {
			if err := tx.Bucket(bucketSchedNext).Delete([]byte(name)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketSched).Put([]byte("old-bad"), []byte(`{"next":1}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	got, bad, err := s.NextRuns(t.Context())
	want := time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)
	if err != nil || len(got) != 2 || got[0].Name != "new" || got[1].Name != "old" || !got[0].Next.Equal(want) || !got[1].Next.Equal(want) ||
		len(bad) != 1 || bad[0].Name != "old-bad" || !errors.Is(bad[0].Err, schedule.ErrUnreadable) {
		t.Fatalf("got %+v, unreadable %+v, %v; want new and old due %v, old-bad unreadable", got, bad, err, want)
	}
}
