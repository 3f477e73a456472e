package seed

import (
	"context"

	"tilecache/internal/metatile"
	"tilecache/internal/task"
	"tilecache/internal/vectortile"
)

// describeStored writes the documents of a finished seed's or reseed's
// tile set again when its format is Mapbox Vector Tiles: TileJSON lists the
// layers of the set's stored tiles (vector_layers), and the documents
// were first written when the request was made, before the set had any
// tile. Every lane of the job does it as it finishes (one GET per
// document, a PUT only when one changed), so a client reading TileJSON
// after the first seed finds the layers. A failure is logged: the tiles
// are fine, and the next request of the set writes the documents again.
func (e *Engine) describeStored(ctx context.Context, job task.Job) {
	if job.Type == task.Truncate || job.Format != vectortile.MVT {
		return
	}
	e.ensureDocuments(metatile.WriteContext(ctx), job)
}
