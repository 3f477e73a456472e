// Imports: an archive's tiles copied into a layer's tile set as a task of
// one lane, its cursor the tiles walked in the archive's own order.

package seed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/archive/rangeread"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/metrics"
	"tilecache/internal/queue"
	"tilecache/internal/source"
	"tilecache/internal/source/tilearchive"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// ArchiveOpener opens the archives imports copy (tilearchive.Opener): a
// location that may not be read here, or an archive that cannot be, is
// an Invalid error naming it.
type ArchiveOpener interface {
	Open(ctx context.Context, location string) (*tilearchive.Opened, error)
}

// ImportRequest asks for an archive's tiles to be copied into a tile set
// of a layer.
type ImportRequest struct {
	Layer string
	// Archive is where the archive lies: a file path (embedded backend
	// only), s3://bucket/key, or an https:// URL of a PMTiles.
	Archive string
	// GridSetID, Format: "" for the layer's Web Mercator pyramid and the
	// layer's format that the archive's tiles are.
	GridSetID, Format string
	// Parameters are the request's parameters, name and value, as a
	// seed request's.
	Parameters [][2]string
	// ZoomStart, ZoomStop bound the levels copied (nil: the grid subset's).
	ZoomStart, ZoomStop *int
}

// SubmitImport validates an import and records it as one task (its total
// the archive's tiles at the levels copied), started as the pool allows.
// The archive is opened to check it: its tiles must be of the tile set's
// format, and the grid set the Web Mercator pyramid PMTiles and MBTiles
// hold. A rejected request records nothing.
func (c *Control) SubmitImport(ctx context.Context, r ImportRequest) ([]task.Task, error) {
	if c.opts.Archives == nil {
		return nil, apperr.Invalidf("this deployment does not import archives")
	}
	if c.opts.Sync != nil {
		if err := c.opts.Sync(ctx); err != nil {
			return nil, fmt.Errorf("read the layer configuration before an import into layer %s: %w", r.Layer, err)
		}
	}
	layers := c.planner.layers.Snapshot()
	l, ok := layers.Layer(r.Layer)
	if !ok {
		return nil, apperr.New(apperr.NotFound, "Unknown layer: %s", apperr.Show(r.Layer))
	}
	if !l.Enabled {
		return nil, apperr.Invalidf("Layer %s is disabled (enabled: false in the layer file): nothing is imported into it", l.Name)
	}
	if r.Archive == "" {
		return nil, apperr.Invalidf("archive is required: a file path, s3://bucket/key or an https:// URL of a PMTiles or MBTiles archive")
	}
	sub, err := importSubset(l, r.GridSetID)
	if err != nil {
		return nil, err
	}
	zs, ze := sub.MinZoom, sub.MaxZoom
	if r.ZoomStart != nil || r.ZoomStop != nil {
		start, stop := r.ZoomStart, r.ZoomStop
		if start == nil {
			start = &zs
		}
		if stop == nil {
			stop = &ze
		}
		if zs, ze, err = zoomRange(sub, start, stop); err != nil {
			return nil, err
		}
	}
	params, err := l.NormaliseParameters(r.Parameters)
	if err != nil {
		return nil, err
	}
	arc, err := c.opts.Archives.Open(ctx, r.Archive)
	if err != nil {
		return nil, err
	}
	defer arc.Close()
	format := r.Format
	if format == "" {
		for _, f := range l.Formats {
			if arc.Matches(f) {
				format = f
				break
			}
		}
	}
	switch {
	case format != "" && !l.HasFormat(format):
		return nil, apperr.Invalidf("Unsupported format %s for layer %s", format, l.Name)
	case format == "" || !arc.Matches(format):
		want := format
		if want == "" {
			want = fmt.Sprint(l.Formats)
		}
		return nil, apperr.Invalidf("archive %s holds %s tiles, not tiles of layer %s's format %s: give an archive of that format", arc.Location, archiveFormat(arc), l.Name, want)
	}
	n, err := arc.Count(ctx, zs, ze)
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "archive %s: count its tiles: %v", arc.Location, err)
	}
	if n == 0 {
		return nil, apperr.Invalidf("archive %s holds no tile at levels %d to %d", arc.Location, zs, ze)
	}
	ext := sub.Extent()
	rng := task.Range{GridSetID: sub.GridSet.ID, Format: format, Parameters: params, ParametersID: tilestore.ParametersID(params),
		Bounds:    [4]float64{ext.MinX, ext.MinY, ext.MaxX, ext.MaxY},
		ZoomStart: zs, ZoomStop: ze, MetaWidth: 1, MetaHeight: 1, LayerVersion: l.Version}
	if doc, ok := layers.Document(l.Name); ok && l.Version != "" && len(doc) <= MaxRecordedDefinition {
		rng.Definition = string(doc)
	}
	h := task.Header{Layer: l.Name, Metatiles: n, Tiles: n, Lanes: 1, SubmittedBy: submitterOf(ctx)}
	job := task.NewImport(h, rng, task.ImportSource{Archive: r.Archive, Kind: arc.Kind, Version: arc.Version})
	if len(params) > 0 {
		if err := c.writeParameters(ctx, l, job); err != nil {
			return nil, err
		}
	}
	c.docs.ensure(ctx, job)
	empty, err := c.emptyLevels(ctx, l, job)
	if err != nil {
		return nil, err
	}
	job = task.NewImport(h, rng, task.ImportSource{Archive: r.Archive, Kind: arc.Kind, Version: arc.Version, EmptyLevels: empty})
	job, tasks, err := c.tasks.Create(ctx, job, []task.Lane{{Start: 0, End: n, Tiles: n}}, time.Now())
	if err != nil {
		return nil, fmt.Errorf("record the import into layer %s: %w", l.Name, err)
	}
	c.log.Info("request recorded", "layer", job.Layer, "job", job.ID, "type", job.Type.String(), "archive", arc.Location.String(),
		"grid_set", rng.GridSetID, "format", rng.Format, "parameters_id", rng.ParametersID, "zoom_start", zs, "zoom_stop", ze, "tiles", n)
	if err := c.checkConcurrentWriters(ctx, job); err != nil {
		c.log.Error("check concurrent requests", "job", job.ID, "err", err)
		c.accounts.MarkDirty(ctx, job.Layer, "could not check for concurrent requests")
	}
	promoted, err := c.pool.Dispatch(ctx)
	if err != nil {
		c.log.Error("dispatch after submit", "job", job.ID, "err", err)
	}
	for i := range tasks {
		for _, pt := range promoted {
			if pt.ID == tasks[i].ID {
				tasks[i].Status, tasks[i].Heartbeat, tasks[i].Cursor = pt.Status, pt.Heartbeat, pt.Cursor
			}
		}
	}
	return tasks, nil
}

