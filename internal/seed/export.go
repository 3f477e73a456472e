// An export's lane: a layer's stored tiles of a range written to an
// archive (PMTiles, MBTiles or GeoPackage) in the tile store.

package seed

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"tilecache/internal/apperr"
	"tilecache/internal/archive"
	"tilecache/internal/archive/export"
	"tilecache/internal/archive/gpkg"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/queue"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// exportDir is where exports are kept in the tile store, under the key
// prefix: among the service's own objects (layer.ReservedID), which the
// edge never serves and the distribution may not read.
const exportDir = layer.ReservedID + "/exports/"

// ExportKey returns the key (with the key prefix keyPrefix) of the
// archive export task id writes for the layer of id layerID, an archive
// of kind.
func ExportKey(keyPrefix, layerID string, id int64, kind string) string {
	return withPrefix(keyPrefix, exportDir+layerID+"/"+strconv.FormatInt(id, 10)+"."+kind)
}

// exportKeyOf is where export job, of task id, writes its archive: the
// tile set's served PMTiles (tilestore.ArchiveKey) when it is published,
// else ExportKey.
func exportKeyOf(keyPrefix, layerID string, job task.Job, id int64) string {
	if !job.Published() {
		return ExportKey(keyPrefix, layerID, id, job.Archive())
	}
	r := job.Range()
	formatID, _, _ := tilestore.Format(r.Format)
	return withPrefix(keyPrefix, tilestore.ArchiveKey(layerID, r.GridSetID, formatID, r.ParametersID))
}

// exportStageDir is where exports stage their chunks: apart from the
// archives, so that a bucket's lifecycle rule can drop what a killed or
// abandoned export left.
const exportStageDir = layer.ReservedID + "/export-stages/"

// exportStageKey is the key of the staged chunk of export task id that
// starts at metatile from: the tiles of its metatiles as the archive
// holds them, kept until the archive is written.
func exportStageKey(keyPrefix, layerID string, id, from int64) string {
	return withPrefix(keyPrefix, fmt.Sprintf("%s%s/%d/%012d", exportStageDir, layerID, id, from))
}

func withPrefix(keyPrefix, key string) string {
	if p := strings.TrimSuffix(keyPrefix, "/"); p != "" {
		return p + "/" + key
	}
	return key
}

// exportChunkTiles is the most tiles a staged chunk holds (as whole
// metatiles, at least one), and exportChunks about how many chunks a
// smaller export is staged in (each is a checkpoint, so a small export
// shows its progress too). The chunks' bounds follow from the job alone,
// so a chunk worked again (by a worker that took the lane over) is the
// same object, with the same tiles in the same order.
const (
	exportChunkTiles = 1024
	exportChunks     = 64
)

// exportChunk returns the end of the chunk of job's metatiles (its one
// lane [start, end)) that starts at from.
func exportChunk(job task.Job, start, end, from int64) int64 {
	r := job.Range()
	n := max(1, min(job.Metatiles/exportChunks, int64(exportChunkTiles/max(1, r.MetaWidth*r.MetaHeight))))
	return min(end, start+((from-start)/n+1)*n)
}

// exportReads is how many stored tiles an export reads at once.
const exportReads = 16

// exportLane is one worker's run of an export's lane.
type exportLane struct {
	w        *Worker
	t        task.Task
	job      task.Job
	layer    *layer.Layer
	subset   *grid.Subset
	plan     *grid.Plan
	set      tilestore.TileSet
	format   string // the archive's name of the tiles' format
	owner    string
	progress atomic.Int64
}

