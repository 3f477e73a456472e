// Package boltstore is the embedded task store: tasks, jobs, the id
// sequence, the thread pool, the disk-quota configuration and the disk
// usage (tile pages and layer totals, see usage.go), the schedules of
// saved requests (schedules.go) and the configuration managed at run time
// (config.go) in one bbolt file that survives restarts.
//
// The number of RUNNING tasks is derived (active minus pending index entries)
// rather than counted, so it cannot drift. Every operation is one bbolt
// transaction, so each is atomic and durable when it returns.
package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"tilecache/internal/apperr"
	"tilecache/internal/task"
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

// finishedKeep is how long finished tasks stay in the recent index.
const finishedKeep = 10 * time.Minute

// Store is the bbolt task store.
type Store struct {
	db     *bolt.DB
	cache  sync.Map // task id → *decoded (List)
	cached atomic.Int64
}

var _ task.Store = (*Store)(nil)

// Open opens or creates the store file at path.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open task store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
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
	return &Store{db: db}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

func itob(v int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(v))
	return b
}

func btoi(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

func (s *Store) update(ctx context.Context, what string, fn func(*bolt.Tx) error) error {
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

func (s *Store) view(ctx context.Context, what string, fn func(*bolt.Tx) error) error {
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

func getTask(tx *bolt.Tx, id int64) (task.Task, error) {
	v := tx.Bucket(bucketTasks).Get(itob(id))
	if v == nil {
		return task.Task{}, apperr.New(apperr.NotFound, "task %d not found", id)
	}
	var t task.Task
	if err := json.Unmarshal(v, &t); err != nil {
		return task.Task{}, fmt.Errorf("decode task %d: %w", id, err)
	}
	return t, nil
}

func putTask(tx *bolt.Tx, t task.Task) error {
	v, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode task %d: %w", t.ID, err)
	}
	return tx.Bucket(bucketTasks).Put(itob(t.ID), v)
}

// Create implements task.Store.
func (s *Store) Create(ctx context.Context, job task.Job, lanes []task.Lane, now time.Time) (task.Job, []task.Task, error) {
	if len(lanes) == 0 {
		return task.Job{}, nil, apperr.New(apperr.Invalid, "a job needs at least one lane")
	}
	var tasks []task.Task
	err := s.update(ctx, "create tasks", func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		var last int64
		if v := meta.Get(keySeq); v != nil {
			last = btoi(v)
		}
		if err := meta.Put(keySeq, itob(last+int64(len(lanes)))); err != nil {
			return err
		}
		job.ID = last + 1
		job.Lanes = len(lanes)
		job.Created = now
		jv, err := json.Marshal(job)
		if err != nil {
			return fmt.Errorf("encode job: %w", err)
		}
		if err := tx.Bucket(bucketJobs).Put(itob(job.ID), jv); err != nil {
			return err
		}
		tasks = make([]task.Task, len(lanes))
		for i, l := range lanes {
			t := task.Task{
				ID: job.ID + int64(i), JobID: job.ID, Layer: job.Layer, Type: job.Type,
				Status: task.Pending, Start: l.Start, End: l.End, Cursor: l.Start,
				Total: l.Tiles, Created: now, Heartbeat: now,
			}
			if err := putTask(tx, t); err != nil {
				return err
			}
			if err := tx.Bucket(bucketActive).Put(itob(t.ID), nil); err != nil {
				return err
			}
			if err := tx.Bucket(bucketPending).Put(itob(t.ID), nil); err != nil {
				return err
			}
			tasks[i] = t
		}
		return nil
	})
	if err != nil {
		return task.Job{}, nil, err
	}
	return job, tasks, nil
}

// Job implements task.Store.
func (s *Store) Job(ctx context.Context, id int64) (task.Job, error) {
	var job task.Job
	err := s.view(ctx, "get job", func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketJobs).Get(itob(id))
		if v == nil {
			return apperr.New(apperr.NotFound, "job %d not found", id)
		}
		return json.Unmarshal(v, &job)
	})
	return job, err
}

