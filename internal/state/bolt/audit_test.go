package bolt_test

import (
	"path/filepath"
	"testing"

	"tilecache/internal/audit"
	"tilecache/internal/audit/audittest"
	"tilecache/internal/state/bolt"
)

func TestAuditConformance(t *testing.T) {
	audittest.Run(t, func(t *testing.T) audit.Store {
		d, err := bolt.Open(filepath.Join(t.TempDir(), "tasks.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d.Audit(audittest.Retention)
	})
}

func BenchmarkAuditAppend(b *testing.B) {
	d, err := bolt.Open(filepath.Join(b.TempDir(), "tasks.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	audittest.BenchmarkAppend(b, d.Audit(audittest.Retention))
}

func BenchmarkAuditList(b *testing.B) {
	d, err := bolt.Open(filepath.Join(b.TempDir(), "tasks.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	audittest.BenchmarkList(b, d.Audit(audittest.Retention))
}
