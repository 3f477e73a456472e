package bolt

import (
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/audit"
)

// TestAuditAppendRemovesExpired: records past the retention are not only
// unlisted but removed from the file by the next Append.
func TestAuditAppendRemovesExpired(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	now := time.Now()
	a := d.Audit(24 * time.Hour)
	a.clock = func() time.Time { return now.Add(-48 * time.Hour) }
	for _, ago := range []time.Duration{50 * time.Hour, 49 * time.Hour, time.Hour} {
		if err := a.Append(t.Context(), audit.Record{At: now.Add(-ago), Method: "POST", Path: "/rest/seed", Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		n := 0
		d.s.db.View(func(tx *bbolt.Tx) error { n = tx.Bucket(bucketAudit).Stats().KeyN; return nil })
		return n
	}
	if n := count(); n != 3 {
		t.Fatalf("%d records kept while within the retention, want 3", n)
	}
	a.clock = func() time.Time { return now }
	if err := a.Append(t.Context(), audit.Record{At: now, Method: "POST", Path: "/rest/seed", Status: 200}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d records in the file after an append, want 2 (the two past the retention removed)", n)
	}
}