// archiveFormat names an archive's tile format in messages.
func archiveFormat(o *tilearchive.Opened) string {
	if m := o.MIME(); m != "" {
		return m
	}
	if o.Format != "" {
		return o.Format
	}
	return "tiles of a format it does not name"
}

// importSubset is the grid subset an import of a PMTiles or MBTiles
// archive writes: the layer's Web Mercator pyramid, id or none given.
func importSubset(l *layer.Layer, id string) (*grid.Subset, error) {
	if id == "" {
		for _, s := range l.Subsets {
			if tilearchive.MercatorQuad(s) {
				return s, nil
			}
		}
		return nil, apperr.Invalidf("layer %s has no Web Mercator pyramid grid set (EPSG:900913: level z of 2^z × 2^z tiles over the world), the only tiling a PMTiles or MBTiles archive holds", l.Name)
	}
	s, ok := l.Subset(id)
	if !ok {
		return nil, apperr.Invalidf("Unknown grid set %s for layer %s", id, l.Name)
	}
	if !tilearchive.MercatorQuad(s) {
		return nil, apperr.Invalidf("grid set %s is not the Web Mercator pyramid (EPSG:900913: level z of 2^z × 2^z tiles over the world), the only tiling a PMTiles or MBTiles archive holds (GeoPackage, which holds any tiling, is not imported)", id)
	}
	return s, nil
}

