package quota

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Report is the usage report of GET /rest/diskquota/usage.
type Report struct {
	Enabled      bool
	BlockSize    int64
	GlobalQuota  int64 // bytes
	GlobalPolicy string
	UsedBytes    int64 // all layers
	UsedTiles    int64
	// LastCleanUp is when the last clean-up started; zero if never.
	LastCleanUp time.Time
	// Counted is false until usage was first set up to be counted.
	Counted bool
	Layers  []LayerReport // configured layers first, in configuration order
}

// LayerReport is one layer's line of the report.
type LayerReport struct {
	Layer     string
	UsedBytes int64
	UsedTiles int64
	// Quota is the layer's own quota in bytes, and Policy its policy; both
	// zero when the layer has none (the global quota applies).
	Quota  int64
	Policy string
	// RecountPending says the numbers may be off until a pending recount.
	RecountPending bool
}

// HasQuota reports whether the layer has a quota of its own.
func (r LayerReport) HasQuota() bool { return r.Policy != "" }

// Report returns the usage report: every configured layer, every other
// layer with usage or a layer quota, and the totals.
func (c *Cleaner) Report(ctx context.Context) (Report, error) {
	cfg, err := c.config.QuotaConfig(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("read disk quota configuration: %w", err)
	}
	st, err := c.store.UsageState(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("read usage state: %w", err)
	}
	ls, err := c.store.Layers(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("read layer usage: %w", err)
	}
	r := Report{Enabled: cfg.Enabled, BlockSize: cfg.DiskBlockSize, GlobalQuota: cfg.GlobalQuota, GlobalPolicy: cfg.GlobalPolicy,
		LastCleanUp: st.LastCleanUp, Counted: st.Counted && st.BlockSize == cfg.DiskBlockSize}
	names := c.layers.Names()
	usage := map[string]LayerUsage{}
	for _, l := range ls {
		known := slices.Contains(names, l.Layer)
		if !known && l.Tiles == 0 && l.Bytes == 0 && !l.Dirty {
			// A layer gone from the catalogue whose tiles are gone too
			// (a layer deleted with its tiles): nothing to report.
			continue
		}
		usage[l.Layer] = l
		if !known {
			names = append(names, l.Layer)
		}
	}
	quotas := map[string]LayerQuota{}
	for _, lq := range cfg.LayerQuotas {
		quotas[lq.Layer] = lq
		if !slices.Contains(names, lq.Layer) {
			names = append(names, lq.Layer)
		}
	}
	for _, n := range names {
		u := usage[n]
		lq := quotas[n]
		if u.Bytes < 0 || u.Tiles < 0 {
			// Counts that went below zero (a clean-up and a writer of one
			// page overlapping) are wrong, not negative: the layer is
			// recounted, and until then it reports nothing.
			u.Bytes, u.Tiles, u.Dirty = max(u.Bytes, 0), max(u.Tiles, 0), true
			if err := c.store.MarkDirty(ctx, []string{n}); err != nil {
				c.log.Error("mark a layer with negative usage for a recount", "layer", n, "err", err)
			} else {
				c.log.Warn("usage below zero: layer marked for a recount", "layer", n)
			}
		}
		r.Layers = append(r.Layers, LayerReport{Layer: n, UsedBytes: u.Bytes, UsedTiles: u.Tiles, Quota: lq.Quota, Policy: lq.Policy,
			RecountPending: u.Dirty || !r.Counted})
		r.UsedBytes += u.Bytes
		r.UsedTiles += u.Tiles
	}
	return r, nil
}
