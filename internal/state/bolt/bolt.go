// Package bolt holds the embedded state adapters, one type per port over
// one bbolt file that survives restarts (a DB): Tasks (task.Store: tasks,
// jobs, the id sequence, the thread pool; tasks.go), Usage
// (quota.UsageStore and the disk-quota configuration: tile pages and layer
// totals; usage.go, usageorder.go, quota.go), Schedules (schedule.Store:
// the schedules of saved requests; schedules.go), Config
// (layer.ConfigStore: the configuration managed at run time; config.go),
// Claims (onmiss.Claims: the claims of render on miss; claims.go),
// ReadMarks (quota.Marks: the batches of reads recorded; claims.go) and
// Audit (audit.Store: the audit trail; audit.go).
//
// The number of RUNNING tasks is derived (active minus pending index entries)
// rather than counted, so it cannot drift. Every operation is one bbolt
// transaction, so each is atomic and durable when it returns.
package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/apperr"
)

var (
	bucketMeta      = []byte("meta")
	bucketJobs      = []byte("jobs")
	bucketFailures  = []byte("failures")
	bucketTasks     = []byte("tasks")
	bucketActive    = []byte("active")   // ids of PENDING and RUNNING tasks
	bucketPending   = []byte("pending")  // ids of PENDING tasks, oldest first
	bucketFinished  = []byte("finished") // an older version's id -> finish time (see finished.go)
	bucketQuota     = []byte("quota")
	bucketClaims    = []byte("claims")       // key -> owner NUL expiry (Unix nanoseconds)
	bucketSched     = []byte("schedules")    // name -> schedule.Schedule as JSON (schedules.go)
	bucketSchedNext = []byte("scheduleNext") // name -> its next due time, 8 bytes (schedules.go)
	bucketConfig    = []byte("config")       // the configuration managed at run time (config.go)
	keySeq          = []byte("seq")
)

// finishedKeep is how long finished tasks stay in the recent index: the
// hour the overview and the console's task list ask for (the index is
// read by time range, so what it keeps beyond a narrower ask costs
// nothing to read).
const finishedKeep = time.Hour

// store is what the adapters over one file share.
type store struct {
	db     *bbolt.DB
	cache  sync.Map // task id → *decoded (List)
	cached atomic.Int64
}

// DB is one bbolt file, from which the adapters of the ports are taken;
// they share it (every operation is one bbolt transaction).
type DB struct{ s *store }

// Open opens or creates the state file at path.
func Open(path string) (*DB, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open task store %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketJobs, bucketFailures, bucketTasks, bucketActive, bucketPending, bucketQuota, bucketClaims, bucketSched, bucketSchedNext, bucketConfig} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		if err := initFinished(tx); err != nil {
			return err
		}
		return initUsage(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialise task store %s: %w", path, err)
	}
	return &DB{&store{db: db}}, nil
}

// Close closes the file.
func (d *DB) Close() error { return d.s.db.Close() }

// Tasks returns the task store (task.Store) in the file.
func (d *DB) Tasks() *Tasks { return &Tasks{d.s} }

// Usage returns the usage store (quota.UsageStore, with the disk-quota
// configuration) in the file.
func (d *DB) Usage() *Usage { return &Usage{d.s} }

// Schedules returns the schedule store (schedule.Store) in the file.
func (d *DB) Schedules() *Schedules { return &Schedules{d.s} }

// Config returns the store of the configuration managed at run time
// (layer.ConfigStore) in the file.
func (d *DB) Config() *Config { return &Config{d.s} }

// Claims returns the claims of render on miss (onmiss.Claims) in the file.
func (d *DB) Claims() *Claims { return &Claims{d.s} }

// ReadMarks returns the marks of recorded read batches (quota.Marks) in
// the file.
func (d *DB) ReadMarks() *ReadMarks { return &ReadMarks{d.s} }

func itob(v int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(v))
	return b
}

func btoi(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

func (s *store) update(ctx context.Context, what string, fn func(*bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := s.db.Update(fn); err != nil {
		if _, ok := errors.AsType[*apperr.Error](err); ok {
			return err
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (s *store) view(ctx context.Context, what string, fn func(*bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := s.db.View(fn); err != nil {
		if _, ok := errors.AsType[*apperr.Error](err); ok {
			return err
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
