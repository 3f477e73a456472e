// Package maintenance is the assembly of the cleaner function
// (HandleSchedule: the maintenance jobs, named, each isolated from the
// others' failures): the stale lanes' sweep and the pending tasks' start
// (the engine's pool), the schedules' ticker, the disk-quota cleaner, the
// documents of the tile store and the edge path function's key-value
// store. It builds on the worker's assembly (package worker: the engine,
// the purger, the documents) with the schedules' store beside its backends
// (package scheduling), and links no administration interface nor the
// rest of the administration's state (accounts, API tokens, the audit
// trail), console or embedded database. `tilecache serve` (package app)
// composes it with the REST interface and the tile serving.
package maintenance

import (
	"context"
	"log/slog"
	"time"

	"tilecache/internal/app/backends"
	"tilecache/internal/app/backends/scheduling"
	"tilecache/internal/app/core"
	"tilecache/internal/app/worker"
	"tilecache/internal/awsconf"
	"tilecache/internal/cdn/cloudfront"
	"tilecache/internal/config"
	"tilecache/internal/edgepath"
	"tilecache/internal/quota"
	"tilecache/internal/schedule"
	"tilecache/internal/task"
	"tilecache/internal/tiletoken"
)

// Config is what the cleaner reads of the configuration: the worker's,
// with the edge's key-value store and the tile token keys it writes there.
type Config struct {
	worker.Config
	config.Edge
	// Now is the clock of the maintenance: the due times of the schedules
	// and of the disk-quota clean-up, and when a layer is at rest for a
	// recount. Nil is time.Now; never read from the environment (tests
	// move it on rather than wait).
	Now func() time.Time
}

// Load reads the cleaner's configuration through lookup.
func Load(lookup config.Lookup) (Config, error) {
	w, err := worker.Load(lookup)
	if err != nil {
		return Config{}, err
	}
	e, err := config.Read[config.Edge](lookup)
	if err != nil {
		return Config{}, err
	}
	return Config{Config: w, Edge: e}, nil
}

// Of returns the cleaner's part of cfg.
func Of(cfg config.Config) Config {
	return Config{Config: worker.Of(cfg), Edge: cfg.Edge}
}

// Program is the maintenance's side of tilecache: what the cleaner
// function runs, and what `tilecache serve` runs beside its handlers and
// the lanes' workers, on the worker's program (whose fields and methods it
// has).
type Program struct {
	*worker.Program
	// Backends are the worker's backends (worker.Program.Backends) with
	// the schedules' store the ticker fires.
	Backends scheduling.Backends
	// Cleaner enforces the disk quota and keeps usage right.
	Cleaner *quota.Cleaner
	// Schedules fires the saved requests that are due (at every
	// invocation of HandleSchedule; `tilecache serve` runs it).
	Schedules *schedule.Ticker
	// TileKeys sign and check the tile tokens that open private layers
	// (set when keys are configured; `tilecache serve` makes one
	// otherwise); the edge sync writes the configured ones.
	TileKeys *tiletoken.Keyring

	cfg Config
	log *slog.Logger
	// published: HandleSchedule ran Publish in this process (Lambda
	// invokes one event at a time).
	published bool
	// edge is the key-value store of the CDN's edge path function (nil:
	// none); edgeVersion is the layer configuration whose grid sets
	// HandleSchedule wrote into it in this process (−1: none yet).
	edge        edgepath.KeyValues
	edgeVersion int64
}

// NewAWS builds the program on the tile bucket, task table and lane queue
// of cfg. Close releases what it opened.
func NewAWS(ctx context.Context, cfg Config, log *slog.Logger) (*Program, error) {
	return New(ctx, cfg, func(ctx context.Context) (scheduling.Backends, error) { return AWSBackends(ctx, cfg) }, log)
}

// AWSBackends connects to the bucket, table and queue of cfg with the
// schedules over the same table (see scheduling.AWS), the queue with the
// same AWS configuration (worker.LaneQueue).
func AWSBackends(ctx context.Context, cfg Config) (scheduling.Backends, error) {
	b, _, awsCfg, err := scheduling.AWS(ctx, cfg.AWS, cfg.Bucket, cfg.Table, cfg.StaleAfter)
	if err != nil {
		return scheduling.Backends{}, err
	}
	b.Queue = worker.LaneQueue(awsCfg, cfg.Config)
	return b, nil
}

