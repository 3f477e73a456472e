package seed

import (
	"log/slog"
	"time"

	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/source"
	"tilecache/internal/tilestore"
)

// Planner is the planning side of seeding: what follows from a request,
// the layer catalogue and what is stored, without a task store or a
// queue. It validates and plans requests (Prepare), says what they would
// cost (Estimate), reads tile lists (ReadTileList) and finds the tiles a
// layer change orphaned, deleting them when asked (Orphans). The engine
// submits what its planner plans (Engine.Planner). It is safe for
// concurrent use.
type Planner struct {
	layers   *layer.Catalogue
	sources  metatile.Sources
	tiles    tilestore.Store
	opts     PlannerOptions
	log      *slog.Logger
	accounts metatile.Accounts // where removed orphans mark their layer for a recount
	rates    *layerRates       // per layer, measured by the lanes of this process
}

// PlannerOptions tune a planner. Zero values take the defaults documented
// per field; the engine's planner takes the engine's Options of the same
// names.
type PlannerOptions struct {
	// SourceOf, when set, returns the source a layer's tiles are rendered
	// from (see Options.SourceOf); NewPlanner's sources map is then unused.
	SourceOf func(*layer.Layer) (source.Source, error)
	// KeyPrefix is prepended to every key. Default none.
	KeyPrefix string
	// PoolSize is the most RUNNING tasks an estimate counts on. Default 16.
	PoolSize int
	// Slice is the longest one lane message is worked, which an estimate
	// counts queue messages by. Default 5m.
	Slice time.Duration
	// Usage, if set, is the disk usage: an estimate takes the layer's
	// average tile size from it, and a removal of orphans marks the layer
	// for a recount. Default none.
	Usage Usage
	// Changes, if set, is told of the tiles a removal of orphans deleted.
	// Default none.
	Changes Changes
}

func (o PlannerOptions) withDefaults() PlannerOptions {
	if o.PoolSize <= 0 {
		o.PoolSize = 16
	}
	if o.Slice <= 0 {
		o.Slice = 5 * time.Minute
	}
	return o
}

// NewPlanner returns a planner over layers and the tile store tiles.
// sources maps every layer name of layers to the source its tiles are
// rendered from (unless PlannerOptions.SourceOf is set); an estimate asks
// it how many upstream requests a metatile costs.
func NewPlanner(layers *layer.Catalogue, sources map[string]source.Source, tiles tilestore.Store, opts PlannerOptions, log *slog.Logger) *Planner {
	opts = opts.withDefaults()
	return &Planner{layers: layers, sources: metatile.Sources{Of: opts.SourceOf, Map: sources}, tiles: tiles, opts: opts, log: log,
		accounts: metatile.Accounts{Usage: opts.Usage, Log: log}, rates: &layerRates{}}
}

// planner returns the options of the engine's planner.
func (o Options) planner() PlannerOptions {
	return PlannerOptions{SourceOf: o.SourceOf, KeyPrefix: o.KeyPrefix, PoolSize: o.PoolSize, Slice: o.Slice, Usage: o.Usage, Changes: o.Changes}
}

// sourceOf returns the source layer l's tiles are rendered from, nil when
// it has none or it cannot be built (logged).
func (pl *Planner) sourceOf(l *layer.Layer) source.Source {
	s, err := pl.sources.Source(l)
	if err != nil {
		pl.log.Error("build the layer's source", "layer", l.Name, "err", err)
	}
	return s
}
