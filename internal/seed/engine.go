// Package seed plans seed, reseed and truncate requests into lanes over
// numbered metatiles, bounds running tasks with a global thread pool, and
// works lanes from queue messages.
//
// The flow: Submit validates a request (Prepare), records one task per lane
// and calls Dispatch, which promotes the oldest PENDING tasks while the pool
// has free threads and sends one lane message per promoted task. Every lane
// message comes in through Handle (the worker processes' RunWorkers and the
// Lambda worker alike), which works it (Work) for a bounded slice of time,
// checkpointing its cursor at least every CheckpointEvery; then it either
// finishes the task (and dispatches again, since a thread freed) or sends
// the continuation message. Because a checkpoint is a conditional write on the expected cursor
// and status RUNNING, a duplicated or redelivered message and a killed task
// both end at the next checkpoint without double counting. Sweep re-enqueues
// RUNNING tasks whose heartbeat went stale (a worker died between checkpoint
// and continuation).
package seed

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
	"tilecache/internal/queue"
	"tilecache/internal/source"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// Options tune the engine. Zero values take the defaults documented per field.
type Options struct {
	// SourceOf, when set, returns the source a layer's tiles are rendered
	// from, for layers that change at run time (a layer's Version names
	// its definition); New's sources map is then unused.
	SourceOf func(*layer.Layer) (source.Source, error)
	// Sync, when set, brings the layer catalogue up to the stored
	// configuration's newest version (layer.Registry.Sync: one small read
	// when nothing changed). Submit calls it before it reads the layer, so
	// that a layer another process deleted (or changed) moments ago is not
	// seeded on a catalogue up to a refresh period old.
	Sync func(ctx context.Context) error
	// Unmark, when set, removes the deletion mark of layer name with id
	// from the stored configuration (layer.Config.Unmark through
	// layer.Registry.Update): a deleted layer's truncation calls it when
	// every key under the id is gone (see StartDeletion).
	Unmark func(ctx context.Context, name, id string) error
	// TruncatePage is how many keys a deleted layer's truncation lists
	// and deletes between checkpoints. Default (and most)
	// tilestore.DeleteBatch.
	TruncatePage int
	// PoolSize bounds the number of RUNNING tasks. Default 16.
	PoolSize int
	// KeyPrefix is prepended to every tile key. Default none.
	KeyPrefix string
	// CheckpointEvery is the longest time between checkpoints (progress
	// writes) of a working lane. Default 8s: a lane writes one item per
	// checkpoint, and its usage pages on every 15th (see usageEvery).
	CheckpointEvery time.Duration
	// KillCheckEvery is how often a working lane reads its task to notice
	// a kill between checkpoints. Default 1s.
	KillCheckEvery time.Duration
	// Slice is the longest time one lane message is worked before the lane
	// continues in a new message. Default 5m.
	Slice time.Duration
	// SafetyMargin is kept before a context deadline (a Lambda's) when
	// deciding to stop claiming metatiles. Default 10s.
	SafetyMargin time.Duration
	// Retention is how long finished tasks stay in the task lists
	// (the contract allows at most 5 s). Default 3s.
	Retention time.Duration
	// StaleAfter is the heartbeat age after which Sweep re-enqueues a RUNNING
	// lane. It must exceed the slowest metatile. Default 2m.
	StaleAfter time.Duration
	// PutConcurrency bounds the tile writes of one metatile in flight at
	// once. Default 8.
	PutConcurrency int
	// Visibility is how long a received lane message stays invisible; the
	// worker extends it while working. Default 60s.
	Visibility time.Duration
	// Usage, if set, is where stored and deleted tiles are counted (see
	// Usage). Default none: nothing is counted.
	Usage Usage
	// Changes, if set, is told which stored tiles a reseed replaced or a
	// truncate deleted, so a CDN drops its cached copies. Default none.
	Changes Changes
	// Claims, if set, is where processes claim a missed metatile so that
	// one of them renders it (see Engine.RenderMiss). Default none: misses
	// render once per process.
	Claims Claims
	// ClaimTTL is how long a claim lasts unless released: longer than a
	// render's slowest answer, and no longer than the timeout of the
	// function that renders on miss. Default 60s.
	ClaimTTL time.Duration
	// MissWait is the longest a miss waits for one of its layer's render
	// slots before it is answered ErrBusy (503). Default 3s.
	MissWait time.Duration
	// MissQueue is the most misses of this process waiting for (or in) a
	// render at once; beyond it a miss is ErrBusy at once. Default 64.
	MissQueue int
	// MissTimeout bounds one render on miss (the upstream's answer, the
	// tiles stored). Default 20s: every miss is answered within the
	// CDN's origin timeout.
	MissTimeout time.Duration
	// MissRemember is how long a rendered metatile's outcome (which of its
	// tiles came out blank) is remembered: a miss of a blank tile is a 404
	// without a render meanwhile. Default 5m (longer than the CDN keeps a
	// 404).
	MissRemember time.Duration
	// MissFailureBackoff is how long a metatile whose render failed
	// upstream answers the same failure without asking again. Default 15s.
	MissFailureBackoff time.Duration
	// Documents, if set, keeps the documents that describe tile sets to
	// map clients: a seed or reseed makes sure its tile set has them, a
	// mass truncation removes the layer's from the index. Default none.
	Documents Documents
}