// Get implements task.Store.
func (s *Store) Get(ctx context.Context, id int64) (task.Task, error) {
	var t task.Task
	err := s.view(ctx, "get task", func(tx *bolt.Tx) (err error) {
		t, err = getTask(tx, id)
		return err
	})
	return t, err
}

// List implements task.Store.
func (s *Store) List(ctx context.Context, finishedSince time.Time) ([]task.Task, error) {
	var out []task.Task
	err := s.view(ctx, "list tasks", func(tx *bolt.Tx) error {
		ids := map[int64]bool{}
		if err := tx.Bucket(bucketActive).ForEach(func(k, _ []byte) error {
			ids[btoi(k)] = true
			return nil
		}); err != nil {
			return err
		}
		listFinished(tx, finishedSince.UnixNano(), func(id int64) { ids[id] = true })
		// The wanted tasks by id, decoded once per version: a status
		// poll re-reads the same few tasks again and again.
		sorted := slices.Sorted(maps.Keys(ids))
		b := tx.Bucket(bucketTasks)
		for _, id := range sorted {
			v := b.Get(itob(id))
			if v == nil {
				continue
			}
			t, err := s.decode(id, v)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// decoded is a task as decoded from its stored bytes.
type decoded struct {
	raw []byte
	t   task.Task
}

// decode returns the task stored as v, from the cache when v is what was
// decoded last time.
func (s *Store) decode(id int64, v []byte) (task.Task, error) {
	if c, ok := s.cache.Load(id); ok && bytes.Equal(c.(*decoded).raw, v) {
		return c.(*decoded).t, nil
	}
	var t task.Task
	if err := json.Unmarshal(v, &t); err != nil {
		return task.Task{}, fmt.Errorf("decode task %d: %w", id, err)
	}
	if s.cached.Add(1) > 4096 { // the listed tasks are few; forget old ones now and then
		s.cache.Clear()
		s.cached.Store(0)
	}
	s.cache.Store(id, &decoded{raw: bytes.Clone(v), t: t})
	return t, nil
}

func running(tx *bolt.Tx) int {
	return tx.Bucket(bucketActive).Stats().KeyN - tx.Bucket(bucketPending).Stats().KeyN
}

// Promote implements task.Store.
func (s *Store) Promote(ctx context.Context, pool int, laneCap func(layer string) int, now time.Time) ([]task.Task, error) {
	var promoted []task.Task
	err := s.update(ctx, "promote tasks", func(tx *bolt.Tx) error {
		free := pool - running(tx)
		if free <= 0 {
			return nil
		}
		lanes := map[string]int{} // RUNNING tasks per layer
		var pending []task.Task
		err := tx.Bucket(bucketActive).ForEach(func(k, _ []byte) error {
			t, err := getTask(tx, btoi(k))
			if err != nil {
				return err
			}
			if t.Status == task.Running {
				lanes[t.Layer]++
			} else {
				pending = append(pending, t)
			}
			return nil
		})
		if err != nil {
			return err
		}
		pend := tx.Bucket(bucketPending)
		for _, t := range pending { // oldest first: ids ascend
			if free == 0 {
				break
			}
			if laneCap != nil {
				if c := laneCap(t.Layer); c > 0 && lanes[t.Layer] >= c {
					continue
				}
			}
			if err := pend.Delete(itob(t.ID)); err != nil {
				return err
			}
			t.Status = task.Running
			t.Heartbeat = now
			if err := putTask(tx, t); err != nil {
				return err
			}
			promoted = append(promoted, t)
			lanes[t.Layer]++
			free--
		}
		return nil
	})
	return promoted, err
}

// Checkpoint implements task.Store.
func (s *Store) Checkpoint(ctx context.Context, cp task.Checkpoint, now time.Time) (task.Task, error) {
	if len(cp.Usage) > task.MaxCheckpointPages {
		return task.Task{}, apperr.New(apperr.Invalid, "checkpoint of task %d carries %d page deltas, more than %d", cp.ID, len(cp.Usage), task.MaxCheckpointPages)
	}
	var t task.Task
	err := s.update(ctx, "checkpoint task", func(tx *bolt.Tx) (err error) {
		t, err = getTask(tx, cp.ID)
		if err != nil {
			return err
		}
		if cp.Token != "" && t.WriteToken == cp.Token {
			return errReplayed // applied already: change nothing
		}
		if t.Status != task.Running || t.Cursor != cp.From {
			return apperr.New(apperr.Conflict, "task %d is %s at metatile %d, not RUNNING at %d", t.ID, t.Status, t.Cursor, cp.From)
		}
		if cp.Owner != "" && t.Owner != cp.Owner {
			return apperr.New(apperr.Conflict, "task %d: the lease of its lane is no longer held by this worker", t.ID)
		}
		if cp.To < cp.From || cp.To > t.End || cp.Tiles < 0 || t.Done+cp.Tiles > t.Total {
			return apperr.New(apperr.Invalid, "checkpoint of task %d out of its lane", t.ID)
		}
		t.Cursor, t.Done, t.Heartbeat = cp.To, t.Done+cp.Tiles, now
		if cp.After != "" {
			t.After = cp.After
		}
		if cp.Token != "" {
			t.WriteToken = cp.Token
		}
		if cp.Owner == "" || cp.Release {
			t.Owner = ""
		}
		if err := putTask(tx, t); err != nil {
			return err
		}
		return applyDeltas(tx, cp.Usage, now)
	})
	if errors.Is(err, errReplayed) {
		return t, nil
	}
	return t, err
}

// errReplayed ends the transaction of a checkpoint that was applied
// already, writing nothing.
var errReplayed = errors.New("checkpoint applied already")

// Claims are stored as key -> kind byte, holder, expiry (8 bytes, Unix
// nanoseconds): kind 'c' holds a claim's owner, kind 'n' a note.
const (
	claimOwner = 'c'
	claimNote  = 'n'
)

// claimOf decodes a stored claim; ok is false for a malformed one.
func claimOf(v []byte) (kind byte, holder string, until int64, ok bool) {
	if len(v) < 9 {
		return 0, "", 0, false
	}
	return v[0], string(v[1 : len(v)-8]), int64(binary.BigEndian.Uint64(v[len(v)-8:])), true
}

func claimValue(kind byte, holder string, until time.Time) []byte {
	v := append([]byte{kind}, holder...)
	return binary.BigEndian.AppendUint64(v, uint64(until.UnixNano()))
}

// Claim takes key for owner until now+ttl unless another owner's claim
// or a note has not expired (seed.Claims).
func (s *Store) Claim(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (bool, error) {
	ok := false
	err := s.update(ctx, "claim "+key, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketClaims)
		if kind, holder, until, found := claimOf(b.Get([]byte(key))); found && now.UnixNano() < until &&
			(kind != claimOwner || holder != owner) {
			return nil
		}
		ok = true
		return b.Put([]byte(key), claimValue(claimOwner, owner, now.Add(ttl)))
	})
	return ok, err
}

// Unclaim releases owner's claim of key (seed.Claims).
func (s *Store) Unclaim(ctx context.Context, key, owner string) error {
	return s.update(ctx, "release claim "+key, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketClaims)
		if kind, holder, _, found := claimOf(b.Get([]byte(key))); found && kind == claimOwner && holder == owner {
			return b.Delete([]byte(key))
		}
		return nil
	})
}

// Settle replaces owner's claim of key with note until until (seed.Claims);
// nothing when the claim is no longer owner's.
func (s *Store) Settle(ctx context.Context, key, owner, note string, until time.Time) error {
	return s.update(ctx, "settle claim "+key, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketClaims)
		if kind, holder, _, found := claimOf(b.Get([]byte(key))); found && kind == claimOwner && holder == owner {
			return b.Put([]byte(key), claimValue(claimNote, note, until))
		}
		return nil
	})
}

