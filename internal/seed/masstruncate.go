package seed

import (
	"context"
	"fmt"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
	"tilecache/internal/tilestore"
)

// MassTruncate deletes every object of a layer (all grid sets, formats and
// parameters ids, and the layer's side objects) before it returns, and
// reports how many objects it deleted. Running and pending tasks are not
// touched (contract §7.2). The layer's usage is removed with its pages.
func (e *Engine) MassTruncate(ctx context.Context, layerName string) (int64, error) {
	l, ok := e.layers.Layer(layerName)
	if !ok {
		return 0, apperr.Invalidf("Could not find layer %s", layerName)
	}
	return e.truncateLayer(ctx, l)
}

// truncateLayer deletes every object of layer l as MassTruncate does, l
// being the definition given (a layer just deleted from the catalogue,
// whose id names the objects), not the catalogue's.
func (e *Engine) truncateLayer(ctx context.Context, l *layer.Layer) (int64, error) {
	prefix := tilestore.LayerPrefix(e.opts.KeyPrefix, l.ID)
	if err := e.markTruncated(ctx, l.Name, time.Now()); err != nil {
		return 0, fmt.Errorf("mass truncate layer %s: mark it for renders on miss in progress: %w", l.Name, err)
	}
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
	if deleted > 0 && e.opts.Changes != nil {
		e.opts.Changes.PrefixChanged(prefix)
	}
	if err != nil {
		e.accounts.MarkDirty(ctx, l.Name, "mass truncation failed part way")
		return deleted, fmt.Errorf("mass truncate layer %s: %w", l.Name, err)
	}
	e.log.Info("layer truncated", "layer", l.Name, "objects", deleted)
	if e.opts.Documents != nil {
		changed, err := e.opts.Documents.RebuildIndex(ctx)
		if err != nil {
			e.log.Error("rebuild the index of tile sets after a mass truncation", "layer", l.Name, "err", err)
		}
		e.keysChanged(changed)
	}
	if e.opts.Usage != nil {
		// A running task of the layer may count tiles deleted here at its
		// next checkpoint: then only a recount can tell.
		active, err := e.layerActive(ctx, l.Name)
		if err != nil {
			e.log.Error("check the tasks of a truncated layer", "layer", l.Name, "err", err)
			active = true
		}
		if err := e.opts.Usage.RemoveLayer(ctx, l.Name, active); err != nil {
			e.accounts.MarkDirty(ctx, l.Name, "the usage of a truncated layer could not be removed")
			return deleted, fmt.Errorf("mass truncate layer %s: remove its usage: %w", l.Name, err)
		}
	}
	return deleted, nil
}

// layerActive reports whether a task of the layer is PENDING or RUNNING.
func (e *Engine) layerActive(ctx context.Context, layer string) (bool, error) {
	tasks, err := e.tasks.List(ctx, time.Now())
	if err != nil {
		return false, err
	}
	for _, t := range tasks {
		if t.Layer == layer && t.Status.Active() {
			return true, nil
		}
	}
	return false, nil
}

// markTruncated tells Options.Truncations, if set, that a mass truncation
// of the layer starts now.
func (e *Engine) markTruncated(ctx context.Context, layerName string, now time.Time) error {
	if e.opts.Truncations == nil {
		return nil
	}
	return e.opts.Truncations.MarkTruncated(ctx, layerName, now)
}
