package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/task"
)

// Task failures (task.FailureStore) are kept in a bucket of their own,
// made by the first record: task id (8 bytes, big-endian) → the
// task.Failure as JSON. A record drops those older than task.FailureKeep.

var bucketTaskFailures = []byte("taskFailures")

var _ task.FailureStore = (*Tasks)(nil)

// RecordFailure stores f, trimming its reason, unless the task has a
// failure already, and drops failures older than task.FailureKeep.
func (s *Tasks) RecordFailure(ctx context.Context, f task.Failure) error {
	f.Reason = task.TrimReason(f.Reason)
	v, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode failure of task %d: %w", f.ID, err)
	}
	return s.update(ctx, fmt.Sprintf("record failure of task %d", f.ID), func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketTaskFailures)
		if err != nil {
			return err
		}
		cutoff := f.At.Add(-task.FailureKeep)
		var old [][]byte
		if err := b.ForEach(func(k, v []byte) error {
			var g task.Failure
			if json.Unmarshal(v, &g) != nil || g.At.Before(cutoff) {
				old = append(old, k)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, k := range old {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		if b.Get(itob(f.ID)) != nil {
			return nil // the first cause stays
		}
		return b.Put(itob(f.ID), v)
	})
}

// Failures returns the failures at or after since, newest task id first.
func (s *Tasks) Failures(ctx context.Context, since time.Time, limit int) ([]task.Failure, error) {
	var out []task.Failure
	err := s.view(ctx, "list task failures", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketTaskFailures)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
			var f task.Failure
			if err := json.Unmarshal(v, &f); err != nil {
				return fmt.Errorf("decode failure of task %d: %w", btoi(k), err)
			}
			if !f.At.Before(since) {
				out = append(out, f)
			}
		}
		return nil
	})
	return out, err
}