// Note leaves note at key until until, whatever key held (seed.Claims).
func (s *Store) Note(ctx context.Context, key, note string, until time.Time) error {
	return s.update(ctx, "write note "+key, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketClaims).Put([]byte(key), claimValue(claimNote, note, until))
	})
}

// Peek reads what key holds at now: a live claim's owner or a live note
// (seed.Claims).
func (s *Store) Peek(ctx context.Context, key string, now time.Time) (owner, note string, until time.Time, err error) {
	err = s.view(ctx, "read claim "+key, func(tx *bolt.Tx) error {
		kind, holder, u, found := claimOf(tx.Bucket(bucketClaims).Get([]byte(key)))
		if !found || u <= now.UnixNano() {
			return nil
		}
		until = time.Unix(0, u)
		if kind == claimOwner {
			owner = holder
		} else {
			note = holder
		}
		return nil
	})
	if err != nil {
		return "", "", time.Time{}, err
	}
	return owner, note, until, nil
}

// Acquire implements task.Store.
func (s *Store) Acquire(ctx context.Context, id int64, owner string, ttl time.Duration, now time.Time) (task.Task, error) {
	var t task.Task
	err := s.update(ctx, "acquire task", func(tx *bolt.Tx) (err error) {
		t, err = getTask(tx, id)
		if err != nil {
			return err
		}
		if t.Status != task.Running {
			return apperr.New(apperr.Conflict, "task %d is %s, not RUNNING", id, t.Status)
		}
		if t.Owner != "" && t.Owner != owner && now.Sub(t.Heartbeat) < ttl {
			return apperr.New(apperr.Conflict, "task %d: its lane is leased by a live worker", id)
		}
		t.Owner, t.Heartbeat = owner, now
		return putTask(tx, t)
	})
	return t, err
}