// New builds the program on the backends open returns (through
// worker.New), opened once the tile token keys are read (from
// TILECACHE_TILE_TOKEN_KEYS_SECRET, when it names them). Close releases
// them.
func New(ctx context.Context, cfg Config, open func(context.Context) (scheduling.Backends, error), log *slog.Logger) (*Program, error) {
	keys, err := core.LoadTileTokenKeys(ctx, cfg.AWS, cfg.TileTokenKeys, cfg.TileTokenKeysSecret)
	if err != nil {
		return nil, err
	}
	cfg.TileTokenKeys = keys
	var sb scheduling.Backends
	w, err := worker.New(ctx, cfg.Config, func(ctx context.Context) (backends.Backends, error) {
		var err error
		sb, err = open(ctx)
		return sb.Backends, err
	}, log)
	if err != nil {
		return nil, err
	}
	p, err := build(ctx, cfg, w, sb, log)
	if err != nil {
		w.Close()
		return nil, err
	}
	return p, nil
}

// build wires the maintenance on w and the schedules of b.
func build(ctx context.Context, cfg Config, w *worker.Program, b scheduling.Backends, log *slog.Logger) (*Program, error) {
	layers := w.Registry.Catalogue()
	cleaner := quota.NewCleaner(b.Usage, b.Usage, b.Tiles, layers, taskActivity{b.Tasks}, quota.CleanerOptions{
		KeyPrefix: cfg.KeyPrefix, Settle: cfg.StaleAfter, Changes: w.Purger, Now: cfg.Now,
	}, log)
	schedules := schedule.NewTicker(b.Schedules, b.Tasks, ScheduledRequests{Submitter: w.Engine.Control}, log)
	p := &Program{Program: w, Backends: b, Cleaner: cleaner, Schedules: schedules, cfg: cfg, log: log, edgeVersion: -1}
	if cfg.TileTokenKeys != "" {
		// The configured keys, parsed once (config.Load and
		// LoadTileTokenKeys checked them): every program signs, checks and
		// writes to the edge these.
		var err error
		if p.TileKeys, err = tiletoken.ParseKeyring(cfg.TileTokenKeys); err != nil {
			return nil, err
		}
	}
	if cfg.EdgeGridSets != "" {
		awsCfg, err := awsconf.Load(ctx, cfg.AWS.Env, awsconf.WithRetry(core.AWSRetry(cfg.AWS)))
		if err != nil {
			return nil, err
		}
		p.edge = cloudfront.NewKeyValueStore(awsCfg, cfg.EdgeGridSets).WithLog(log)
	}
	return p, nil
}

// syncEdge writes the grid sets of the layers to the edge path function's
// key-value store where they differ, and records the configuration it
// wrote in edgeVersion (a failure is logged and tried again by the next
// call).
func (p *Program) syncEdge(ctx context.Context) {
	snap := p.Registry.Catalogue().Snapshot()
	if p.edge == nil {
		p.edgeVersion = snap.Version()
		return
	}
	var keys []tiletoken.Key
	if p.cfg.TileTokenKeys != "" { // the configured keys, never a key made at start
		keys = p.TileKeys.Keys()
	}
	// The grid sets, the private layers, the tile token keys (by id) and
	// the layers and grid geometries of the OGC bindings.
	changed, err := edgepath.SyncValues(ctx, p.edge, edgepath.ValuesOf(snap, keys))
	if err != nil {
		p.log.Error("write the edge path function's grid sets", "kvs", p.cfg.EdgeGridSets, "err", err)
		return
	}
	p.edgeVersion = snap.Version()
	if len(changed) > 0 {
		p.log.Info("edge path function's grid sets written", "kvs", p.cfg.EdgeGridSets, "grid_sets", changed)
	}
}

// taskActivity answers quota.Activity from the task store.
type taskActivity struct{ tasks task.Store }

// ActiveLayers implements quota.Activity: the layers of PENDING and
// RUNNING tasks, and of tasks killed since (a killed lane may store its
// last metatile before it notices). A task that ended DONE or aborted by
// its own lane has no writer left, so a layer whose tasks are done is
// recounted at the next maintenance rather than after a rest.
func (a taskActivity) ActiveLayers(ctx context.Context, since time.Time) (map[string]bool, error) {
	tasks, err := a.tasks.List(ctx, since)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, t := range tasks {
		if t.Status.Active() || t.Killed {
			out[t.Layer] = true
		}
	}
	return out, nil
}