// runExport works the lane of export task t (job), whose lease this
// worker holds as owner: from the task's cursor, a chunk of metatiles at
// a time, it reads their stored tiles (those not stored, blank ones
// included, are left out), stages them as one object in the store and
// checkpoints the chunk, until the slice is used up (the continuation is
// sent) or the lane's metatiles are all staged. Then it writes the
// archive from the staged chunks, in the lane's order, uploads it
// (ExportKey), removes the chunks and finishes the task. A kill or a
// lost lease stops it within KillCheckEvery; a killed export's objects
// are removed. A worker that dies leaves the staged chunks: the worker
// that takes the lane over goes on from the last checkpoint, and the
// archive has the bytes an export that never stopped writes.
func (w *Worker) runExport(ctx context.Context, t task.Task, job task.Job, owner string) (err error) {
	el, err := w.exportLane(ctx, t, job, owner)
	if err != nil {
		if apperr.Is(err, apperr.Invalid) {
			w.log.Error("export aborted", "task", t.ID, "layer", t.Layer, "err", err)
			recordFailure(ctx, w.tasks, w.log, t, "the export can no longer be worked: "+err.Error())
			return w.pool.finish(ctx, t, task.Aborted)
		}
		return err
	}
	el.progress.Store(t.Done)
	defer w.working.track(t.ID, job.ID, &el.progress)()
	lctx, watch := w.poll.watchLane(ctx, t.ID, owner, w.opts.heartbeatEvery())
	defer watch.stop()
	watch.checkpointed()
	defer func() {
		if err == nil {
			return
		}
		if c := context.Cause(lctx); errors.Is(c, errLaneKilled) || errors.Is(c, errLeaseLost) {
			err = el.stopped(ctx, watch.last())
			return
		}
		if apperr.Is(err, apperr.Invalid) {
			// Nothing a redelivery would mend (a staged chunk gone, a
			// grid set no tile matrix set describes): the export fails.
			w.log.Error("export aborted", "task", t.ID, "layer", t.Layer, "err", err)
			recordFailure(ctx, w.tasks, w.log, el.t, "the export cannot go on: "+err.Error())
			el.removeStage(metatile.WriteContext(ctx))
			err = w.pool.finish(ctx, el.t, task.Aborted)
			return
		}
		if ctx.Err() == nil {
			el.release(metatile.WriteContext(ctx))
		}
	}()
	deadline := time.Now().Add(w.opts.Slice)
	if d, ok := ctx.Deadline(); ok {
		if soft := d.Add(-w.opts.SafetyMargin); soft.Before(deadline) {
			deadline = soft
		}
	}
	for el.t.Cursor < el.t.End {
		from := el.t.Cursor
		to := exportChunk(el.job, el.t.Start, el.t.End, from)
		tiles, err := el.stage(lctx, from, to)
		if err != nil {
			return fmt.Errorf("export task %d: %w", t.ID, err)
		}
		release := to < el.t.End && !time.Now().Before(deadline)
		if release {
			watch.releasing()
		}
		cp := task.Checkpoint{ID: t.ID, From: from, To: to, Tiles: tiles, Owner: owner, Release: release, Token: leaseToken()}
		next, err := w.tasks.Checkpoint(metatile.WriteContext(lctx), cp, time.Now())
		if apperr.Is(err, apperr.Conflict) {
			cur, gerr := w.tasks.Get(metatile.WriteContext(ctx), t.ID)
			if gerr == nil && (cur.Status != task.Running || cur.Owner != owner) {
				return el.stopped(ctx, cur)
			}
		}
		if err != nil {
			return fmt.Errorf("checkpoint export task %d: %w", t.ID, err)
		}
		el.t = next
		watch.checkpointed()
		if release {
			if err := w.pool.send(metatile.WriteContext(ctx), []queue.Message{{TaskID: t.ID, Cursor: el.t.Cursor}}); err != nil {
				return fmt.Errorf("continue export task %d: %w", t.ID, err)
			}
			return nil
		}
	}
	start := time.Now()
	size, err := el.write(lctx)
	if err != nil {
		return fmt.Errorf("export task %d: write the archive: %w", t.ID, err)
	}
	el.removeStage(metatile.WriteContext(ctx))
	if job.Published() {
		// Served now: the tile set's TileJSON and index.json name it, and
		// the CDN drops what it held of an earlier one.
		w.docs.ensure(metatile.WriteContext(ctx), job)
		w.docs.keysChanged([]string{el.key()})
	}
	w.log.Info("export written", "task", t.ID, "layer", job.Layer, "archive", el.key(), "bytes", size, "tiles", el.t.Done,
		"write_ms", time.Since(start).Milliseconds())
	return w.pool.finish(ctx, el.t, task.Done)
}

