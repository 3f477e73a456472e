// task.Store: tasks, jobs, the id sequence and the thread pool.

package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/apperr"
	"tilecache/internal/task"
)

// Tasks is the task store (task.Store) in a DB.
type Tasks struct{ *store }

var _ task.Store = (*Tasks)(nil)

func getTask(tx *bbolt.Tx, id int64) (task.Task, error) {
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

func putTask(tx *bbolt.Tx, t task.Task) error {
	v, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode task %d: %w", t.ID, err)
	}
	return tx.Bucket(bucketTasks).Put(itob(t.ID), v)
}

// Create implements task.Store.
func (s *Tasks) Create(ctx context.Context, job task.Job, lanes []task.Lane, now time.Time) (task.Job, []task.Task, error) {
	if len(lanes) == 0 {
		return task.Job{}, nil, apperr.New(apperr.Invalid, "a job needs at least one lane")
	}
	var tasks []task.Task
	err := s.update(ctx, "create tasks", func(tx *bbolt.Tx) error {
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
func (s *Tasks) Job(ctx context.Context, id int64) (task.Job, error) {
	var job task.Job
	err := s.view(ctx, "get job", func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketJobs).Get(itob(id))
		if v == nil {
			return apperr.New(apperr.NotFound, "job %d not found", id)
		}
		return json.Unmarshal(v, &job)
	})
	return job, err
}

// Get implements task.Store.
func (s *Tasks) Get(ctx context.Context, id int64) (task.Task, error) {
	var t task.Task
	err := s.view(ctx, "get task", func(tx *bbolt.Tx) (err error) {
		t, err = getTask(tx, id)
		return err
	})
	return t, err
}

// List implements task.Store.
func (s *Tasks) List(ctx context.Context, finishedSince time.Time) ([]task.Task, error) {
	var out []task.Task
	err := s.view(ctx, "list tasks", func(tx *bbolt.Tx) error {
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
func (s *store) decode(id int64, v []byte) (task.Task, error) {
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

func running(tx *bbolt.Tx) int {
	return tx.Bucket(bucketActive).Stats().KeyN - tx.Bucket(bucketPending).Stats().KeyN
}

// Promote implements task.Store.
func (s *Tasks) Promote(ctx context.Context, pool int, laneCap func(layer string) int, now time.Time) ([]task.Task, error) {
	var promoted []task.Task
	err := s.update(ctx, "promote tasks", func(tx *bbolt.Tx) error {
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
		if len(promoted) == 0 {
			return errNothingPromoted // roll back: a commit writes even when nothing changed
		}
		return nil
	})
	if errors.Is(err, errNothingPromoted) {
		return nil, nil
	}
	return promoted, err
}

// errNothingPromoted ends the transaction of a Promote that found nothing
// to promote (the pool or every waiting lane's cap full), so the dispatches
// of lanes waiting behind a cap write nothing.
var errNothingPromoted = errors.New("nothing to promote")

// Checkpoint implements task.Store.
func (s *Tasks) Checkpoint(ctx context.Context, cp task.Checkpoint, now time.Time) (task.Task, error) {
	if len(cp.Usage) > task.MaxCheckpointPages {
		return task.Task{}, apperr.New(apperr.Invalid, "checkpoint of task %d carries %d page deltas, more than %d", cp.ID, len(cp.Usage), task.MaxCheckpointPages)
	}
	var t task.Task
	err := s.update(ctx, "checkpoint task", func(tx *bbolt.Tx) (err error) {
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

// Acquire implements task.Store.
func (s *Tasks) Acquire(ctx context.Context, id int64, owner string, ttl time.Duration, now time.Time) (task.Task, error) {
	var t task.Task
	err := s.update(ctx, "acquire task", func(tx *bbolt.Tx) (err error) {
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

func finish(tx *bbolt.Tx, t *task.Task, status task.Status, now time.Time) error {
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
func (s *Tasks) Finish(ctx context.Context, id int64, status task.Status, now time.Time) (task.Task, error) {
	var t task.Task
	err := s.update(ctx, "finish task", func(tx *bbolt.Tx) (err error) {
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
func (s *Tasks) Kill(ctx context.Context, id int64, expect task.Status, now time.Time) (task.Task, error) {
	var before task.Task
	err := s.update(ctx, "kill task", func(tx *bbolt.Tx) error {
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

// KilledAt implements task.Store.
func (s *Tasks) KilledAt(ctx context.Context, id int64, done int64) error {
	return s.update(ctx, "record a killed task's progress", func(tx *bbolt.Tx) error {
		t, err := getTask(tx, id)
		if err != nil {
			return err
		}
		if t.Status != task.Aborted || !t.Killed {
			return apperr.New(apperr.Conflict, "task %d is %s, not killed", id, t.Status)
		}
		if done = min(done, t.Total); done <= t.Done {
			return nil
		}
		t.Done = done
		return putTask(tx, t)
	})
}

// AddFailures implements task.Store.
func (s *Tasks) AddFailures(ctx context.Context, jobID int64, n int64) (int64, error) {
	var total int64
	err := s.update(ctx, "count tile failures", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketFailures)
		if v := b.Get(itob(jobID)); v != nil {
			total = btoi(v)
		}
		total += n
		return b.Put(itob(jobID), itob(total))
	})
	return total, err
}