// Documents keeps the discovery documents of tile sets (and whatever else
// a bucket needs to be read by other programs).
type Documents interface {
	// Ensure writes the documents of a tile set where they are missing or
	// out of date, and returns the keys it changed.
	Ensure(ctx context.Context, layerName, gridSetID, format string, parameters map[string]string) (changed []string, err error)
	// RebuildIndex rewrites the index of tile sets after objects were
	// removed, and returns the keys it changed.
	RebuildIndex(ctx context.Context) (changed []string, err error)
}

// Changes hears of stored objects that were replaced or removed (the CDN
// purger). It must not block: it only records.
type Changes interface {
	// TilesChanged: tiles of set at level z in columns minX..maxX changed.
	TilesChanged(set tilestore.TileSet, z int, minX, maxX int64)
	// PrefixChanged: objects under a key prefix (ending in "/") changed.
	PrefixChanged(prefix string)
	// KeysChanged: single objects (documents) changed.
	KeysChanged(keys ...string)
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.PoolSize <= 0 {
		o.PoolSize = 16
	}
	if o.PutConcurrency <= 0 {
		o.PutConcurrency = 8
	}
	def(&o.CheckpointEvery, 8*time.Second)
	def(&o.KillCheckEvery, time.Second)
	def(&o.Slice, 5*time.Minute)
	def(&o.SafetyMargin, 10*time.Second)
	def(&o.Retention, 3*time.Second)
	def(&o.StaleAfter, 2*time.Minute)
	def(&o.Visibility, 60*time.Second)
	def(&o.ClaimTTL, 60*time.Second)
	def(&o.MissWait, 3*time.Second)
	def(&o.MissTimeout, 20*time.Second)
	def(&o.MissRemember, 5*time.Minute)
	def(&o.MissFailureBackoff, 15*time.Second)
	if o.MissQueue <= 0 {
		o.MissQueue = 64
	}
	return o
}

// usageEvery is the longest a lane holds usage changes back from its
// checkpoints (see lane.run).
func (o Options) usageEvery() time.Duration { return 15 * o.CheckpointEvery }

// takeoverAfter is the heartbeat age after which a redelivered lane
// message behind the task's cursor takes the lane over.
func (o Options) takeoverAfter() time.Duration { return 5 * o.CheckpointEvery }

// Engine ties the ports together. It is safe for concurrent use.
type Engine struct {
	layers  *layer.Catalogue
	sources map[string]source.Source // by layer name
	tasks   task.Store
	queue   queue.Queue
	tiles   tilestore.Store
	opts    Options
	log     *slog.Logger
	misses  singleflight.Group // renders on miss in flight, by metatile
	memo    missMemo           // outcomes of renders on miss, by metatile
	// missWaiting counts the misses waiting for (or in) a render.
	missWaiting atomic.Int64
	live        sync.Map // task id → *atomic.Int64: tiles processed by a lane worked here, checkpointed or not
	ratesMu     sync.Mutex
	rates       map[string]rate // per layer, see noteRate
	slotsMu     sync.Mutex
	slots       map[string]chan struct{} // render-on-miss slots without Claims, by layer
	poll        taskPoll                 // the tasks of the lanes working here, read for kills
	widths      jobWidths                // lanes worked here per job (see lane.width)
	areas       areaCache                // the areas of requests read here
	definitions sync.Map                 // layer Version → *layer.Layer: recorded definitions of jobs' layers
}

