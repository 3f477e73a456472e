package boltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"tilecache/internal/apperr"
	"tilecache/internal/schedule"
)

// Schedules are stored one per key of their bucket: name → the
// schedule.Schedule as JSON. Each operation is one transaction, so a
// claim's compare-and-set of Next is atomic.

var _ schedule.Store = (*Store)(nil)

func getSchedule(tx *bolt.Tx, name string) (schedule.Schedule, error) {
	v := tx.Bucket(bucketSched).Get([]byte(name))
	if v == nil {
		return schedule.Schedule{}, apperr.New(apperr.NotFound, "Schedule %s not found", apperr.Show(name))
	}
	var s schedule.Schedule
	if err := json.Unmarshal(v, &s); err != nil {
		return schedule.Schedule{}, fmt.Errorf("decode schedule %q: %w", name, err)
	}
	return s, nil
}

func putSchedule(tx *bolt.Tx, s schedule.Schedule) error {
	v, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode schedule %q: %w", s.Name, err)
	}
	return tx.Bucket(bucketSched).Put([]byte(s.Name), v)
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
func (s *Store) CreateSchedule(ctx context.Context, sc schedule.Schedule) error {
	return s.update(ctx, "create schedule "+sc.Name, func(tx *bolt.Tx) error {
		if tx.Bucket(bucketSched).Get([]byte(sc.Name)) != nil {
			return apperr.New(apperr.Conflict, "Schedule %s exists", apperr.Show(sc.Name))
		}
		return putSchedule(tx, sc)
	})
}

// Schedule implements schedule.Store.
func (s *Store) Schedule(ctx context.Context, name string) (schedule.Schedule, error) {
	var sc schedule.Schedule
	err := s.view(ctx, "read schedule "+name, func(tx *bolt.Tx) (err error) {
		sc, err = getSchedule(tx, name)
		return err
	})
	return utc(sc), err
}

// Schedules implements schedule.Store.
func (s *Store) Schedules(ctx context.Context) ([]schedule.Schedule, error) {
	out := []schedule.Schedule{}
	err := s.view(ctx, "list schedules", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSched).ForEach(func(k, v []byte) error { // keys ascend: by name
			var sc schedule.Schedule
			if err := json.Unmarshal(v, &sc); err != nil {
				return fmt.Errorf("decode schedule %q: %w", k, err)
			}
			out = append(out, utc(sc))
			return nil
		})
	})
	return out, err
}

// DeleteSchedule implements schedule.Store.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	return s.update(ctx, "delete schedule "+name, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSched)
		if b.Get([]byte(name)) == nil {
			return apperr.New(apperr.NotFound, "Schedule %s not found", apperr.Show(name))
		}
		return b.Delete([]byte(name))
	})
}

// ClaimRun implements schedule.Store.
func (s *Store) ClaimRun(ctx context.Context, name string, due, next time.Time, run schedule.Run) (bool, error) {
	ok := false
	err := s.update(ctx, "claim run of schedule "+name, func(tx *bolt.Tx) error {
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
func (s *Store) RecordRun(ctx context.Context, name string, run schedule.Run) (bool, error) {
	ok := false
	err := s.update(ctx, "record run of schedule "+name, func(tx *bolt.Tx) error {
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
