package rest

// GET /rest/seed.json?requests=1, an extension of this project: the task
// list folded by request (job), each with what was asked (type, grid set,
// format, parameters, levels, bounds, who submitted it, when) and its
// lanes, the finished ones included for as long as the task store lists
// them (up to requestsHistory), for a console's tasks page. Without the
// parameter, GET /rest/seed.json is GeoWebCache's list (contract §5.1),
// unchanged.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/task"
)

// JobReader reads a request's job (task.Store does).
type JobReader interface {
	Job(ctx context.Context, id int64) (task.Job, error)
}

// requestsHistory is how far back the folded list asks for finished
// tasks (the stores keep them listed at least that long).
const requestsHistory = time.Hour

// maxCachedJobs bounds the jobs kept in memory: a job never changes once
// created, so each is read once per process while it is listed.
const maxCachedJobs = 4096

// jobCache keeps jobs read for the folded list.
type jobCache struct {
	mu   sync.Mutex
	jobs map[int64]task.Job
}

func (c *jobCache) get(ctx context.Context, r JobReader, id int64) (task.Job, bool, error) {
	c.mu.Lock()
	j, ok := c.jobs[id]
	c.mu.Unlock()
	if ok {
		return j, true, nil
	}
	j, err := r.Job(ctx, id)
	if apperr.Is(err, apperr.NotFound) {
		return task.Job{}, false, nil
	}
	if err != nil {
		return task.Job{}, false, err
	}
	c.mu.Lock()
	if c.jobs == nil || len(c.jobs) >= maxCachedJobs {
		c.jobs = map[int64]task.Job{}
	}
	c.jobs[id] = j
	c.mu.Unlock()
	return j, true, nil
}

type requestsAnswer struct {
	// KeptSeconds is how far back finished requests are asked for.
	KeptSeconds int64           `json:"keptSeconds"`
	Requests    []requestAnswer `json:"requests"`
}

