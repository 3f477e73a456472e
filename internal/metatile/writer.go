// Package metatile renders metatiles of one tile set through the layer's
// source and stores their tiles, counting the usage they change: what a
// seed, a reseed and a render on miss share (and the deletes of a
// truncate, which learn the sizes of what they delete the same way).
//
// A Writer is built from the source, the tile set, the tiles port, the
// mode and what its owner still visits; it knows nothing of tasks, jobs
// or lanes. Its owner counts its usage changes (Writer.Usage) and tells it
// which tiles it will still visit (Writer.Ahead), so that it can learn
// what is stored of them from listings rather than one request per tile.
package metatile

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/tilestore"
)

// Mode is what a writer does with the tiles it finds stored.
type Mode uint8

const (
	// Seed renders a metatile only where a tile of the request in it is
	// missing or stale, and stores the tiles that are missing, stale or
	// changed.
	Seed Mode = iota
	// Reseed renders every metatile and stores the tiles whose content
	// changed (a blank tile deletes the stored one).
	Reseed
)

// Tiles is what a writer does with the tile store.
type Tiles interface {
	Put(ctx context.Context, key string, data []byte, meta tilestore.Meta) error
	Stat(ctx context.Context, key string) (obj tilestore.Object, found bool, err error)
	Delete(ctx context.Context, keys []string) (int, error)
	List(ctx context.Context, prefix string, fn func(tilestore.Object) error) error
}

// Writer renders and stores the metatiles of one tile set. Its exported
// fields are set before its first use and not changed after; Render may
// be called from several goroutines at once.
type Writer struct {
	Tiles          Tiles
	Log            *slog.Logger
	PutConcurrency int // tile writes (and Stats) of one metatile at once
	Layer          *layer.Layer
	Subset         *grid.Subset
	Set            tilestore.TileSet
	Source         source.Source
	Format         string
	Parameters     map[string]string
	Mode           Mode
	// EmptyLevels are levels that held no tile when the work began: a
	// seed renders there without looking.
	EmptyLevels []int
	// By names the renders' owner in the metrics ("seed", "miss").
	By string
	// Ahead returns the tiles of level z the owner still visits (the
	// smallest range of whole metatile columns or rows holding them), or
	// false when none: listings are bounded by it.
	Ahead func(z int) (grid.TileRange, bool)
	// Changed reports columns of tiles of level z replaced or deleted
	// (the CDN's purge); nil when nobody listens.
	Changed func(set tilestore.TileSet, z int, minX, maxX int64)
	// Usage holds the usage changes not counted yet.
	Usage *Tally

	rendered  atomic.Int64 // source requests
	unchanged atomic.Int64 // tiles rendered as they were stored
	deletes   []tileRef    // queued by QueueDeletes

	lookMu sync.Mutex // held by lookup
	// listed caches what is stored of the tiles of columns it listed (see
	// lookup); listedKeys counts its entries. levels holds the levels it
	// listed whole, from the lowest of its current batch up.
	listed     map[column]*listedColumn
	listedKeys int
	levels     map[int]*listedLevel
}

// Rendered returns the source requests the writer made.
func (w *Writer) Rendered() int64 { return w.rendered.Load() }

// Unchanged returns the tiles the writer rendered as they were stored,
// and so did not store again.
func (w *Writer) Unchanged() int64 { return w.unchanged.Load() }

// changed reports replaced or deleted tiles to Changed.
func (w *Writer) changed(z int, minX, maxX int64) {
	if w.Changed != nil {
		w.Changed(w.Set, z, minX, maxX)
	}
}

// TileMeta is what is stored with a tile of level z: its content type
// and the layer's Cache-Control for z (expireClients rules, else
// cacheControl).
func (w *Writer) TileMeta(z int) tilestore.Meta {
	return tilestore.Meta{ContentType: source.ContentType(w.Format), CacheControl: w.Layer.TileCacheControl(z)}
}

// writesKey keys the context a writer's store writes run in.
type writesKey struct{}

// WithWrites returns ctx (which a kill may cancel) carrying parent, the
// context the writer's store writes run in (see WriteContext).
func WithWrites(ctx, parent context.Context) context.Context {
	return context.WithValue(ctx, writesKey{}, parent)
}

// WriteContext returns the context for store writes: ctx without a kill's
// cancellation when WithWrites gave it one (the parent's deadline and
// cancellation still hold), else ctx. A kill stops upstream traffic, but
// a metatile already rendered is stored, or a batch deleted, in full and
// counted: a write cut in half may have happened at the store while the
// client saw it fail, and a killed lane's usage, applied directly, would
// miss it.
func WriteContext(ctx context.Context) context.Context {
	if p, ok := ctx.Value(writesKey{}).(context.Context); ok {
		return p
	}
	return ctx
}