func finish(tx *bolt.Tx, t *task.Task, status task.Status, now time.Time) error {
	t.Status, t.Finished = status, now
	if err := putTask(tx, *t); err != nil {
		return err
	}
	id := itob(t.ID)
	if err := tx.Bucket(bucketActive).Delete(id); err != nil {
		return err
	}
	if err := tx.Bucket(bucketPending).Delete(id); err != nil {
		return err
	}
	// Forget finished tasks from the recent index once nobody lists them.
	return recordFinished(tx, t.ID, now.UnixNano(), now.Add(-finishedKeep).UnixNano())
}

// Finish implements task.Store.
func (s *Store) Finish(ctx context.Context, id int64, status task.Status, now time.Time) (task.Task, error) {
	var t task.Task
	err := s.update(ctx, "finish task", func(tx *bolt.Tx) (err error) {
		t, err = getTask(tx, id)
		if err != nil {
			return err
		}
		if t.Status != task.Running {
			return apperr.New(apperr.Conflict, "task %d is %s, not RUNNING", id, t.Status)
		}
		switch status {
		case task.Done:
			if t.Cursor != t.End {
				return apperr.New(apperr.Conflict, "task %d is at metatile %d of %d", id, t.Cursor, t.End)
			}
		case task.Aborted:
		default:
			return apperr.New(apperr.Invalid, "cannot finish task %d as %s", id, status)
		}
		return finish(tx, &t, status, now)
	})
	return t, err
}

// Kill implements task.Store.
func (s *Store) Kill(ctx context.Context, id int64, expect task.Status, now time.Time) (task.Task, error) {
	var before task.Task
	err := s.update(ctx, "kill task", func(tx *bolt.Tx) error {
		t, err := getTask(tx, id)
		if err != nil {
			return err
		}
		if !expect.Active() || t.Status != expect {
			return apperr.New(apperr.Conflict, "task %d is %s, not %s", id, t.Status, expect)
		}
		before = t
		t.Killed = true
		return finish(tx, &t, task.Aborted, now)
	})
	return before, err
}

// AddFailures implements task.Store.
func (s *Store) AddFailures(ctx context.Context, jobID int64, n int64) (int64, error) {
	var total int64
	err := s.update(ctx, "count tile failures", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketFailures)
		if v := b.Get(itob(jobID)); v != nil {
			total = btoi(v)
		}
		total += n
		return b.Put(itob(jobID), itob(total))
	})
	return total, err
}
