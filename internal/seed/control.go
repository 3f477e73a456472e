// The control plane: requests submitted, tasks listed and killed.

package seed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// Control is the engine's control plane: it takes seed, reseed and
// truncate requests (Submit: planned by the planner, recorded, started as
// the pool allows), lists tasks with the progress of the lanes worked
// here (List), and kills them (Kill, KillTask). It is safe for concurrent
// use.
type Control struct {
	planner  *Planner
	tasks    task.Store
	tiles    tilestore.Store
	pool     *Pool
	working  *working // the lanes worked here, for their live progress
	opts     Options
	log      *slog.Logger
	accounts metatile.Accounts
	docs     docKeeper
}

// submitterKey is the context key of who submits requests (WithSubmitter).
type submitterKey struct{}

// WithSubmitter returns ctx naming who submits the requests made with it,
// recorded as their job's SubmittedBy: the account or API token of an
// administration request, as the assembly that serves the REST interface
// words it (package app, from the authenticated principal). The engine
// reads no credentials itself, so that the assemblies without an
// administration interface (the worker, the cleaner) link none.
func WithSubmitter(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, submitterKey{}, who)
}

// submitterOf returns who submits requests made with ctx ("" when
// WithSubmitter named no one: a schedule's run).
func submitterOf(ctx context.Context) string {
	who, _ := ctx.Value(submitterKey{}).(string)
	return who
}

// Submit validates and records a request, starts what the pool allows, and
// returns the created tasks as they are after that first dispatch. A
// rejected request records nothing and consumes no task ids.
func (c *Control) Submit(ctx context.Context, r gwc.SeedRequest) ([]task.Task, error) {
	if c.opts.Sync != nil {
		if err := c.opts.Sync(ctx); err != nil {
			return nil, fmt.Errorf("read the layer configuration before a %s request for layer %s: %w", r.Type, r.Layer, err)
		}
	}
	p, err := c.planner.Prepare(r)
	if err != nil {
		return nil, err
	}
	if p.AreaData != nil {
		if err := c.storeArea(ctx, p.Job.Range().Area, p.AreaData); err != nil {
			return nil, err
		}
	}
	if len(p.Job.Range().Parameters) > 0 && p.Job.Type != task.Truncate {
		if err := c.writeParameters(ctx, p.Layer, p.Job); err != nil {
			return nil, err
		}
	}
	if p.Job.Type != task.Truncate {
		c.docs.ensure(ctx, p.Job)
	}
	if p.Job.Type == task.Seed {
		empty, err := c.emptyLevels(ctx, p.Layer, p.Job)
		if err != nil {
			return nil, err
		}
		p.Job = p.Job.WithEmptyLevels(empty)
	}
	p.Job.SubmittedBy = submitterOf(ctx)
	job, tasks, err := c.tasks.Create(ctx, p.Job, p.Lanes, time.Now())
	if err != nil {
		return nil, fmt.Errorf("record %s request for layer %s: %w", p.Job.Type, p.Job.Layer, err)
	}
	c.log.Info("request recorded", "layer", job.Layer, "job", job.ID, "type", job.Type.String(),
		"grid_set", job.Range().GridSetID, "format", job.Range().Format, "parameters_id", job.Range().ParametersID,
		"zoom_start", job.Range().ZoomStart, "zoom_stop", job.Range().ZoomStop, "tiles", job.Tiles, "tasks", len(tasks))
	if err := c.checkConcurrentWriters(ctx, job); err != nil {
		c.log.Error("check concurrent requests", "job", job.ID, "err", err)
		c.accounts.MarkDirty(ctx, job.Layer, "could not check for concurrent requests")
	}
	promoted, err := c.pool.Dispatch(ctx)
	if err != nil {
		// The tasks are recorded; the sweep starts them later.
		c.log.Error("dispatch after submit", "job", job.ID, "err", err)
	}
	for i := range tasks {
		for _, pt := range promoted {
			if pt.ID == tasks[i].ID {
				// A promoted task carries its listed fields only.
				tasks[i].Status, tasks[i].Heartbeat, tasks[i].Cursor = pt.Status, pt.Heartbeat, pt.Cursor
			}
		}
	}
	return tasks, nil
}