// importBatch is the most tiles an import stores at once (PutConcurrency
// of them in flight).
const importBatch = 64

// errImportSlice ends an archive walk at the end of a slice.
var errImportSlice = errors.New("the slice ended")

// runImport works the lane of import task t under owner's lease: the
// archive opened again, walked from the task's cursor, every tile stored
// through the metatile writer seeds use; then the task finished or the
// lane continued. An archive that cannot be opened any more aborts the
// task (its failure recorded) once its message came three times, or at
// once when it is gone or changed kind.
func (w *Worker) runImport(ctx context.Context, t task.Task, owner string, attempt int) error {
	job, err := w.tasks.Job(ctx, t.JobID)
	if err != nil {
		return fmt.Errorf("load job %d: %w", t.JobID, err)
	}
	abort := func(why string) error {
		w.log.Error("task aborted", "task", t.ID, "layer", t.Layer, "err", why)
		recordFailure(ctx, w.tasks, w.log, t, why)
		return w.pool.finish(ctx, t, task.Aborted)
	}
	rng, src := job.Range(), job.ImportSource()
	l, err := w.jobLayer(job)
	if err != nil {
		return abort("the request can no longer be worked: " + err.Error())
	}
	sub, ok := l.Subset(rng.GridSetID)
	if !ok {
		return abort(fmt.Sprintf("layer %s no longer has grid set %s", job.Layer, rng.GridSetID))
	}
	if w.opts.Archives == nil {
		return abort("this worker does not import archives")
	}
	arc, err := w.opts.Archives.Open(ctx, src.Archive)
	switch {
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil && (apperr.Is(err, apperr.Invalid) && attempt >= 3 || attempt >= 5):
		return abort("the archive can no longer be read: " + err.Error())
	case err != nil:
		return fmt.Errorf("task %d: %w", t.ID, err)
	}
	defer arc.Close()
	if src.Version != "" && arc.Version != src.Version {
		return abort(fmt.Sprintf("archive %s was replaced since the import was submitted (it was %s, it is %s): what was imported of it stays; import the new archive again", arc.Location, src.Version, arc.Version))
	}
	if arc.Kind != src.Kind || !arc.Matches(rng.Format) {
		return abort(fmt.Sprintf("archive %s changed since the import was submitted: it now holds %s tiles as %s", arc.Location, archiveFormat(arc), arc.Kind))
	}
	convert, err := arc.Converter(l, rng.Format, sub.GridSet.TileWidth, sub.GridSet.TileHeight)
	if err != nil {
		return abort(err.Error())
	}
	set := metatile.TileSet(w.opts.KeyPrefix, l, rng.GridSetID, rng.Format, rng.ParametersID)
	tally := metatile.NewTally(set, 1, 1)
	writer := func(mode metatile.Mode) *metatile.Writer {
		mw := &metatile.Writer{
			Tiles: truncationTiles{w.tiles}, Log: w.log, PutConcurrency: w.opts.PutConcurrency,
			Layer: l, Subset: sub, Set: set, Format: rng.Format, Parameters: rng.Parameters, Mode: mode, By: "import",
			Ahead: func(z int) (grid.TileRange, bool) {
				return sub.CoverageRange(z), z >= rng.ZoomStart && z <= rng.ZoomStop
			},
			Usage: tally,
		}
		if ch := w.opts.Changes; ch != nil {
			mw.Changed = ch.TilesChanged
		}
		return mw
	}
	// In a level that held no tile when the import was submitted, every
	// tile is stored without looking (a seed's writer, knowing nothing
	// stored); elsewhere what is stored is learnt first, a tile of the same
	// content left as it is and a blank one deleting the stored tile (a
	// reseed's).
	fresh, over := writer(metatile.Seed), writer(metatile.Reseed)
	im := &importLane{lane: lane{env: w.laneEnv(), job: job, layer: l, subset: sub, t: t, owner: owner, w: over},
		arc: arc, convert: convert, writerOf: func(z int) *metatile.Writer {
			for _, e := range src.EmptyLevels {
				if e == z {
					return fresh
				}
			}
			return over
		}}
	if err := w.accounts.Start(ctx, tally); err != nil {
		return fmt.Errorf("task %d: read the disk block size: %w", t.ID, err)
	}
	end, err := im.run(ctx)
	if err != nil {
		return err
	}
	switch {
	case end.finish:
		if end.status == task.Done {
			w.docs.describeStored(ctx, job)
		}
		return w.pool.finish(ctx, im.t, end.status)
	case len(end.next) > 0:
		if err := w.pool.send(metatile.WriteContext(ctx), end.next); err != nil {
			return fmt.Errorf("continue task %d: %w", im.t.ID, err)
		}
	}
	return nil
}