type requestAnswer struct {
	Job        int64             `json:"job"`
	Layer      string            `json:"layer"`
	Type       string            `json:"type"`
	GridSet    string            `json:"gridSet,omitempty"`
	Format     string            `json:"format,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	ZoomStart  *int              `json:"zoomStart,omitempty"`
	ZoomStop   *int              `json:"zoomStop,omitempty"`
	// Bounds are the request's bounds in the grid set's CRS (clipped to
	// its area when it gave one), Extent the grid set's.
	Bounds *[4]float64 `json:"bounds,omitempty"`
	Extent *[4]float64 `json:"extent,omitempty"`
	// Area says the request was restricted to a geometry or tile list
	// within Bounds.
	Area        bool   `json:"area,omitempty"`
	SubmittedBy string `json:"submittedBy,omitempty"`
	Created     string `json:"created"`
	// Finished is when its last lane ended (null while one is active).
	Finished *string `json:"finished"`
	// Status is RUNNING or PENDING while a lane is, then ABORTED when a
	// lane failed (its job's other lanes are killed), KILLED when one was
	// killed, else DONE.
	Status string       `json:"status"`
	Done   int64        `json:"done"`
	Total  int64        `json:"total"`
	Tasks  []laneAnswer `json:"tasks"`
	// Lanes is how many tasks the request made (some may no longer be
	// listed).
	Lanes int `json:"lanes"`

	tasks []task.Task // its listed lanes, folded into the above
}

type laneAnswer struct {
	ID       int64   `json:"id"`
	Status   string  `json:"status"`
	Killed   bool    `json:"killed,omitempty"`
	Done     int64   `json:"done"`
	Total    int64   `json:"total"`
	Finished *string `json:"finished"`
}

// listRequests answers GET /rest/seed.json?requests=1.
func (ts tasksResource) listRequests(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	// The engine's list carries the progress lanes made since their last
	// checkpoint; the store's the finished ones kept longer.
	live, err := ts.tasks.List(ctx, "")
	if err != nil {
		return err
	}
	var kept []task.Task
	if ts.recent != nil {
		if kept, err = ts.recent.List(ctx, time.Now().Add(-requestsHistory)); err != nil {
			return err
		}
	}
	byID := make(map[int64]task.Task, len(kept)+len(live))
	for _, t := range kept {
		byID[t.ID] = t
	}
	for _, t := range live {
		if k, ok := byID[t.ID]; !ok || t.Status != k.Status || t.Done >= k.Done {
			byID[t.ID] = t
		}
	}
	reqs := map[int64]*requestAnswer{}
	for _, t := range byID {
		q := reqs[t.JobID]
		if q == nil {
			q = &requestAnswer{Job: t.JobID, Layer: t.Layer, Type: t.Type.String(), Created: t.Created.UTC().Format(time.RFC3339Nano)}
			reqs[t.JobID] = q
		}
		q.tasks = append(q.tasks, t)
	}
	ans := requestsAnswer{KeptSeconds: int64(requestsHistory / time.Second), Requests: make([]requestAnswer, 0, len(reqs))}
	for _, q := range reqs {
		if err := ts.fold(ctx, q); err != nil {
			return err
		}
		ans.Requests = append(ans.Requests, *q)
	}
	slices.SortFunc(ans.Requests, func(a, b requestAnswer) int { return cmp.Compare(b.Job, a.Job) })
	body, err := json.Marshal(ans)
	if err != nil {
		return apperr.Wrap(apperr.Internal, err, "encode the requests")
	}
	writeBody(w, "application/json", body)
	return nil
}

// fold fills a request's answer from its lanes and its job.
func (ts tasksResource) fold(ctx context.Context, q *requestAnswer) error {
	slices.SortFunc(q.tasks, func(a, b task.Task) int { return cmp.Compare(a.ID, b.ID) })
	var running, pending, killed, aborted bool
	var finished time.Time
	for _, t := range q.tasks {
		l := laneAnswer{ID: t.ID, Status: t.Status.String(), Killed: t.Killed, Done: t.Done, Total: t.Total}
		if t.Status == task.Pending {
			l.Done = 0
		}
		if !t.Finished.IsZero() && !t.Status.Active() {
			s := t.Finished.UTC().Format(time.RFC3339Nano)
			l.Finished = &s
			if t.Finished.After(finished) {
				finished = t.Finished
			}
		}
		switch {
		case t.Status == task.Running:
			running = true
		case t.Status == task.Pending:
			pending = true
		case t.Killed:
			killed = true
		case t.Status == task.Aborted:
			aborted = true
		}
		q.Done += l.Done
		q.Total += t.Total
		q.Tasks = append(q.Tasks, l)
	}
	switch {
	case running:
		q.Status = "RUNNING"
	case pending:
		q.Status = "PENDING"
	case aborted:
		// A failure aborts the job's other lanes by killing them: the
		// request failed, whatever else was killed.
		q.Status = "ABORTED"
	case killed:
		q.Status = "KILLED"
	default:
		q.Status = "DONE"
	}
	if !running && !pending && !finished.IsZero() {
		s := finished.UTC().Format(time.RFC3339Nano)
		q.Finished = &s
	}
	q.Lanes = len(q.Tasks)
	if ts.jobs == nil {
		return nil
	}
	j, ok, err := ts.jobs.get(ctx, ts.jobReader, q.Job)
	if errors.Is(err, context.Canceled) {
		return err
	}
	if err != nil || !ok {
		// The list is still worth answering without the request's fields.
		return nil
	}
	r := j.Range()
	q.Layer, q.Type, q.GridSet, q.Format, q.Parameters = j.Layer, j.Type.String(), r.GridSetID, r.Format, r.Parameters
	q.ZoomStart, q.ZoomStop = &r.ZoomStart, &r.ZoomStop
	q.Area, q.SubmittedBy = r.Area != "", j.SubmittedBy
	if !j.Created.IsZero() {
		q.Created = j.Created.UTC().Format(time.RFC3339Nano)
	}
	q.Lanes = max(q.Lanes, j.Lanes)
	if !j.LayerDeletion() {
		b := r.Bounds
		q.Bounds = &b
		if g, _, ok := ts.layers.GridSet(r.GridSetID); ok {
			e := [4]float64{g.Extent.MinX, g.Extent.MinY, g.Extent.MaxX, g.Extent.MaxY}
			q.Extent = &e
		}
	}
	return nil
}

// newTasksResource is the tasks resource of svc; the folded list reads
// the jobs from opts.Recent when it can (task.Store can).
func newTasksResource(svc Services, opts Options) tasksResource {
	ts := tasksResource{tasks: svc.Tasks, planner: svc.Planner, layers: svc.Layers, basePath: opts.BasePath, recent: opts.Recent}
	if jr, ok := opts.Recent.(JobReader); ok {
		ts.jobReader, ts.jobs = jr, &jobCache{}
	}
	return ts
}
