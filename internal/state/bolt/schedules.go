package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/apperr"
	"tilecache/internal/schedule"
)

// Schedules are stored one per key of their bucket: name → the
// schedule.Schedule as JSON, and beside it name → Next (Unix nanoseconds,
// big-endian; 0: none), which NextRuns reads without touching the
// schedules' values (requests of up to 256 KiB). Each operation is one
// transaction, so a claim's compare-and-set of Next is atomic.

// Schedules is the schedule store (schedule.Store) in a DB.
type Schedules struct{ *store }

var _ schedule.Store = (*Schedules)(nil)

func getSchedule(tx *bbolt.Tx, name string) (schedule.Schedule, error) {
	v := tx.Bucket(bucketSched).Get([]byte(name))
	if v == nil {
		return schedule.Schedule{}, apperr.New(apperr.NotFound, "Schedule %s not found", apperr.Show(name))
	}
	return decodeSchedule(name, v)
}

// decodeSchedule decodes the schedule stored under name; an error wraps
// schedule.ErrUnreadable.
func decodeSchedule(name string, v []byte) (schedule.Schedule, error) {
	var s schedule.Schedule
	if err := json.Unmarshal(v, &s); err != nil {
		return schedule.Schedule{}, fmt.Errorf("schedule %q: %w: %w", name, schedule.ErrUnreadable, err)
	}
	return s, nil
}

func putSchedule(tx *bbolt.Tx, s schedule.Schedule) error {
	v, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode schedule %q: %w", s.Name, err)
	}
	if err := tx.Bucket(bucketSched).Put([]byte(s.Name), v); err != nil {
		return err
	}
	next := int64(0)
	if !s.Next.IsZero() {
		next = s.Next.UnixNano()
	}
	return tx.Bucket(bucketSchedNext).Put([]byte(s.Name), binary.BigEndian.AppendUint64(nil, uint64(next)))
}

// utc returns s with its times in UTC, as the port promises.
func utc(s schedule.Schedule) schedule.Schedule {
	s.Created, s.Next = s.Created.UTC(), s.Next.UTC()
	for _, r := range []**schedule.Run{&s.Last, &s.LastStarted, &s.LastFailed} {
		if *r != nil {
			c := **r
			c.Due, c.At = c.Due.UTC(), c.At.UTC()
			*r = &c
		}
	}
	return s
}

// CreateSchedule implements schedule.Store.
func (s *Schedules) CreateSchedule(ctx context.Context, sc schedule.Schedule) error {
	return s.update(ctx, "create schedule "+sc.Name, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSched)
		if b.Get([]byte(sc.Name)) != nil {
			return apperr.New(apperr.Conflict, "Schedule %s exists", apperr.Show(sc.Name))
		}
		n, c := 0, b.Cursor()
		for k, _ := c.First(); k != nil && n < schedule.MaxSchedules; k, _ = c.Next() {
			n++
		}
		if n >= schedule.MaxSchedules {
			return schedule.TooMany()
		}
		return putSchedule(tx, sc)
	})
}

// Schedule implements schedule.Store.
func (s *Schedules) Schedule(ctx context.Context, name string) (schedule.Schedule, error) {
	var sc schedule.Schedule
	err := s.view(ctx, "read schedule "+name, func(tx *bbolt.Tx) (err error) {
		sc, err = getSchedule(tx, name)
		return err
	})
	return utc(sc), err
}

// Schedules implements schedule.Store.
func (s *Schedules) Schedules(ctx context.Context) ([]schedule.Schedule, []schedule.Unreadable, error) {
	out := []schedule.Schedule{}
	var bad []schedule.Unreadable
	err := s.view(ctx, "list schedules", func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketSched).ForEach(func(k, v []byte) error { // keys ascend: by name
			sc, err := decodeSchedule(string(k), v)
			if err != nil {
				bad = append(bad, schedule.Unreadable{Name: string(k), Err: err})
				return nil
			}
			out = append(out, utc(sc))
			return nil
		})
	})
	return out, bad, err
}

// NextRuns implements schedule.Store: the next due times are read from
// their own bucket; a schedule without one there (saved by an earlier
// version) has its value decoded into its next due time alone.
func (s *Schedules) NextRuns(ctx context.Context) ([]schedule.NextRun, []schedule.Unreadable, error) {
	var out []schedule.NextRun
	var bad []schedule.Unreadable
	err := s.view(ctx, "list schedules' next runs", func(tx *bbolt.Tx) error {
		nexts := tx.Bucket(bucketSchedNext)
		c := tx.Bucket(bucketSched).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if n := nexts.Get(k); len(n) == 8 {
				next := time.Time{}
				if ns := int64(binary.BigEndian.Uint64(n)); ns != 0 {
					next = time.Unix(0, ns).UTC()
				}
				out = append(out, schedule.NextRun{Name: string(k), Next: next})
				continue
			}
			var n struct {
				Next time.Time `json:"next"`
			}
			if err := json.Unmarshal(tx.Bucket(bucketSched).Get(k), &n); err != nil {
				bad = append(bad, schedule.Unreadable{Name: string(k), Err: fmt.Errorf("schedule %q: %w: %w", k, schedule.ErrUnreadable, err)})
				continue
			}
			out = append(out, schedule.NextRun{Name: string(k), Next: n.Next.UTC()})
		}
		return nil
	})
	return out, bad, err
}

// DeleteSchedule implements schedule.Store.
func (s *Schedules) DeleteSchedule(ctx context.Context, name string) error {
	return s.update(ctx, "delete schedule "+name, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSched)
		if b.Get([]byte(name)) == nil {
			return apperr.New(apperr.NotFound, "Schedule %s not found", apperr.Show(name))
		}
		if err := tx.Bucket(bucketSchedNext).Delete([]byte(name)); err != nil {
			return err
		}
		return b.Delete([]byte(name))
	})
}

// ClaimRun implements schedule.Store.
func (s *Schedules) ClaimRun(ctx context.Context, name string, due, next time.Time, run schedule.Run) (bool, error) {
	ok := false
	err := s.update(ctx, "claim run of schedule "+name, func(tx *bbolt.Tx) error {
		sc, err := getSchedule(tx, name)
		if apperr.Is(err, apperr.NotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if !sc.Next.Equal(due) {
			return nil
		}
		run.Due = due
		sc.Next, sc.Last = next, &run
		ok = true
		return putSchedule(tx, sc)
	})
	return ok, err
}

// RecordRun implements schedule.Store.
func (s *Schedules) RecordRun(ctx context.Context, name string, run schedule.Run) (bool, error) {
	ok := false
	err := s.update(ctx, "record run of schedule "+name, func(tx *bbolt.Tx) error {
		sc, err := getSchedule(tx, name)
		if apperr.Is(err, apperr.NotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if sc.Last == nil || !sc.Last.Due.Equal(run.Due) {
			return nil
		}
		sc.Last = &run
		switch run.Outcome {
		case schedule.Started:
			sc.LastStarted = &run
		case schedule.Failed:
			sc.LastFailed = &run
		}
		ok = true
		return putSchedule(tx, sc)
	})
	return ok, err
}