// exportLane loads what export task t's lane needs; Invalid when the
// layer changed so that it cannot be worked any more.
func (w *Worker) exportLane(ctx context.Context, t task.Task, job task.Job, owner string) (*exportLane, error) {
	rng := job.Range()
	l, sub, plan, err := w.jobPlan(ctx, job, "export")
	if err != nil {
		return nil, err
	}
	f, ok := export.TileFormat(rng.Format)
	if !ok {
		return nil, apperr.Invalidf("tile format %s is none an archive holds", rng.Format)
	}
	return &exportLane{w: w, t: t, job: job, layer: l, subset: sub, plan: plan, owner: owner, format: f,
		set: metatile.TileSet(w.opts.KeyPrefix, l, rng.GridSetID, rng.Format, rng.ParametersID)}, nil
}

func (el *exportLane) key() string {
	return exportKeyOf(el.w.opts.KeyPrefix, el.layer.ID, el.job, el.t.ID)
}

func (el *exportLane) stageKey(from int64) string {
	return exportStageKey(el.w.opts.KeyPrefix, el.layer.ID, el.t.ID, from)
}

// stagedTile is one tile of a chunk: where it is (row from the top) and
// its bytes as the archive holds them, nil when none is stored.
type stagedTile struct {
	z    int
	x, y int64
	data []byte
}

