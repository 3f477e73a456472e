package quota

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"tilecache/internal/apperr"
	"tilecache/internal/tilestore"
)

// Maintain keeps usage right: when usage is missing (never counted) or was
// counted in another block size than the configured diskBlockSize, it marks
// every layer for a recount; then it recounts each layer marked dirty that
// has had no task at work for Settle. RunDue calls it.
func (c *Cleaner) Maintain(ctx context.Context) error {
	c.running.Lock()
	defer c.running.Unlock()
	return c.maintain(ctx)
}

func (c *Cleaner) maintain(ctx context.Context) error {
	_, err := c.recount(ctx, nil)
	return err
}

// Recount marks the given layers (every known layer when none is given)
// for a recount and recounts those that have had no task at work for
// Settle at once; it returns the layers it recounted. The others are
// recounted by a later RunDue.
func (c *Cleaner) Recount(ctx context.Context, layers []string) ([]string, error) {
	c.running.Lock()
	defer c.running.Unlock()
	if len(layers) == 0 {
		all, err := c.knownLayers(ctx)
		if err != nil {
			return nil, err
		}
		layers = all
	}
	if err := c.store.MarkDirty(ctx, layers); err != nil {
		return nil, fmt.Errorf("mark usage for a recount: %w", err)
	}
	return c.recount(ctx, layers)
}

// knownLayers returns the configured layers and those with usage recorded.
func (c *Cleaner) knownLayers(ctx context.Context) ([]string, error) {
	ls, err := c.store.Layers(ctx)
	if err != nil {
		return nil, fmt.Errorf("read layer usage: %w", err)
	}
	names := c.layers.Names()
	for _, l := range ls {
		if !slices.Contains(names, l.Layer) {
			names = append(names, l.Layer)
		}
	}
	return names, nil
}

// recount rebases usage when needed and recounts the dirty layers (only
// those in only, when given) that are at rest.
func (c *Cleaner) recount(ctx context.Context, only []string) ([]string, error) {
	cfg, err := c.config.QuotaConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("read disk quota configuration: %w", err)
	}
	st, err := c.store.UsageState(ctx)
	if err != nil {
		return nil, fmt.Errorf("read usage state: %w", err)
	}
	if !st.Counted || st.BlockSize != cfg.DiskBlockSize {
		names, err := c.knownLayers(ctx)
		if err != nil {
			return nil, err
		}
		if err := c.store.Rebase(ctx, cfg.DiskBlockSize, names); err != nil {
			return nil, fmt.Errorf("set up usage counting: %w", err)
		}
		why := "usage missing"
		if st.Counted {
			why = fmt.Sprintf("diskBlockSize changed from %d to %d", st.BlockSize, cfg.DiskBlockSize)
		}
		c.log.Info("disk usage will be recounted", "why", why, "layers", names)
	}
	ls, err := c.store.Layers(ctx)
	if err != nil {
		return nil, fmt.Errorf("read layer usage: %w", err)
	}
	var dirty []LayerUsage
	for _, l := range ls {
		if l.Dirty && (only == nil || slices.Contains(only, l.Layer)) {
			dirty = append(dirty, l)
		}
	}
	if len(dirty) == 0 {
		return nil, nil
	}
	var done []string
	var errs []error
	for _, l := range dirty {
		ok, err := c.recountLayer(ctx, l, cfg.DiskBlockSize)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			done = append(done, l.Layer)
		}
	}
	return done, errors.Join(errs...)
}

// atRest reports whether none of the layer's tasks worked within Settle.
func (c *Cleaner) atRest(ctx context.Context, layer string) (bool, error) {
	active, err := c.activity.ActiveLayers(ctx, c.opts.Now().Add(-c.opts.Settle))
	if err != nil {
		return false, fmt.Errorf("read the tasks of layer %s: %w", layer, err)
	}
	return !active[layer], nil
}

// recountLayer rebuilds a layer's usage from a listing of its tiles,
// provided no task of it works before or during the listing and its usage
// did not change meanwhile (the version fence of ReplaceLayer).
func (c *Cleaner) recountLayer(ctx context.Context, l LayerUsage, blockSize int64) (bool, error) {
	if ok, err := c.atRest(ctx, l.Layer); err != nil || !ok {
		return false, err
	}
	start := c.opts.Now()
	counts, err := c.listUsage(ctx, l.Layer, blockSize)
	if err != nil {
		return false, err
	}
	if ok, err := c.atRest(ctx, l.Layer); err != nil || !ok {
		return false, err
	}
	list := counts.List()
	err = c.store.ReplaceLayer(ctx, l.Layer, l.Version, list, c.opts.Now())
	if apperr.Is(err, apperr.Conflict) {
		c.log.Info("layer recount deferred: its usage changed meanwhile", "layer", l.Layer)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("recount layer %s: %w", l.Layer, err)
	}
	var tiles, bytes int64
	for _, p := range list {
		tiles, bytes = tiles+p.Tiles, bytes+p.Bytes
	}
	c.log.Info("layer usage recounted", "layer", l.Layer, "tiles", tiles, "pages", len(list),
		"used_bytes", bytes, "previous_bytes", l.Bytes, "drift_bytes", bytes-l.Bytes, "duration", c.opts.Now().Sub(start).String())
	return true, nil
}

// listUsage counts the stored tiles of the layer called name by page,
// from a listing of its tiles (see layer.Catalogue.TilesID).
func (c *Cleaner) listUsage(ctx context.Context, name string, blockSize int64) (Deltas, error) {
	counts := make(Deltas)
	id, reachable := c.layers.TilesID(name)
	if !reachable {
		// The name is another layer's id (this layer is gone, and its id
		// was not its name): listing it would count that layer's tiles.
		c.log.Info("layer recount: the name is another layer's id, its own usage counted empty", "layer", name)
		return counts, nil
	}
	err := c.tiles.List(ctx, tilestore.LayerPrefix(c.opts.KeyPrefix, id), func(o tilestore.Object) error {
		ts, z, x, y, ok := tilestore.ParseLayerKey(c.opts.KeyPrefix, id, o.Key)
		if !ok {
			return nil // a side object (parameters, metadata), or no tile key
		}
		ts.Layer = name
		counts.Add(PageOf(ts.SetName, z, x, y), 1, Blocks(o.Size, blockSize))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("recount layer %s: list its tiles: %w", name, err)
	}
	return counts, nil
}
