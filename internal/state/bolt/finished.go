// The recently finished tasks, ordered by finish time: a status call seeks
// to the time it asks from and reads only the tasks finished since, and a
// finish forgets the oldest entries from the front, so neither reads the
// finished tasks kept.

package bolt

import (
	"encoding/binary"

	bbolt "go.etcd.io/bbolt"
)

// bucketFinishedAt holds one key per finished task: its finish time (Unix
// nanoseconds, 8 bytes big-endian, so keys sort by time) then its id (8
// bytes); values are empty. It replaced bucketFinished (id -> finish
// time), which a store written by an older version still has until Open
// converts it.
var bucketFinishedAt = []byte("finishedAt")

// finishedKey is the key of task id finished at nanos (≥ 0).
func finishedKey(nanos, id int64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, uint64(max(nanos, 0)))
	binary.BigEndian.PutUint64(k[8:], uint64(id))
	return k
}

// initFinished creates bucketFinishedAt, moving into it the entries of an
// older version's bucketFinished, which it then deletes.
func initFinished(tx *bbolt.Tx) error {
	at, err := tx.CreateBucketIfNotExists(bucketFinishedAt)
	if err != nil {
		return err
	}
	old := tx.Bucket(bucketFinished)
	if old == nil {
		return nil
	}
	if err := old.ForEach(func(k, v []byte) error {
		return at.Put(finishedKey(btoi(v), btoi(k)), nil)
	}); err != nil {
		return err
	}
	return tx.DeleteBucket(bucketFinished)
}

// recordFinished adds task id finished at nanos, and forgets the tasks
// finished before forgetBefore: those at the front of the bucket.
func recordFinished(tx *bbolt.Tx, id, nanos, forgetBefore int64) error {
	b := tx.Bucket(bucketFinishedAt)
	if err := b.Put(finishedKey(nanos, id), nil); err != nil {
		return err
	}
	limit := finishedKey(forgetBefore, 0)
	c := b.Cursor()
	for k, _ := c.First(); k != nil && string(k) < string(limit); k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// listFinished calls fn with the id of each task finished at or after
// nanos, oldest first.
func listFinished(tx *bbolt.Tx, nanos int64, fn func(id int64)) {
	c := tx.Bucket(bucketFinishedAt).Cursor()
	for k, _ := c.Seek(finishedKey(nanos, 0)); k != nil; k, _ = c.Next() {
		fn(btoi(k[8:]))
	}
}