// stage reads the stored tiles of metatiles [from, to) and stores them as
// one chunk (exportStageKey(from)); it returns how many tiles the
// metatiles hold, stored or not.
func (el *exportLane) stage(ctx context.Context, from, to int64) (int64, error) {
	var tiles []stagedTile
	g := el.subset.GridSet
	for i := from; i < to; i++ {
		m := el.plan.Meta(i)
		_, rows := g.Size(m.Tiles.Z)
		for x, y := range m.All() {
			tiles = append(tiles, stagedTile{z: m.Tiles.Z, x: x, y: rows - 1 - y})
		}
	}
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(exportReads)
	var read atomic.Int64
	for i := range tiles {
		eg.Go(func() error {
			st := &tiles[i]
			_, rows := g.Size(st.z)
			data, meta, found, err := el.w.tiles.Get(ectx, el.set.Key(st.z, st.x, rows-1-st.y))
			if err != nil || !found {
				return err
			}
			if st.data, err = export.TileData(el.format, data, meta.ContentEncoding == "gzip"); err != nil {
				return fmt.Errorf("stored tile %d/%d/%d (row from the bottom): %w", st.z, st.x, rows-1-st.y, err)
			}
			el.progress.Store(el.t.Done + read.Add(1))
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return 0, err
	}
	var buf []byte
	for _, st := range tiles {
		if st.data == nil {
			continue
		}
		buf = append(buf, byte(st.z))
		buf = binary.AppendUvarint(buf, uint64(st.x))
		buf = binary.AppendUvarint(buf, uint64(st.y))
		buf = binary.AppendUvarint(buf, uint64(len(st.data)))
		buf = append(buf, st.data...)
	}
	if err := el.w.tiles.Put(metatile.WriteContext(ctx), el.stageKey(from), buf, tilestore.Meta{ContentType: "application/octet-stream"}); err != nil {
		return 0, fmt.Errorf("stage metatiles %d-%d: %w", from, to, err)
	}
	el.progress.Store(el.t.Done + int64(len(tiles)))
	return int64(len(tiles)), nil
}

// write writes the archive from the lane's staged chunks, in order, to a
// temporary file, and uploads it; it returns the archive's size.
func (el *exportLane) write(ctx context.Context) (int64, error) {
	dir, err := os.MkdirTemp("", "tilecache-export-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "archive."+el.job.Archive())
	rng := el.job.Range()
	opt := export.Options{TileFormat: el.format, MaxZoom: rng.ZoomStop, StagingDir: filepath.Join(dir, "staging")}
	if el.job.Archive() == export.GPKG && !grid.IsWebMercatorPyramid(el.subset) {
		if opt.TileMatrixSet, err = exportTileMatrixSet(el.subset, rng.ZoomStop); err != nil {
			return 0, apperr.Wrap(apperr.Invalid, err, "grid set %s", rng.GridSetID)
		}
	}
	aw, closeOut, err := export.Create(ctx, el.job.Archive(), path, opt)
	if err != nil {
		return 0, err
	}
	err = el.putStaged(ctx, aw)
	if err == nil {
		err = aw.Close(ctx, el.metadata(ctx))
		if errors.Is(err, archive.ErrNoTiles) {
			err = apperr.Wrap(apperr.Invalid, err, "none of the range's tiles is stored (blank or not seeded), and a %s archive cannot be empty", el.job.Archive())
		}
	} else {
		aw.Abort()
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	meta := tilestore.Meta{ContentType: export.ContentType(el.job.Archive())}
	if err := tilestore.Upload(metatile.WriteContext(ctx), el.w.tiles, el.key(), bufio.NewReaderSize(f, 1<<20), fi.Size(), meta); err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// putStaged puts the tiles of every staged chunk of the lane to aw.
func (el *exportLane) putStaged(ctx context.Context, aw export.Writer) error {
	t := el.t
	for from := t.Start; from < t.End; from = exportChunk(el.job, t.Start, t.End, from) {
		key := el.stageKey(from)
		buf, _, found, err := el.w.tiles.Get(ctx, key)
		if err != nil {
			return err
		}
		if !found {
			return apperr.Invalidf("the staged tiles of metatiles from %d (%s) are missing from the store", from, key)
		}
		for len(buf) > 0 {
			z := int(buf[0])
			buf = buf[1:]
			var v [3]uint64
			for i := range v {
				n := 0
				if v[i], n = binary.Uvarint(buf); n <= 0 {
					return fmt.Errorf("staged chunk %s is damaged", key)
				}
				buf = buf[n:]
			}
			if v[2] > uint64(len(buf)) {
				return fmt.Errorf("staged chunk %s is damaged", key)
			}
			if err := aw.Put(ctx, z, int64(v[0]), int64(v[1]), buf[:v[2]]); err != nil {
				return err
			}
			buf = buf[v[2]:]
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// metadata describes the export's tiles: the layer's title and
// attribution, the exported levels and area, and from the tile set's
// published TileJSON, where it has one, its centre (when the export
// covers it) and a vector tile set's vector_layers.
func (el *exportLane) metadata(ctx context.Context) archive.Metadata {
	rng := el.job.Range()
	d := export.Description{Name: el.layer.Title, Attribution: el.layer.Attribution, TileFormat: el.format,
		MinZoom: rng.ZoomStart, MaxZoom: rng.ZoomStop, Box: rng.Bounds}
	if d.Name == "" {
		d.Name = el.layer.Name
	}
	data, _, found, err := el.w.tiles.Get(ctx, el.set.Dir()+tileJSONName)
	if err != nil {
		el.w.log.Warn("read the tile set's TileJSON for an export's metadata", "task", el.t.ID, "err", err)
	}
	var tj struct {
		Attribution  *string         `json:"attribution"`
		Center       *[3]float64     `json:"center"`
		VectorLayers json.RawMessage `json:"vector_layers"`
	}
	if found && json.Unmarshal(data, &tj) == nil {
		if tj.Attribution != nil {
			d.Attribution = *tj.Attribution // as published: only safe markup
		}
		ext := el.subset.Extent()
		if rng.Area == "" && rng.Bounds == [4]float64{ext.MinX, ext.MinY, ext.MaxX, ext.MaxY} {
			d.Center = tj.Center
		}
		d.VectorLayers = tj.VectorLayers
	}
	return export.Metadata(d)
}

// tileJSONName is the name of a tile set's TileJSON document in its
// directory (the discovery documents').
const tileJSONName = "tilejson.json"

// stopped ends a lane whose task was killed (its objects removed, its
// last count recorded) or taken over by another worker.
func (el *exportLane) stopped(ctx context.Context, cur task.Task) error {
	wctx := metatile.WriteContext(ctx)
	if cur.Status == task.Aborted && cur.Killed {
		if err := el.w.tasks.KilledAt(wctx, cur.ID, el.progress.Load()); err != nil {
			el.w.log.Warn("record the progress of a killed export", "task", cur.ID, "err", err)
		}
		el.removeStage(wctx)
	}
	el.w.log.Info("export stopped: task killed or taken over", "task", cur.ID, "status", cur.Status.String(), "done", el.progress.Load())
	return nil
}

// removeStage removes the lane's staged chunks (best effort: a chunk left
// is an object under the service's own prefix, nothing reads it).
func (el *exportLane) removeStage(ctx context.Context) {
	var keys []string
	t := el.t
	for from := t.Start; from < t.End; from = exportChunk(el.job, t.Start, t.End, from) {
		keys = append(keys, el.stageKey(from))
		if len(keys) == tilestore.DeleteBatch {
			if _, err := el.w.tiles.Delete(ctx, keys); err != nil {
				el.w.log.Warn("remove an export's staged tiles", "task", t.ID, "err", err)
				return
			}
			keys = keys[:0]
		}
	}
	if _, err := el.w.tiles.Delete(ctx, keys); err != nil {
		el.w.log.Warn("remove an export's staged tiles", "task", t.ID, "err", err)
	}
}

// release gives up the lane's lease without moving its cursor, when it
// stops on an error: the message's next delivery takes it at once.
func (el *exportLane) release(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := el.t.Cursor
	if _, err := el.w.tasks.Checkpoint(ctx, task.Checkpoint{ID: el.t.ID, From: c, To: c, Owner: el.owner, Release: true, Token: leaseToken()}, time.Now()); err != nil && !apperr.Is(err, apperr.Conflict) {
		el.w.log.Warn("give up the lease of a stopping export", "task", el.t.ID, "err", err)
	}
}

// exportTileMatrixSet returns the GeoPackage tile matrix set of levels
// 0..maxZoom of a grid subset that is not the Web Mercator pyramid: its
// grid set's extent, which every level must cover with whole tiles (a
// GeoPackage anchors each level's matrix at the extent's top-left
// corner), in a CRS a GeoPackage names (EPSG:4326 or 3857; another
// EPSG code is named by its code alone).
func exportTileMatrixSet(sub *grid.Subset, maxZoom int) (gpkg.TileMatrixSet, error) {
	g := sub.GridSet
	srs := gpkg.SRS{ID: g.EPSG, Name: "EPSG:" + strconv.Itoa(g.EPSG), Organization: "EPSG", OrgID: g.EPSG, Definition: "undefined"}
	switch {
	case g.EPSG == 4326:
		srs = gpkg.WGS84SRS
	case grid.SameCRS(g.EPSG, 3857):
		srs = gpkg.WebMercatorSRS
	}
	s := gpkg.TileMatrixSet{SRS: srs, MinX: g.Extent.MinX, MinY: g.Extent.MinY, MaxX: g.Extent.MaxX, MaxY: g.Extent.MaxY}
	for z := 0; z <= maxZoom; z++ {
		cols, rows := g.Size(z)
		w, h := g.Span(z)
		if math.Abs(float64(cols)*w-g.Extent.Width()) > 1e-6*w || math.Abs(float64(rows)*h-g.Extent.Height()) > 1e-6*h {
			return gpkg.TileMatrixSet{}, fmt.Errorf("level %d is not a whole number of tiles over the grid set's extent", z)
		}
		s.Matrices = append(s.Matrices, gpkg.TileMatrix{Zoom: z, MatrixWidth: cols, MatrixHeight: rows,
			TileWidth: g.TileWidth, TileHeight: g.TileHeight, PixelXSize: g.Resolutions[z], PixelYSize: g.Resolutions[z]})
	}
	if err := s.Validate(); err != nil {
		return gpkg.TileMatrixSet{}, err
	}
	return s, nil
}