// checkConcurrentWriters marks the job's layer for a recount when another
// active request works the same tile set: two writers of one tile may
// both count it (each finds it missing), and a truncate may count a tile
// another request stores after its Stat.
func (c *Control) checkConcurrentWriters(ctx context.Context, job task.Job) error {
	if c.opts.Usage == nil {
		return nil
	}
	active, err := c.tasks.List(ctx, time.Now())
	if err != nil {
		return err
	}
	seen := map[int64]bool{job.ID: true}
	for _, t := range active {
		if t.Layer != job.Layer || !t.Status.Active() || seen[t.JobID] {
			continue
		}
		seen[t.JobID] = true
		other, err := c.tasks.Job(ctx, t.JobID)
		if err != nil {
			return err
		}
		if other.Range().GridSetID == job.Range().GridSetID && other.Range().Format == job.Range().Format && other.Range().ParametersID == job.Range().ParametersID {
			c.accounts.MarkDirty(ctx, job.Layer, fmt.Sprintf("requests %d and %d work one tile set at once", other.ID, job.ID))
			return nil
		}
	}
	return nil
}

// errStop ends a listing early.
var errStop = errors.New("stop listing")

// emptyLevels lists the job's zoom levels at which its tile set holds no
// tile, with one short listing per level.
func (c *Control) emptyLevels(ctx context.Context, l *layer.Layer, job task.Job) ([]int, error) {
	rng := job.Range()
	set := metatile.TileSet(c.opts.KeyPrefix, l, rng.GridSetID, rng.Format, rng.ParametersID)
	var empty []int
	for z := rng.ZoomStart; z <= rng.ZoomStop; z++ {
		found := false
		err := c.tiles.List(ctx, set.LevelDir(z), func(tilestore.Object) error {
			found = true
			return errStop
		})
		if err != nil && !errors.Is(err, errStop) {
			return nil, fmt.Errorf("check stored tiles of level %d: %w", z, err)
		}
		if !found {
			empty = append(empty, z)
		}
	}
	return empty, nil
}

// writeParameters stores the parameters side object of contract §9 so a
// bucket reader (GeoWebCache among them) can tell what a parameters id
// stands for: a java.util.Properties object, one entry per parameter.
func (c *Control) writeParameters(ctx context.Context, l *layer.Layer, job task.Job) error {
	data, err := gwc.ParametersObject(job.Range().Parameters)
	if err != nil {
		return fmt.Errorf("encode parameters of layer %s: %w", l.Name, err)
	}
	key := tilestore.ParametersKey(c.opts.KeyPrefix, l.ID, job.Range().ParametersID)
	if err := c.tiles.Put(ctx, key, data, gwc.Meta()); err != nil {
		return fmt.Errorf("store parameters of layer %s: %w", l.Name, err)
	}
	return nil
}

// List returns the listed tasks of contract §5.1: PENDING and RUNNING
// tasks plus those finished within the retention time, of one layer or of
// all layers when layer is "".
func (c *Control) List(ctx context.Context, layer string) ([]task.Task, error) {
	all, err := c.tasks.List(ctx, time.Now().Add(-c.opts.Retention))
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	for i, t := range all {
		// Lanes worked in this process report their progress between
		// checkpoints, without a store write.
		if done, ok := c.working.progress(t.ID); ok && t.Status == task.Running {
			all[i].Done = min(max(t.Done, done), t.Total)
		}
	}
	if layer == "" {
		return all, nil
	}
	out := all[:0]
	for _, t := range all {
		if t.Layer == layer {
			out = append(out, t)
		}
	}
	return out, nil
}

// KillSet says which tasks a kill request terminates.
type KillSet int

// The kill_all codes of contract §6.
const (
	KillAll KillSet = iota
	KillRunning
	KillPending
)