// New returns an engine. sources maps every layer name of layers to the
// source its tiles are rendered from (unless Options.SourceOf is set).
func New(layers *layer.Catalogue, sources map[string]source.Source, tasks task.Store, q queue.Queue, tiles tilestore.Store, opts Options, log *slog.Logger) *Engine {
	return &Engine{layers: layers, sources: sources, tasks: tasks, queue: q, tiles: tiles, opts: opts.withDefaults(), log: log}
}

// source returns the source layer l's tiles are rendered from.
func (e *Engine) source(l *layer.Layer) (source.Source, bool) {
	if e.opts.SourceOf != nil {
		s, err := e.opts.SourceOf(l)
		if err != nil {
			e.log.Error("build the layer's source", "layer", l.Name, "err", err)
			return nil, false
		}
		return s, true
	}
	s, ok := e.sources[l.Name]
	return s, ok
}

// sourceOf is source without the flag (nil when there is none).
func (e *Engine) sourceOf(l *layer.Layer) source.Source {
	s, _ := e.source(l)
	return s
}

// jobLayer returns the definition of job's layer the job started with:
// the current one when it has not changed, the recorded one otherwise.
func (e *Engine) jobLayer(job task.Job) (*layer.Layer, error) {
	l, ok := e.layers.Layer(job.Layer)
	if ok && (job.LayerVersion == "" || l.Version == job.LayerVersion) {
		return l, nil
	}
	if job.Definition == "" {
		if !ok {
			return nil, apperr.Invalidf("layer %s is no longer configured", job.Layer)
		}
		return l, nil
	}
	if v, ok := e.definitions.Load(job.LayerVersion); ok {
		return v.(*layer.Layer), nil
	}
	rec, err := layer.ParseDefinition([]byte(job.Definition), job.Layer)
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "job %d: %v", job.ID, err)
	}
	e.definitions.Store(job.LayerVersion, rec)
	return rec, nil
}

// Layers returns the layer catalogue.
func (e *Engine) Layers() *layer.Catalogue { return e.layers }

// Options returns the effective options.
func (e *Engine) Options() Options { return e.opts }

// Capped is a source whose upstream takes at most a set number of requests
// in flight (a layer's maxConcurrent), however many processes seed it.
type Capped interface {
	// UpstreamCap returns the cap and the most requests one lane has in
	// flight at once for metatiles of metaW×metaH tiles.
	UpstreamCap(metaW, metaH int) (limit, perLane int)
}

// upstreamShares splits a layer's upstream cap (maxConcurrent, across
// every process and Lambda worker of a deployment) between seeding and
// render on miss: lanes is the most RUNNING tasks the layer may have (the
// store promotes its pending tasks only below it), misses the most renders
// on miss at once (slots claimed in the task store). A layer that renders
// on miss gives half its cap (at least one request) to misses. Each side
// gets at least one, so a cap of 1 with render on miss allows 2. 0: no cap.
func (e *Engine) upstreamShares(layerName string) (lanes, misses int) {
	l, ok := e.layers.Layer(layerName)
	if !ok {
		return 0, 0
	}
	c, ok := e.sourceOf(l).(Capped)
	if !ok {
		return 0, 0
	}
	limit, perLane := c.UpstreamCap(l.MetaWidth, l.MetaHeight)
	if limit <= 0 {
		return 0, 0
	}
	perLane = max(perLane, 1)
	share := 0
	if l.RenderOnMiss != nil {
		share = max(1, limit/2)
		misses = max(1, share/perLane)
	}
	return max(1, (limit-share)/perLane), misses
}

// laneCap is the most RUNNING tasks a layer may have (0: no cap).
func (e *Engine) laneCap(layerName string) int {
	lanes, _ := e.upstreamShares(layerName)
	return lanes
}

// tilesChanged reports replaced or deleted tiles to Changes, if set.
func (e *Engine) tilesChanged(set tilestore.TileSet, z int, minX, maxX int64) {
	if e.opts.Changes != nil {
		e.opts.Changes.TilesChanged(set, z, minX, maxX)
	}
}

// tileSet returns the tile set a job reads and writes.
func (e *Engine) tileSet(l *layer.Layer, gridSetID, format, parametersID string) tilestore.TileSet {
	id, ext, _ := tilestore.Format(format)
	return tilestore.TileSet{SetName: tilestore.SetName{Layer: l.Name, GridSetID: gridSetID, FormatID: id, ParametersID: parametersID},
		Prefix: e.opts.KeyPrefix, LayerID: l.ID, Ext: ext}
}
