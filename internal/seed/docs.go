// The documents that describe tile sets to map clients, kept as requests
// are made, finished and truncated.

package seed

import (
	"context"
	"log/slog"

	"tilecache/internal/metatile"
	"tilecache/internal/task"
	"tilecache/internal/vectortile"
)

// docKeeper keeps the documents of tile sets (Options.Documents, nil:
// none) and tells the CDN which of them changed (Options.Changes, nil:
// none). A failure is logged, never a reason to refuse or fail work: the
// documents are written again by the next request and by Documents' own
// refreshes.
type docKeeper struct {
	docs    Documents
	changes Changes
	log     *slog.Logger
}

// ensure makes sure the job's tile set is described to map clients
// before it gets tiles.
func (d docKeeper) ensure(ctx context.Context, job task.Job) {
	r := job.Range()
	if d.docs == nil {
		return
	}
	changed, err := d.docs.Ensure(ctx, job.Layer, r.GridSetID, r.Format, r.Parameters)
	if err != nil {
		d.log.Error("write the documents of a tile set", "layer", job.Layer, "grid_set", r.GridSetID,
			"format", r.Format, "parameters_id", r.ParametersID, "err", err)
	}
	d.keysChanged(changed)
}

// describeStored writes the documents of a finished seed's or reseed's
// tile set again when its format is Mapbox Vector Tiles: TileJSON lists the
// layers of the set's stored tiles (vector_layers), and the documents
// were first written when the request was made, before the set had any
// tile. Every lane of the job does it as it finishes (one GET per
// document, a PUT only when one changed), so a client reading TileJSON
// after the first seed finds the layers.
func (d docKeeper) describeStored(ctx context.Context, job task.Job) {
	if job.Type == task.Truncate || job.Range().Format != vectortile.MVT {
		return
	}
	d.ensure(metatile.WriteContext(ctx), job)
}

// rebuildIndex rewrites the index of tile sets after the objects of
// layerName were removed.
func (d docKeeper) rebuildIndex(ctx context.Context, layerName string) {
	if d.docs == nil {
		return
	}
	changed, err := d.docs.RebuildIndex(ctx)
	if err != nil {
		d.log.Error("rebuild the index of tile sets after a truncation", "layer", layerName, "err", err)
	}
	d.keysChanged(changed)
}

// keysChanged reports changed documents to Changes, if set.
func (d docKeeper) keysChanged(keys []string) {
	if d.changes != nil && len(keys) > 0 {
		d.changes.KeysChanged(keys...)
	}
}
