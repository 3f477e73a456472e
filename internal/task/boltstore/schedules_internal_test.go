package boltstore

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"tilecache/internal/schedule/scheduletest"
)

func TestScheduleConformance(t *testing.T) {
	scheduletest.Run(t, func(t *testing.T) scheduletest.Stores {
		s, err := Open(filepath.Join(t.TempDir(), "tasks.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, func(t *testing.T, st scheduletest.Stores, name string) {
		// A value cut short, as a write of another version or a hand edit
		// could leave it.
		err := st.(*Store).db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketSched).Put([]byte(name), []byte(`{"name":"`+name+`","next":`))
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
