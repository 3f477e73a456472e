package maintenance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/app/worker"
)

// HandleSchedule is the cleaner function's handler, run every minute by an
// EventBridge schedule: it re-enqueues lanes whose heartbeat is stale,
// starts pending tasks whose threads freed, submits the saved requests
// whose schedule is due (schedule.Ticker: each due time once among all
// invocations and processes), keeps disk usage right (recounts) and runs
// the disk-quota clean-up when it is due (quota.Cleaner.RunDue: at most one
// clean-up per cacheCleanUpFrequency among all processes; a frequency under
// a minute is in effect a minute here), then brings the documents of the
// tile store (after a cold start) and the edge path function's key-value
// store (after a cold start and a change of the layers) up to date. Each
// job is named; one that fails or panics is logged and named in the error
// returned, and the jobs after it still run.
//
// An event whose detail is {"recount": true} (or {"recount": ["layer", …]})
// — e.g. `aws lambda invoke --payload '{"detail":{"recount":true}}'` — also
// marks every layer (or those named) for a recount first.
func (p *Program) HandleSchedule(ctx context.Context, ev events.EventBridgeEvent) error {
	ctx = p.MetricsContext(ctx)
	defer p.FlushMetrics()
	defer p.FlushCDN(ctx)
	p.RefreshLayers(ctx)
	return runJobs(ctx, p.log, p.maintenanceJobs(ev))
}

// now is the time by the program's clock (Config.Now).
func (p *Program) now() time.Time {
	if p.cfg.Now != nil {
		return p.cfg.Now()
	}
	return time.Now()
}

// job is one named piece of the cleaner's work.
type job struct {
	name string
	run  func(ctx context.Context) error
}

// maintenanceJobs are the jobs of one invocation of the cleaner, in
// order: the work that keeps tasks and the quota moving first, then the
// documents of the tile store and the edge's grid sets, which read what
// upstreams answered (a stored vector tile's layers, say) and so come
// last, each bounded in time.
func (p *Program) maintenanceJobs(ev events.EventBridgeEvent) []job {
	jobs := []job{
		{"sweep", p.Engine.Pool.Sweep},
		{"schedules", func(ctx context.Context) error { _, err := p.Schedules.Tick(ctx, p.now()); return err }},
	}
	if layers, ok := recountRequest(ev.Detail); ok {
		jobs = append(jobs, job{"recount", func(ctx context.Context) error {
			done, err := p.Cleaner.Recount(ctx, layers)
			p.log.Info("recount requested", "layers", layers, "recounted", done)
			return err
		}})
	}
	jobs = append(jobs, job{"quota clean-up", func(ctx context.Context) error { return p.Cleaner.RunDue(ctx, p.now()) }})
	if !p.published {
		// The first invocation after a cold start (a deployment may have
		// brought a new layer file) brings the documents up to date; a
		// failed attempt (logged) is repeated by the next invocation.
		jobs = append(jobs, job{"publish", func(ctx context.Context) error {
			ctx, cancel := boundedBy(ctx, publishBudget)
			defer cancel()
			p.published = p.Publish(ctx)
			return nil
		}})
	}
	if p.edgeVersion != p.Registry.Catalogue().Version() {
		// Likewise the grid sets the CDN's edge path function maps with,
		// and again whenever the layers change (logged when it fails).
		jobs = append(jobs, job{"edge sync", func(ctx context.Context) error {
			ctx, cancel := boundedBy(ctx, publishBudget)
			defer cancel()
			p.syncEdge(ctx)
			return nil
		}})
	}
	return jobs
}

// publishBudget bounds the time the cleaner spends on the documents of
// the tile store, and on the edge's grid sets, in one invocation.
const publishBudget = 30 * time.Second

// boundedBy returns ctx bounded by d, and by what is left of its deadline
// less the CDN flush's budget (worker.FlushBudget).
func boundedBy(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl)-worker.FlushBudget)
	}
	return context.WithTimeout(ctx, max(d, 0))
}

// runJobs runs jobs one after the other; a job's failure, or its panic,
// is logged and named in the error returned, and never stops the jobs
// after it.
func runJobs(ctx context.Context, log *slog.Logger, jobs []job) error {
	var errs []error
	for _, j := range jobs {
		start := time.Now()
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return j.run(ctx)
		}()
		if err != nil {
			log.Error("maintenance job failed", "job", j.name, "seconds", time.Since(start).Seconds(), "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", j.name, err))
			continue
		}
		log.Debug("maintenance job done", "job", j.name, "seconds", time.Since(start).Seconds())
	}
	return errors.Join(errs...)
}

// recountRequest reads {"recount": true} or {"recount": ["a", "b"]} from an
// event's detail; nil layers mean every layer.
func recountRequest(detail json.RawMessage) ([]string, bool) {
	var d struct {
		Recount json.RawMessage `json:"recount"`
	}
	if len(detail) == 0 || json.Unmarshal(detail, &d) != nil || len(d.Recount) == 0 {
		return nil, false
	}
	var all bool
	if json.Unmarshal(d.Recount, &all) == nil {
		return nil, all
	}
	var layers []string
	if json.Unmarshal(d.Recount, &layers) == nil && len(layers) > 0 {
		return layers, true
	}
	return nil, false
}
