// Render on miss beside the layer's tasks: truncations and reseeds
// submitted during a render, and mass truncations, win over its tiles.

package onmiss

import (
	"context"
	"strconv"
	"time"

	"tilecache/internal/grid"
	"tilecache/internal/metatile"
	"tilecache/internal/task"
)

// afterMiss keeps the rules of tasks running beside a render on miss: a
// truncate or reseed of the layer submitted since the render began whose
// range covers tiles of the metatile wins for those tiles (they are
// removed, never left older than it), and so does a mass truncation of
// the layer since (seen by its mark, see MarkTruncated); a request of the
// layer still active may count some of the same tiles, so the layer is
// recounted once its tasks are done.
func (rn *Renderer) afterMiss(ctx context.Context, w *metatile.Writer, meta, inside grid.TileRange, start time.Time) {
	ts, err := rn.tasks.List(ctx, start)
	if err != nil {
		rn.accounts.MarkDirty(ctx, w.Layer.Name, "render on miss could not check the layer's tasks")
		return
	}
	var drop []grid.TileRange
	if rn.truncatedSince(ctx, w.Layer.Name, start) {
		drop = append(drop, inside)
	}
	overlap := false
	jobs := map[int64]bool{}
	for _, t := range ts {
		if t.Layer != w.Layer.Name {
			continue
		}
		overlap = overlap || t.Status.Active()
		if t.Type == task.Seed || t.Created.Before(start) || jobs[t.JobID] {
			continue
		}
		jobs[t.JobID] = true
		job, err := rn.tasks.Job(ctx, t.JobID)
		if err != nil {
			rn.log.Warn("read a job submitted during a render on miss", "job", t.JobID, "err", err)
			drop = append(drop, inside) // unknown range: the job wins
			continue
		}
		if r, ok := jobCovers(w, job, inside); ok {
			drop = append(drop, r)
		}
	}
	if len(drop) > 0 {
		dropped := map[[2]int64]bool{}
		for _, r := range drop {
			for x, y := range r.All() {
				if dropped[[2]int64{x, y}] {
					continue
				}
				dropped[[2]int64{x, y}] = true
				if err := w.DropTile(ctx, meta.Z, x, y); err != nil {
					rn.log.Warn("remove a tile rendered on a miss before a truncate", "layer", w.Layer.Name, "err", err)
				}
			}
		}
		rn.accounts.Settle(ctx, w.Usage, w.Layer.Name, 0, true, "")
	}
	if overlap {
		rn.accounts.MarkDirty(ctx, w.Layer.Name, "tiles rendered on a miss while a request of the layer ran")
	}
}

// jobCovers returns the tiles of inside (a rendered metatile's stored
// tiles) that a truncate or reseed job's range holds; ok is false when it
// holds none of them (another tile set, level or area).
func jobCovers(w *metatile.Writer, job task.Job, inside grid.TileRange) (grid.TileRange, bool) {
	r := job.Range()
	if r.GridSetID != w.Set.GridSetID || r.Format != w.Format || r.ParametersID != w.Set.ParametersID ||
		inside.Z < r.ZoomStart || inside.Z > r.ZoomStop {
		return grid.TileRange{}, false
	}
	b := grid.Extent{MinX: r.Bounds[0], MinY: r.Bounds[1], MaxX: r.Bounds[2], MaxY: r.Bounds[3]}
	return inside.Intersect(w.Subset.Range(b, inside.Z))
}

// truncatedKey is the claim key of a layer's last mass truncation mark.
func truncatedKey(layerName string) string { return "truncated#" + layerName }

// MarkTruncated records that a mass truncation of the layer starts now, so
// that a render on miss in progress, here or in another process, removes
// what it stores (see afterMiss). The mark is kept an hour: far longer
// than any render. Without Options.Claims it does nothing.
func (rn *Renderer) MarkTruncated(ctx context.Context, layerName string, now time.Time) error {
	if rn.opts.Claims == nil {
		return nil
	}
	return rn.opts.Claims.Note(ctx, truncatedKey(layerName), strconv.FormatInt(now.UnixNano(), 10), now.Add(time.Hour))
}

// truncatedSince reports whether a mass truncation of the layer started at
// or after since (true when that cannot be read: the truncation wins).
func (rn *Renderer) truncatedSince(ctx context.Context, layerName string, since time.Time) bool {
	if rn.opts.Claims == nil {
		return false
	}
	_, note, _, err := rn.opts.Claims.Peek(ctx, truncatedKey(layerName), rn.opts.Now())
	if err != nil {
		rn.log.Warn("read the mass truncation mark of a layer", "layer", layerName, "err", err)
		return true
	}
	at, err := strconv.ParseInt(note, 10, 64)
	return err == nil && at >= since.UnixNano()
}
