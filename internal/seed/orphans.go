package seed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/tilestore"
)

// OrphanScanLimit bounds the objects one Orphans call examines, so that
// an answer comes within an API's time; a larger layer is done in several
// calls (OrphanReport.Complete says when it is done).
const OrphanScanLimit = 200_000

// OrphanSet counts the orphaned tiles of one tile set, for one reason.
type OrphanSet struct {
	GridSetID    string
	FormatID     string
	ParametersID string
	Reason       string
	Tiles        int64
	Bytes        int64
}

// OrphanReport is what a change of a layer's definition left stored that
// the new definition no longer addresses.
type OrphanReport struct {
	Sets []OrphanSet
	// Complete is false when the scan stopped at OrphanScanLimit objects:
	// there may be more (after a removal, the next call finds them).
	Complete bool
	// Removed counts the objects deleted (Orphans with remove).
	Removed int64
}

// Tiles returns the orphaned tiles the report counts.
func (r OrphanReport) Tiles() int64 {
	var n int64
	for _, s := range r.Sets {
		n += s.Tiles
	}
	return n
}

// errScanLimit stops a listing at OrphanScanLimit.
var errScanLimit = errors.New("scan limit reached")

// Orphans finds the stored tiles of layer old (a definition it had) that
// next (its definition now) no longer addresses: those of the grid sets
// and formats it dropped, of the levels it no longer has, outside its
// grid subsets' extents, every tile of a grid set in regridded (whose
// definition changed), and every tile when the layer's id (its keys)
// changed. Without remove, only the grid sets where next dropped
// something from old are listed; with remove, every stored tile of the
// layer is checked against next (so that tiles an earlier change orphaned
// go too) and the orphans deleted; the layer's usage is then marked for a
// recount and its tiles invalidated in the CDN.
func (pl *Planner) Orphans(ctx context.Context, old, next *layer.Layer, regridded map[string]bool, remove bool) (OrphanReport, error) {
	report := OrphanReport{Complete: true}
	formats := map[string]bool{}
	for _, f := range next.Formats {
		if id, _, ok := tilestore.Format(f); ok {
			formats[id] = true
		}
	}
	type setKey struct{ gs, format, params, reason string }
	counts := map[setKey]*OrphanSet{}
	var order []setKey
	scanned := 0
	batch := make([]string, 0, tilestore.DeleteBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := deleteKeys(ctx, pl.tiles, batch)
		report.Removed += n
		batch = batch[:0]
		return err
	}
	// reason says why a stored tile is orphaned ("" when next addresses it).
	reason := func(set tilestore.TileSet, z int, x, y int64) string {
		gs := set.GridSetID
		ns, kept := next.Subset(gs)
		switch {
		case next.ID != old.ID:
			return "the layer's id changed (its tiles' keys)"
		case !kept:
			return "grid set " + gs + " not in the layer"
		case regridded[gs]:
			return "grid set " + gs + " changed"
		case !formats[set.FormatID]:
			return "format " + set.FormatID + " not in the layer"
		case z < ns.MinZoom || z > ns.MaxZoom:
			return "level " + strconv.Itoa(z) + " no longer in the grid subset"
		case !ns.CoverageRange(z).Contains(x, y):
			return "outside the grid subset's new extent"
		}
		return ""
	}
	// What is listed: with remove, everything of the layer (tiles a
	// change before this one orphaned included); otherwise the grid sets
	// where this change dropped something.
	var prefixes []string
	layerPrefix := tilestore.LayerPrefix(pl.opts.KeyPrefix, old.ID)
	if remove {
		prefixes = []string{layerPrefix}
	} else {
		for _, sub := range old.Subsets {
			if _, kept := next.Subset(sub.GridSet.ID); !kept || next.ID != old.ID || regridded[sub.GridSet.ID] || dropsTiles(old, sub, next) {
				prefixes = append(prefixes, layerPrefix+sub.GridSet.ID+"/")
			}
		}
	}
	for _, prefix := range prefixes {
		err := pl.tiles.List(ctx, prefix, func(o tilestore.Object) error {
			if scanned >= OrphanScanLimit {
				return errScanLimit
			}
			scanned++
			set, z, x, y, ok := tilestore.ParseLayerKey(pl.opts.KeyPrefix, old.ID, o.Key)
			if !ok {
				return nil
			}
			why := reason(set, z, x, y)
			if why == "" {
				return nil
			}
			k := setKey{set.GridSetID, set.FormatID, set.ParametersID, why}
			c, ok := counts[k]
			if !ok {
				c = &OrphanSet{GridSetID: set.GridSetID, FormatID: set.FormatID, ParametersID: set.ParametersID, Reason: why}
				counts[k] = c
				order = append(order, k)
			}
			c.Tiles++
			c.Bytes += o.Size
			if remove {
				batch = append(batch, o.Key)
				if len(batch) == tilestore.DeleteBatch {
					return flush()
				}
			}
			return nil
		})
		if errors.Is(err, errScanLimit) {
			report.Complete = false
			err = nil
		}
		if err == nil && remove {
			err = flush()
		}
		if err != nil {
			return report, fmt.Errorf("find the orphaned tiles of layer %s under %s: %w", old.Name, prefix, err)
		}
		if !report.Complete {
			break
		}
	}
	for _, k := range order {
		report.Sets = append(report.Sets, *counts[k])
	}
	if report.Removed > 0 {
		pl.accounts.MarkDirty(ctx, old.Name, "tiles a layer change orphaned were deleted")
		if pl.opts.Changes != nil {
			pl.opts.Changes.PrefixChanged(tilestore.LayerPrefix(pl.opts.KeyPrefix, old.ID))
		}
		pl.log.Info("orphaned tiles deleted", "layer", old.Name, "objects", report.Removed, "complete", report.Complete)
	}
	return report, nil
}

// dropsTiles reports whether next addresses fewer tiles of sub's grid set
// than old did: a format, a level or part of the extent is gone.
func dropsTiles(old *layer.Layer, sub *grid.Subset, next *layer.Layer) bool {
	for _, f := range old.Formats {
		if !slices.Contains(next.Formats, f) {
			return true
		}
	}
	ns, _ := next.Subset(sub.GridSet.ID)
	if ns.MinZoom > sub.MinZoom || ns.MaxZoom < sub.MaxZoom {
		return true
	}
	for z := sub.MinZoom; z <= sub.MaxZoom; z++ {
		was, now := sub.CoverageRange(z), ns.CoverageRange(z)
		if now.MinX > was.MinX || now.MinY > was.MinY || now.MaxX < was.MaxX || now.MaxY < was.MaxY {
			return true
		}
	}
	return false
}