// importLane is the lane of an import: the archive it walks, how its
// tiles become the layer's, and the writer of each level (lane.w, the
// one that learns what is stored, holds the usage both share).
type importLane struct {
	lane
	arc      *tilearchive.Opened
	convert  func(ctx context.Context, x, yBottom int64, data []byte) (source.Tile, error)
	writerOf func(z int) *metatile.Writer
}

// run walks the archive from the task's cursor until its end, the slice's
// end or a stop, checkpointing as a seed lane does (lane.run): the
// cursor is the archive's tiles walked at the job's levels, in its own
// order; a tile outside the grid subset's coverage is walked and not
// stored.
func (ln *importLane) run(ctx context.Context) (end laneEnd, err error) {
	env, t, rng := ln.env, ln.t, ln.job.Range()
	start := t.Cursor
	progress := &ln.progress
	progress.Store(t.Done)
	defer env.working.track(t.ID, ln.job.ID, progress)()
	defer func() {
		ln.settle(ctx, false, fmt.Sprintf("lane of task %d stopped with uncheckpointed work", t.ID))
		if err != nil {
			ln.release(metatile.WriteContext(ctx))
		}
		env.log.Debug("import slice", "task", t.ID, "from", start, "to", ln.t.Cursor)
	}()
	deadline := time.Now().Add(env.opts.Slice)
	if d, ok := ctx.Deadline(); ok {
		if soft := d.Add(-env.opts.SafetyMargin); soft.Before(deadline) {
			deadline = soft
		}
	}
	ctx, watch := env.poll.watchLane(ctx, t.ID, ln.owner, env.opts.heartbeatEvery())
	defer watch.stop()
	watch.checkpointed()
	ended := func() bool {
		if c := context.Cause(ctx); !errors.Is(c, errLaneKilled) && !errors.Is(c, errLeaseLost) {
			return false
		}
		ln.stopped(ctx, watch.last(), ln.t.Cursor)
		return true
	}
	var (
		batch     []source.Tile
		batchZ    = -1
		walked    int64 // tiles walked since the last checkpoint
		batchFrom = time.Now()
		usageAt   = time.Now()
		stopped   bool
		failure   string
	)
	flush := func() error {
		if len(batch) > 0 {
			z := batchZ
			err := ln.writerOf(z).Store(ctx, z, ln.subset.CoverageRange(z), batch)
			batch = batch[:0]
			if err != nil {
				return err
			}
		}
		progress.Store(ln.t.Done + walked)
		return nil
	}
	checkpoint := func(release bool) error {
		withUsage := release || ln.t.Cursor+walked == ln.t.End || ln.w.Usage.Room() < importBatch || time.Since(usageAt) >= env.opts.usageEvery()
		cp := task.Checkpoint{ID: ln.t.ID, From: ln.t.Cursor, To: ln.t.Cursor + walked, Tiles: walked, Owner: ln.owner, Release: release, Token: leaseToken()}
		if withUsage {
			cp.Usage = ln.w.Usage.Pending()
		}
		if release {
			watch.releasing()
		}
		next, stop, err := ln.checkpoint(ctx, cp)
		if stop || err != nil {
			stopped = stop
			return err
		}
		watch.checkpointed()
		ln.t, walked, batchFrom = next, 0, time.Now()
		if withUsage {
			ln.w.Usage.Reset()
			usageAt = time.Now()
		}
		return nil
	}
	sliceEnd := false
	err = ln.arc.Walk(ctx, rng.ZoomStart, rng.ZoomStop, ln.t.Cursor, func(z int, x, y int64, data []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ln.t.Cursor+walked >= ln.t.End {
			return errImportSlice // the archive holds more than it did: the lane's tiles are done
		}
		if z != batchZ || len(batch) >= importBatch || int64(len(batch)) >= ln.w.Usage.Room() {
			if err := flush(); err != nil {
				return err
			}
			batchZ = z
		}
		// A checkpoint every CheckpointEvery, or when it could not carry
		// the pages of one more tile.
		if ln.w.Usage.Room() == 0 || time.Since(batchFrom) >= env.opts.CheckpointEvery {
			if err := flush(); err != nil {
				return err
			}
			if err := checkpoint(false); err != nil || stopped {
				if err == nil {
					err = errImportSlice
				}
				return err
			}
		}
		if !time.Now().Before(deadline) {
			sliceEnd = true
			return errImportSlice
		}
		row := int64(1)<<z - 1 - y
		tile, err := ln.convert(ctx, x, row, data)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failure = fmt.Sprintf("tile %d/%d/%d of archive %s: %v", z, x, y, ln.arc.Location, err)
			return errImportSlice
		}
		tile.X, tile.Y = x, row
		batch = append(batch, tile)
		walked++
		return nil
	})
	if errors.Is(err, errImportSlice) {
		err = nil
	}
	if err != nil && ctx.Err() == nil && errors.Is(err, rangeread.ErrChanged) {
		// What was read of the archive before is stored; the new one is
		// not mixed in.
		failure = fmt.Sprintf("archive %s was replaced while it was imported: what was imported of it stays; import the new archive again", ln.arc.Location)
		err = nil
	}
	if err == nil && !stopped {
		err = flush() // what was walked is stored before it is checkpointed
	}
	switch {
	case stopped:
		return laneEnd{}, nil
	case err != nil && ctx.Err() != nil:
		if ended() {
			return laneEnd{}, nil
		}
		return laneEnd{}, fmt.Errorf("task %d: %w", t.ID, ctx.Err())
	case err != nil:
		// The store or the archive failed: the message comes again, and
		// the lane goes on from its last checkpoint.
		return laneEnd{}, fmt.Errorf("task %d: %w", t.ID, err)
	case failure != "":
		// What was stored is counted; the rest of the archive is not
		// imported.
		metrics.TilesFailed.Add(ctx, 1, ln.layer.Name)
		if err := checkpoint(false); err != nil || stopped {
			return laneEnd{}, err
		}
		ln.settle(ctx, true, "")
		recordFailure(ctx, env.tasks, env.log, ln.t, failure)
		return laneEnd{finish: true, status: task.Aborted}, nil
	}
	done := ln.t.Cursor+walked >= ln.t.End
	if !done && !sliceEnd {
		// The walk ended short of the lane's end: the archive holds fewer
		// tiles than when the import was submitted. What it held is
		// imported; the lane ends there.
		env.log.Warn("import: the archive ended before the lane", "task", t.ID, "archive", ln.arc.Location.String(), "walked", ln.t.Cursor+walked, "lane", ln.t.End)
		walked = ln.t.End - ln.t.Cursor
		done = true
	}
	if err := checkpoint(!done); err != nil || stopped {
		return laneEnd{}, err
	}
	if !done {
		return laneEnd{next: []queue.Message{{TaskID: ln.t.ID, Cursor: ln.t.Cursor}}}, nil
	}
	return laneEnd{finish: true, status: task.Done}, nil
}
