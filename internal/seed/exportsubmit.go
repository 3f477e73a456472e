// Export requests: planned as seed requests are, recorded as one task.

package seed

import (
	"context"
	"fmt"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/archive/export"
	"tilecache/internal/grid"
	"tilecache/internal/gwc"
	"tilecache/internal/task"
)

// PrepareExport validates and plans an export request as Prepare does a
// seed request of the same fields (layer, grid set, format, parameters,
// levels, bounds, geometry), with its archive kind: one lane of every
// metatile. PMTiles and MBTiles hold the Web Mercator pyramid only; a
// GeoPackage's tile matrix set is the grid set's, which must be made of
// whole tiles (see exportTileMatrixSet). Errors are apperr.Invalid
// naming the problem; an unknown layer is apperr.NotFound.
func (pl *Planner) PrepareExport(r gwc.ExportRequest) (Prepared, error) {
	kind, ok := export.Kind(r.Archive)
	if !ok {
		return Prepared{}, apperr.Invalidf("Unknown archive %s: give pmtiles, mbtiles or gpkg", apperr.Show(r.Archive))
	}
	if _, ok := pl.layers.Layer(r.Layer); !ok {
		return Prepared{}, apperr.New(apperr.NotFound, "Unknown layer: %s", r.Layer)
	}
	sr := r.SeedRequest
	sr.Type, sr.ThreadCount = "seed", nil
	p, err := pl.Prepare(sr)
	if err != nil {
		return Prepared{}, err
	}
	rng := p.Job.Range()
	sub, _ := p.Layer.Subset(rng.GridSetID)
	if export.XYZOnly(kind) && !grid.IsWebMercatorPyramid(sub) {
		return Prepared{}, apperr.Invalidf("grid set %s of layer %s is not the Web Mercator pyramid (level z of 2^z × 2^z tiles over the world), "+
			"the only tiling %s archives hold: export it to a GeoPackage (\"archive\": \"gpkg\"), which keeps the grid set's own tile matrix set, "+
			"or choose a Web Mercator grid set of the layer", rng.GridSetID, p.Layer.Name, kind)
	}
	if kind == export.GPKG && !grid.IsWebMercatorPyramid(sub) {
		if _, err := exportTileMatrixSet(sub, rng.ZoomStop); err != nil {
			return Prepared{}, apperr.Invalidf("grid set %s of layer %s cannot be a GeoPackage tile matrix set: %v", rng.GridSetID, p.Layer.Name, err)
		}
	}
	if err := export.Check(kind, rng.Format); err != nil {
		return Prepared{}, apperr.Invalidf("%v", err)
	}
	if r.Publish {
		if kind != export.PMTiles {
			return Prepared{}, apperr.Invalidf("publish serves the tile set's PMTiles archive: give \"archive\": \"pmtiles\", not %s", kind)
		}
		if p.Layer.Private {
			return Prepared{}, apperr.Invalidf("layer %s is private: a published archive would be served to anyone; export it without publish", p.Layer.Name)
		}
		p.Job = task.NewPublishedExport(p.Job.Header, rng)
	} else {
		p.Job = task.NewExport(p.Job.Header, rng, kind)
	}
	p.Lanes = []task.Lane{{Start: 0, End: p.Plan.Metatiles(), Tiles: p.Plan.Tiles()}}
	return p, nil
}

// SubmitExport validates and records an export request (PrepareExport),
// starts it when the pool allows, and returns its task as it is after
// that first dispatch and the key of the archive it writes.
func (c *Control) SubmitExport(ctx context.Context, r gwc.ExportRequest) (task.Task, string, error) {
	if c.opts.Sync != nil {
		if err := c.opts.Sync(ctx); err != nil {
			return task.Task{}, "", fmt.Errorf("read the layer configuration before an export of layer %s: %w", r.Layer, err)
		}
	}
	p, err := c.planner.PrepareExport(r)
	if err != nil {
		return task.Task{}, "", err
	}
	if p.AreaData != nil {
		if err := c.storeArea(ctx, p.Job.Range().Area, p.AreaData); err != nil {
			return task.Task{}, "", err
		}
	}
	p.Job.SubmittedBy = submitterOf(ctx)
	job, tasks, err := c.tasks.Create(ctx, p.Job, p.Lanes, time.Now())
	if err != nil {
		return task.Task{}, "", fmt.Errorf("record export of layer %s: %w", p.Job.Layer, err)
	}
	rng := job.Range()
	key := exportKeyOf(c.opts.KeyPrefix, p.Layer.ID, job, tasks[0].ID)
	c.log.Info("export recorded", "layer", job.Layer, "job", job.ID, "archive", key, "grid_set", rng.GridSetID, "format", rng.Format,
		"parameters_id", rng.ParametersID, "zoom_start", rng.ZoomStart, "zoom_stop", rng.ZoomStop, "tiles", job.Tiles)
	promoted, err := c.pool.Dispatch(ctx)
	if err != nil {
		c.log.Error("dispatch after submit", "job", job.ID, "err", err)
	}
	t := tasks[0]
	for _, pt := range promoted {
		if pt.ID == t.ID {
			t.Status, t.Heartbeat, t.Cursor = pt.Status, pt.Heartbeat, pt.Cursor
		}
	}
	return t, key, nil
}