// ParseKillSet reads a kill_all code, case-insensitively.
func ParseKillSet(code string) (KillSet, error) {
	switch strings.ToLower(code) {
	case "all":
		return KillAll, nil
	case "running", "1":
		return KillRunning, nil
	case "pending":
		return KillPending, nil
	}
	return 0, apperr.Invalidf("Unknown kill_all code: '%s'. One of all|running|pending is expected.", code)
}

func (k KillSet) includes(s task.Status) bool {
	switch k {
	case KillRunning:
		return s == task.Running
	case KillPending:
		return s == task.Pending
	}
	return s.Active()
}

// Kill terminates the tasks of set, of one layer or of all layers when
// layer is "". It returns the terminated tasks as they were before (state
// at kill time) and the listed tasks that had already finished.
func (c *Control) Kill(ctx context.Context, layer string, set KillSet) (killed, finished []task.Task, err error) {
	listed, err := c.List(ctx, layer)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	for _, t := range listed {
		for attempt := 0; ; attempt++ {
			if !t.Status.Active() {
				finished = append(finished, t)
				break
			}
			if !set.includes(t.Status) {
				break
			}
			before, err := c.tasks.Kill(ctx, t.ID, t.Status, now)
			if err == nil {
				killed = append(killed, before)
				c.log.Info("task killed", "task", t.ID, "layer", t.Layer, "was", before.Status.String())
				break
			}
			if !apperr.Is(err, apperr.Conflict) || attempt == 3 {
				return killed, finished, fmt.Errorf("kill task %d: %w", t.ID, err)
			}
			// The task moved on (promoted or finished) since it was listed.
			if t, err = c.tasks.Get(ctx, t.ID); err != nil {
				return killed, finished, fmt.Errorf("kill task %d: %w", t.ID, err)
			}
		}
	}
	if len(killed) > 0 {
		if _, err := c.pool.Dispatch(ctx); err != nil {
			c.log.Error("dispatch after kill", "err", err)
		}
	}
	return killed, finished, nil
}

// storeArea writes a request's prepared area where its workers read it.
func (c *Control) storeArea(ctx context.Context, key string, data []byte) error {
	if err := c.tiles.Put(ctx, key, data, tilestore.Meta{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("store the request's area: %w", err)
	}
	return nil
}

// KillTask terminates task id when it is PENDING or RUNNING, as Kill
// terminates each task of its set: the store's conditional kill, which a
// lane worked in any process notices at its next check. When layer is not
// "", the task must be of that layer. It returns the task as it was
// before the kill, or as it is when it had already finished (killed
// false). An id no task has is NotFound; a task of another layer Invalid.
func (c *Control) KillTask(ctx context.Context, layer string, id int64) (t task.Task, killed bool, err error) {
	t, err = c.tasks.Get(ctx, id)
	if apperr.Is(err, apperr.NotFound) {
		return task.Task{}, false, apperr.New(apperr.NotFound, "Unknown task: %d", id)
	}
	if err != nil {
		return task.Task{}, false, fmt.Errorf("kill task %d: %w", id, err)
	}
	if layer != "" && t.Layer != layer {
		return task.Task{}, false, apperr.Invalidf("Task %d is a task of layer %s, not of %s", id, apperr.Show(t.Layer), apperr.Show(layer))
	}
	for attempt := 0; t.Status.Active(); attempt++ {
		before, err := c.tasks.Kill(ctx, id, t.Status, time.Now())
		if err == nil {
			c.log.Info("task killed", "task", id, "layer", t.Layer, "was", before.Status.String())
			if _, err := c.pool.Dispatch(ctx); err != nil {
				c.log.Error("dispatch after kill", "err", err)
			}
			return before, true, nil
		}
		if !apperr.Is(err, apperr.Conflict) || attempt == 3 {
			return t, false, fmt.Errorf("kill task %d: %w", id, err)
		}
		// The task moved on (promoted or finished) since it was read.
		if t, err = c.tasks.Get(ctx, id); err != nil {
			return t, false, fmt.Errorf("kill task %d: %w", id, err)
		}
	}
	return t, false, nil
}
