package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/task"
)

// Starter submits a schedule's request as POST /rest/seed/{layer}.json
// does (worker.ScheduledRequests).
type Starter interface {
	// Start validates and submits request (the JSON body of a seed
	// request) for layer and returns the tasks it created. A request the
	// layers no longer allow is apperr.Invalid.
	Start(ctx context.Context, layer string, request json.RawMessage) ([]task.Task, error)
}

// TaskReader reads tasks (task.Store does).
type TaskReader interface {
	// Get returns a task by id; apperr.NotFound when it is gone.
	Get(ctx context.Context, id int64) (task.Task, error)
}

// ClaimTimeout is how long a claimed run whose outcome is not recorded
// counts as still starting: the next run of its schedule is skipped until
// then. A run's start takes seconds; a run unrecorded for longer lost its
// process.
const ClaimTimeout = 10 * time.Minute

// recordTimeout bounds the write of a run's outcome, which outlives the
// tick's context.
const recordTimeout = 10 * time.Second

// Ticker fires due schedules. It is safe for concurrent use, also by
// several processes sharing the store: each due time is fired once.
type Ticker struct {
	store Store
	tasks TaskReader
	start Starter
	log   *slog.Logger
}

// NewTicker returns a ticker of the schedules of store, starting their
// requests with start and looking up their previous runs' tasks in tasks.
func NewTicker(store Store, tasks TaskReader, start Starter, log *slog.Logger) *Ticker {
	return &Ticker{store: store, tasks: tasks, start: start, log: log}
}

// Tick fires every schedule due at now (Next at or before now) whose due
// time it claims, and returns the runs it fired, with their outcomes. A
// run that failed is among them (Outcome Failed); the error reports only
// what kept the ticker from firing or recording runs. It lists the
// schedules' next due times alone and reads the whole schedule of the
// due ones only; a stored schedule that does not decode is logged and
// skipped, and the others fire.
func (tk *Ticker) Tick(ctx context.Context, now time.Time) ([]Run, error) {
	all, bad, err := tk.store.NextRuns(ctx)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	for _, u := range bad {
		tk.log.Error("stored schedule does not decode: skipped (delete it, or save it again)", "schedule", u.Name, "err", u.Err)
	}
	var (
		runs []Run
		errs []error
	)
	for _, d := range all {
		if d.Next.IsZero() || d.Next.After(now) {
			continue
		}
		s, err := tk.store.Schedule(ctx, d.Name)
		switch {
		case apperr.Is(err, apperr.NotFound):
			continue // deleted since the listing
		case errors.Is(err, ErrUnreadable):
			tk.log.Error("stored schedule does not decode: skipped (delete it, or save it again)", "schedule", d.Name, "err", err)
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("schedule %s: %w", d.Name, err))
			continue
		}
		if s.Next.IsZero() || s.Next.After(now) {
			continue // claimed since the listing
		}
		run, ok, err := tk.fire(ctx, s, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", s.Name, err))
		}
		if ok {
			runs = append(runs, run)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return runs, errors.Join(errs...)
}

// fire claims s's due time and runs it; ok is false when another process
// claimed it first.
func (tk *Ticker) fire(ctx context.Context, s Schedule, now time.Time) (run Run, ok bool, err error) {
	log := tk.log.With("schedule", s.Name, "due", s.Next)
	var next time.Time
	spec, perr := ParseSpec(s.Cron, s.Timezone)
	if perr != nil {
		// Saved schedules were parsed when they were saved; this one is
		// damaged. It is claimed with no next time, so it stops firing
		// and its listing says why.
		log.Error("stored schedule does not parse", "cron", s.Cron, "timezone", s.Timezone, "err", perr)
	} else {
		// From now, not from the due time: the slots missed while no
		// process was up collapse into this one run.
		next = spec.Next(now)
	}
	run = Run{Due: s.Next, At: now.UTC()}
	claimed, err := tk.store.ClaimRun(ctx, s.Name, s.Next, next, run)
	if err != nil || !claimed {
		return Run{}, false, err
	}
	if perr != nil {
		run.Outcome, run.Reason = Failed, "The stored schedule no longer parses: "+apperr.Message(perr)
	} else {
		run = tk.run(ctx, s, run, log)
	}
	// The outcome is recorded even when ctx ended meanwhile (a shutdown, a
	// Lambda deadline): a job started and not recorded as such would not
	// hold back the next run.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	recorded, err := tk.store.RecordRun(rctx, s.Name, run)
	switch {
	case err != nil:
		err = fmt.Errorf("record run due %s: %w", run.Due.Format(time.RFC3339), err)
	case !recorded:
		log.Warn("run not recorded: the schedule was deleted or ran again since", "outcome", run.Outcome, "job", run.Job)
	}
	return run, true, err
}

// run starts s's request unless its previous run is still going, and
// returns the claimed run with its outcome.
func (tk *Ticker) run(ctx context.Context, s Schedule, run Run, log *slog.Logger) Run {
	if reason, err := tk.previousGoing(ctx, s, run.At); err != nil {
		log.Error("check the previous run of a schedule", "err", err)
		run.Outcome, run.Reason = Failed, "Could not check whether the previous run is still going: "+apperr.Message(err)
		return run
	} else if reason != "" {
		log.Info("scheduled run skipped", "reason", reason)
		run.Outcome, run.Reason = Skipped, reason
		return run
	}
	tasks, err := tk.start.Start(ctx, s.Layer, s.Request)
	if err != nil {
		if k := apperr.KindOf(err); k == apperr.Invalid || k == apperr.NotFound {
			log.Warn("scheduled request refused", "layer", s.Layer, "err", err)
			run.Outcome, run.Reason = Failed, apperr.Message(err)
		} else {
			log.Error("start scheduled request", "layer", s.Layer, "err", err)
			run.Outcome, run.Reason = Failed, "The request could not be submitted: "+apperr.Message(err)
		}
		return run
	}
	run.Outcome = Started
	for _, t := range tasks {
		run.Job = t.JobID
		run.Tasks = append(run.Tasks, t.ID)
	}
	log.Info("scheduled request started", "layer", s.Layer, "job", run.Job, "tasks", len(run.Tasks))
	return run
}

// previousGoing returns why s's previous run counts as still going at
// now, "" when it does not: its start is not recorded yet (and not older
// than ClaimTimeout), or its job has a PENDING or RUNNING task.
func (tk *Ticker) previousGoing(ctx context.Context, s Schedule, now time.Time) (string, error) {
	if l := s.Last; l != nil && l.Outcome == Claimed && now.Sub(l.At) < ClaimTimeout {
		return fmt.Sprintf("The previous run (due %s) is still starting", l.Due.Format(time.RFC3339)), nil
	}
	p := s.LastStarted
	if p == nil {
		return "", nil
	}
	for _, id := range p.Tasks {
		t, err := tk.tasks.Get(ctx, id)
		if apperr.Is(err, apperr.NotFound) {
			continue // finished long ago and expired
		}
		if err != nil {
			return "", fmt.Errorf("read task %d: %w", id, err)
		}
		if t.Status.Active() {
			return fmt.Sprintf("Job %d of the previous run (due %s) is still going: task %d is %s",
				p.Job, p.Due.Format(time.RFC3339), t.ID, t.Status), nil
		}
	}
	return "", nil
}

// Run calls Tick every interval until ctx ends, logging what fails.
func (tk *Ticker) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := tk.Tick(ctx, time.Now()); err != nil && ctx.Err() == nil {
			tk.log.Error("fire schedules", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
