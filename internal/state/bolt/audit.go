package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/audit"
)

// The audit trail (audit.Store) is kept in a bucket of its own, made by
// the first record: record id (audit.NewID: time, then a random suffix,
// so keys sort by time) → the audit.Record as JSON. An Append removes up
// to auditPrune records older than the retention; List never returns
// them.

var bucketAudit = []byte("audit")

// auditPrune is the most expired records one Append removes.
const auditPrune = 1000

// Audit is the audit trail in the file (audit.Store).
type Audit struct {
	*store
	retention time.Duration
	clock     func() time.Time
}

var _ audit.Store = (*Audit)(nil)

// Audit returns the audit trail in the file, keeping records for
// retention.
func (d *DB) Audit(retention time.Duration) *Audit {
	return &Audit{d.s, retention, time.Now}
}

// Append stores r under a new id and removes expired records.
func (a *Audit) Append(ctx context.Context, r audit.Record) error {
	r.ID = audit.NewID(r.At)
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	cutoff := []byte(audit.TimeKey(a.clock().Add(-a.retention)))
	return a.update(ctx, "append audit record", func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketAudit)
		if err != nil {
			return err
		}
		var old [][]byte
		c := b.Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k, cutoff) < 0 && len(old) < auditPrune; k, _ = c.Next() {
			old = append(old, bytes.Clone(k))
		}
		for _, k := range old {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return b.Put([]byte(r.ID), v)
	})
}

// List returns the records matching q, newest first.
func (a *Audit) List(ctx context.Context, q audit.Query) (audit.Page, error) {
	limit := q.Capped()
	from := a.clock().Add(-a.retention)
	if q.Since.After(from) {
		from = q.Since
	}
	floor := []byte(audit.TimeKey(from))
	var page audit.Page
	err := a.view(ctx, "list audit records", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var k, v []byte
		if q.After != "" {
			k, v = c.Seek([]byte(q.After))
			if k == nil {
				k, v = c.Last()
			}
			for k != nil && bytes.Compare(k, []byte(q.After)) >= 0 {
				k, v = c.Prev()
			}
		} else {
			k, v = c.Last()
		}
		for ; k != nil && bytes.Compare(k, floor) >= 0; k, v = c.Prev() {
			if len(page.Records) == limit {
				page.Next = page.Records[limit-1].ID
				return nil
			}
			var r audit.Record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode audit record %s: %w", k, err)
			}
			if q.Matches(r) {
				page.Records = append(page.Records, r)
			}
		}
		return nil
	})
	return page, err
}
