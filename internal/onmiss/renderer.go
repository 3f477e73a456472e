// Package onmiss renders a tile a client asks for and the store lacks,
// with its whole metatile, through the metatile writer (metatile.Writer in
// reseed mode): no task, job or lane is made for a miss.
//
// What anonymous traffic can cost is bounded here: one render per metatile
// across processes (claims in the task store), a remembered outcome for
// blank and failed metatiles, the layer's share of its upstream's cap
// (metatile.UpstreamShares), bounded waiting, and a render that ends before
// the caller's deadline. Requests of the layer running beside a render win
// over its tiles (see afterMiss).
package onmiss

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/source"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// Options tune a Renderer. Zero values take the defaults documented per
// field.
type Options struct {
	// SourceOf, when set, returns the source a layer's tiles are rendered
	// from (New's sources map is then unused).
	SourceOf func(*layer.Layer) (source.Source, error)
	// Sync, when set, brings the layer catalogue up to the stored
	// configuration's newest version before a layer managed at run time
	// is rendered (see RenderMiss).
	Sync func(ctx context.Context) error
	// KeyPrefix is prepended to every tile key. Default none.
	KeyPrefix string
	// PutConcurrency bounds the tile writes of one metatile in flight at
	// once. Default 8.
	PutConcurrency int
	// Usage, if set, is where stored tiles are counted. Default none.
	Usage metatile.Usage
	// Claims, if set, is where processes claim a missed metatile so that
	// one of them renders it. Default none: misses render once per process.
	Claims Claims
	// ClaimTTL is how long a claim lasts unless released: longer than a
	// render's slowest answer, and no longer than the timeout of the
	// function that renders on miss. Default 60s.
	ClaimTTL time.Duration
	// Wait is the longest a miss waits for one of its layer's render
	// slots before it is answered ErrBusy (503). Default 3s.
	Wait time.Duration
	// Queue is the most misses of this process waiting for (or in) a
	// render at once; beyond it a miss is ErrBusy at once. Default 64.
	Queue int
	// Timeout bounds one render on miss (the upstream's answer, the
	// tiles stored). Default 20s: every miss is answered within the
	// CDN's origin timeout.
	Timeout time.Duration
	// Remember is how long a rendered metatile's outcome (which of its
	// tiles came out blank) is remembered: a miss of a blank tile is a 404
	// without a render meanwhile. Default 5m (longer than the CDN keeps a
	// 404).
	Remember time.Duration
	// FailureBackoff is how long a metatile whose render failed upstream
	// answers the same failure without asking again. Default 15s.
	FailureBackoff time.Duration
	// Now is the clock of the claims and of the remembered outcomes: when
	// a claim expires, when a render's outcome (Remember) or a failure's
	// back-off (FailureBackoff) lapses. Default time.Now; never read from
	// the environment (tests move it on rather than wait).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.PutConcurrency <= 0 {
		o.PutConcurrency = 8
	}
	if o.Queue <= 0 {
		o.Queue = 64
	}
	def(&o.ClaimTTL, 60*time.Second)
	def(&o.Wait, 3*time.Second)
	def(&o.Timeout, 20*time.Second)
	def(&o.Remember, 5*time.Minute)
	def(&o.FailureBackoff, 15*time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Tasks is what a render on miss reads of the task store: the tasks
// submitted during a render, and their jobs' ranges (see afterMiss).
type Tasks interface {
	List(ctx context.Context, since time.Time) ([]task.Task, error)
	Job(ctx context.Context, id int64) (task.Job, error)
}

// Renderer renders tiles on a miss. It is safe for concurrent use.
type Renderer struct {
	layers   *layer.Catalogue
	sources  metatile.Sources
	tiles    tilestore.Store
	tasks    Tasks
	accounts metatile.Accounts
	opts     Options
	log      *slog.Logger
	misses   singleflight.Group // renders in flight, by metatile
	memo     missMemo           // outcomes of renders, by metatile
	// waiting counts the misses waiting for (or in) a render.
	waiting atomic.Int64
	slotsMu sync.Mutex
	slots   map[string]chan struct{} // render slots without Claims, by layer
}

// New returns a renderer of the layers of layers. sources maps every layer
// name to the source its tiles are rendered from (unless Options.SourceOf
// is set).
func New(layers *layer.Catalogue, sources map[string]source.Source, tiles tilestore.Store, tasks Tasks, opts Options, log *slog.Logger) *Renderer {
	opts = opts.withDefaults()
	return &Renderer{layers: layers, sources: metatile.Sources{Of: opts.SourceOf, Map: sources}, tiles: tiles, tasks: tasks, opts: opts, log: log,
		accounts: metatile.Accounts{Usage: opts.Usage, Log: log}}
}

// SetClock replaces the renderer's clock (Options.Now) before it renders
// anything. Tests set a clock they move on.
func (rn *Renderer) SetClock(now func() time.Time) {
	if now != nil {
		rn.opts.Now = now
	}
}

func sleepErr(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return ctx.Err()
}
