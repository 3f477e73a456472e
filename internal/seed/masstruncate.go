package seed

import (
	"context"
	"fmt"

	"tilecache/internal/apperr"
	"tilecache/internal/tilestore"
)

// MassTruncate deletes every object of a layer (all grid sets, formats and
// parameters ids, and the layer's side objects) before it returns, and
// reports how many objects it deleted. Running and pending tasks are not
// touched (contract §7.2).
func (e *Engine) MassTruncate(ctx context.Context, layerName string) (int64, error) {
	l, ok := e.layers.Layer(layerName)
	if !ok {
		return 0, apperr.Invalidf("Could not find layer %s", layerName)
	}
	prefix := tilestore.LayerPrefix(e.opts.KeyPrefix, l.ID)
	var deleted int64
	batch := make([]string, 0, tilestore.DeleteBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := e.tiles.Delete(ctx, batch)
		deleted += int64(n)
		batch = batch[:0]
		return err
	}
	err := e.tiles.List(ctx, prefix, func(o tilestore.Object) error {
		batch = append(batch, o.Key)
		if len(batch) == tilestore.DeleteBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return deleted, fmt.Errorf("mass truncate layer %s: %w", l.Name, err)
	}
	e.log.Info("layer truncated", "layer", l.Name, "objects", deleted)
	return deleted, nil
}
