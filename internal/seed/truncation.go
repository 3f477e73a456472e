// The one truncation path: how the engine deletes stored objects, by key
// or by a layer's key prefix, and what follows (the CDN told, the index of
// tile sets rebuilt, the layer's usage kept right).

package seed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/queue"
	"tilecache/internal/quota"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"

	"golang.org/x/sync/errgroup"
)

// Truncation deletes stored objects. Every deletion the engine makes goes
// through it:
//
//   - by key (deleteKeys): the tiles a truncate task's lanes delete and a
//     reseed's blank tiles (through the lanes' writers, truncationTiles),
//     the orphans a layer change left (Planner.Orphans), and each page of
//     a prefix;
//   - by a layer's key prefix (deletePrefix), a page of keys at a time in
//     key order: a mass truncation (MassTruncate) in one call, a deleted
//     layer's truncation (StartDeletion) as a task whose lane checkpoints
//     the last key of each page.
//
// Usage is counted one way per kind of deletion: a deletion by tile
// address counts each tile deleted (the lane's tally, applied with its
// checkpoint; see Usage); a deletion that empties a layer's prefix removes
// the layer's usage (removed), marked for a recount while another task of
// the layer is active; a deletion that can tell neither (an orphan
// removal, a prefix truncation that failed part way) marks the layer for
// a recount.
type Truncation struct {
	layers   *layer.Catalogue
	tasks    task.Store
	tiles    tilestore.Store
	pool     taskStarter
	opts     Options
	log      *slog.Logger
	accounts metatile.Accounts
	docs     docKeeper
}

// taskStarter is what a truncation does with the pool: start pending
// tasks, send a lane's continuation, finish a task.
type taskStarter interface {
	Dispatch(ctx context.Context) ([]task.Task, error)
	send(ctx context.Context, msgs []queue.Message) error
	finish(ctx context.Context, t task.Task, status task.Status) error
}

// deleteKeys deletes keys, handing the store at most truncateBatch keys
// per call (several DeleteBatch requests, which the store sends at once),
// and returns how many objects were deleted. Delete may be handed more
// keys than that at once: those calls run concurrently.
func deleteKeys(ctx context.Context, tiles metatile.Tiles, keys []string) (int64, error) {
	if len(keys) <= truncateBatch {
		n, err := tiles.Delete(ctx, keys)
		return int64(n), err
	}
	var (
		deleted atomic.Int64
		g       errgroup.Group
	)
	g.SetLimit(4)
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), truncateBatch)]
		keys = keys[len(chunk):]
		g.Go(func() error {
			n, err := tiles.Delete(ctx, chunk)
			deleted.Add(int64(n))
			return err
		})
	}
	err := g.Wait()
	return deleted.Load(), err
}

// truncationTiles is the tile store as the lanes' writers see it: their
// deletions go through deleteKeys.
type truncationTiles struct{ tilestore.Store }

// Delete implements metatile.Tiles.
func (t truncationTiles) Delete(ctx context.Context, keys []string) (int, error) {
	n, err := deleteKeys(ctx, t.Store, keys)
	return int(n), err
}

// errPageFull ends a page's listing.
var errPageFull = errors.New("page full")

// deletePrefix deletes the objects under prefix whose keys come after
// after ("" for all), a page of at most page keys at a time: it lists a
// page in key order, deletes it (in a write context: a cancellation ends
// the truncation between pages), and hands the page's keys to each (when
// not nil) with last true once the listing ended; each returning stop
// ends the truncation there. It returns the objects deleted.
func (tr *Truncation) deletePrefix(ctx context.Context, prefix, after string, page int,
	each func(keys []string, last bool) (stop bool, err error)) (int64, error) {
	var deleted int64
	for {
		if err := ctx.Err(); err != nil {
			return deleted, err
		}
		keys, err := tr.listPage(ctx, prefix, after, page)
		if err != nil {
			return deleted, fmt.Errorf("list the keys under %s after %q: %w", prefix, after, err)
		}
		if len(keys) > 0 {
			n, err := deleteKeys(metatile.WriteContext(ctx), tr.tiles, keys)
			deleted += n
			if err != nil {
				return deleted, fmt.Errorf("delete %d keys under %s: %w", len(keys), prefix, err)
			}
			after = keys[len(keys)-1]
		}
		last := len(keys) < page
		if each != nil {
			if stop, err := each(keys, last); stop || err != nil {
				return deleted, err
			}
		}
		if last {
			return deleted, nil
		}
	}
}

// listPage returns up to n keys under prefix after key after (all from
// the start when after is ""), in key order.
func (tr *Truncation) listPage(ctx context.Context, prefix, after string, n int) ([]string, error) {
	keys := make([]string, 0, n)
	add := func(o tilestore.Object) error {
		if after != "" && o.Key <= after {
			return nil
		}
		keys = append(keys, o.Key)
		if len(keys) == n {
			return errPageFull
		}
		return nil
	}
	var err error
	if al, ok := tr.tiles.(tilestore.AfterLister); ok {
		err = al.ListAfter(ctx, prefix, after, add)
	} else {
		err = tr.tiles.List(ctx, prefix, add)
	}
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, err
	}
	return keys, nil
}

// removed is what follows a truncation that emptied layerName's prefix,
// whatever started it: the CDN drops the prefix (when deleted is not
// zero), the index of tile sets is rebuilt, and the layer's usage is
// removed, marked for a recount when a task of the layer other than
// except (0: none) is active, since its next checkpoint may count tiles
// deleted here. A usage that could not be removed marks the layer too.
func (tr *Truncation) removed(ctx context.Context, layerName, prefix string, deleted, except int64) error {
	if deleted > 0 && tr.opts.Changes != nil {
		tr.opts.Changes.PrefixChanged(prefix)
	}
	tr.docs.rebuildIndex(ctx, layerName)
	if tr.opts.Usage == nil {
		return nil
	}
	active, err := tr.layerActive(ctx, layerName, except)
	if err != nil {
		tr.log.Error("check the tasks of a truncated layer", "layer", layerName, "err", err)
		active = true
	}
	if err := tr.opts.Usage.RemoveLayer(ctx, layerName, active); err != nil {
		tr.accounts.MarkDirty(ctx, layerName, "the usage of a truncated layer could not be removed")
		return fmt.Errorf("remove the usage of layer %s: %w", layerName, err)
	}
	return nil
}

// layerActive reports whether a task of the layer other than except is
// PENDING or RUNNING.
func (tr *Truncation) layerActive(ctx context.Context, layerName string, except int64) (bool, error) {
	tasks, err := tr.tasks.List(ctx, time.Now())
	if err != nil {
		return false, err
	}
	for _, t := range tasks {
		if t.Layer == layerName && t.ID != except && t.Status.Active() {
			return true, nil
		}
	}
	return false, nil
}

// markTruncated tells Options.Truncations, if set, that a truncation of
// the layer's every object starts now, so that a render on miss in
// progress removes what it stores.
func (tr *Truncation) markTruncated(ctx context.Context, layerName string) error {
	if tr.opts.Truncations == nil {
		return nil
	}
	return tr.opts.Truncations.MarkTruncated(ctx, layerName, time.Now())
}

// MassTruncate deletes every object of a layer (all grid sets, formats and
// parameters ids, and the layer's side objects) before it returns, and
// reports how many objects it deleted. Running and pending tasks are not
// touched (contract §7.2). The layer's usage is removed with its pages.
func (tr *Truncation) MassTruncate(ctx context.Context, layerName string) (int64, error) {
	l, ok := tr.layers.Layer(layerName)
	if !ok {
		return 0, apperr.Invalidf("Could not find layer %s", layerName)
	}
	prefix := tilestore.LayerPrefix(tr.opts.KeyPrefix, l.ID)
	if err := tr.markTruncated(ctx, l.Name); err != nil {
		return 0, fmt.Errorf("mass truncate layer %s: mark it for renders on miss in progress: %w", l.Name, err)
	}
	deleted, err := tr.deletePrefix(ctx, prefix, "", truncateBatch, nil)
	if err != nil {
		if deleted > 0 && tr.opts.Changes != nil {
			tr.opts.Changes.PrefixChanged(prefix)
		}
		tr.accounts.MarkDirty(ctx, l.Name, "mass truncation failed part way")
		return deleted, fmt.Errorf("mass truncate layer %s: %w", l.Name, err)
	}
	tr.log.Info("layer truncated", "layer", l.Name, "objects", deleted)
	if err := tr.removed(ctx, l.Name, prefix, deleted, 0); err != nil {
		return deleted, fmt.Errorf("mass truncate layer %s: %w", l.Name, err)
	}
	return deleted, nil
}

// StartDeletion records the truncation of the tiles of a layer deleted
// with them (d, the mark its deletion saved in the stored configuration)
// as a TRUNCATE task of the layer's name, and starts it if the pool
// allows: it is listed, killed and worked like any task, by any process
// (see Worker.Work), though the layer is gone from the catalogue. The
// task's job is a task.LayerDeletion (its key prefix); its lane total is
// the layer's counted tiles (at least 1), an estimate: its processed
// count is the objects deleted, held below the total until the listing
// ends.
func (tr *Truncation) StartDeletion(ctx context.Context, d layer.Deletion) (task.Task, error) {
	prefix := tilestore.LayerPrefix(tr.opts.KeyPrefix, d.ID)
	// A render on miss that began before the deletion removes what it
	// stores (see Options.Truncations).
	if err := tr.markTruncated(ctx, d.Name); err != nil {
		return task.Task{}, fmt.Errorf("truncate deleted layer %s: mark it for renders on miss in progress: %w", d.Name, err)
	}
	total := tr.countedTiles(ctx, d.Name)
	now := time.Now()
	job := task.NewLayerDeletion(task.Header{Layer: d.Name, Tiles: total, Metatiles: total, Lanes: 1, Created: now}, prefix)
	job, tasks, err := tr.tasks.Create(ctx, job, []task.Lane{{Start: 0, End: total, Tiles: total}}, now)
	if err != nil {
		return task.Task{}, fmt.Errorf("record the truncation of deleted layer %s: %w", d.Name, err)
	}
	tr.log.Info("truncation of a deleted layer recorded", "layer", d.Name, "prefix", prefix, "job", job.ID, "estimate", total)
	t := tasks[0]
	promoted, err := tr.pool.Dispatch(ctx)
	if err != nil {
		tr.log.Error("dispatch after a layer's deletion", "job", job.ID, "err", err)
	}
	for _, p := range promoted {
		if p.ID == t.ID {
			t = p
		}
	}
	return t, nil
}

// countedTiles is the layer's tile count in the usage store, at least 1
// (1 when usage is not counted or cannot be read).
func (tr *Truncation) countedTiles(ctx context.Context, name string) int64 {
	lister, ok := tr.opts.Usage.(interface {
		Layers(ctx context.Context) ([]quota.LayerUsage, error)
	})
	if !ok {
		return 1
	}
	ls, err := lister.Layers(ctx)
	if err != nil {
		tr.log.Warn("read the usage of a deleted layer for its truncation's estimate", "layer", name, "err", err)
		return 1
	}
	for _, l := range ls {
		if l.Layer == name {
			return max(l.Tiles, 1)
		}
	}
	return 1
}

// deletionPage is how many keys one page of a deleted layer's truncation
// lists and deletes between checkpoints.
func (o Options) deletionPage() int {
	if o.TruncatePage <= 0 || o.TruncatePage > tilestore.DeleteBatch {
		return tilestore.DeleteBatch
	}
	return o.TruncatePage
}

// runDeletion works the lane of a deleted layer's truncation (job, whose
// task t this worker leases as owner): it deletes the job's prefix from
// the task's key cursor a page at a time (deletePrefix), and checkpoints
// the last key deleted with the count, so that the next slice, a
// redelivery or another process goes on from there. A kill (or a lost
// lease) is seen at the next checkpoint, which fails. When the listing
// ends it removes the layer's usage, has the CDN drop the prefix and the
// index rebuilt (removed), removes the deletion mark and finishes the
// task.
func (tr *Truncation) runDeletion(ctx context.Context, t task.Task, job task.Job, owner string) (err error) {
	defer func() {
		if err == nil {
			return
		}
		// The message comes again: its worker takes the lane at once
		// rather than wait for this lease to lapse.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		c := t.Cursor
		if _, rerr := tr.tasks.Checkpoint(rctx, task.Checkpoint{ID: t.ID, From: c, To: c, Owner: owner, Release: true, Token: leaseToken()}, time.Now()); rerr != nil && !apperr.Is(rerr, apperr.Conflict) {
			tr.log.Warn("give up the lease of a stopping truncation", "task", t.ID, "err", rerr)
		}
	}()
	deadline := time.Now().Add(tr.opts.Slice)
	if d, ok := ctx.Deadline(); ok {
		if soft := d.Add(-tr.opts.SafetyMargin); soft.Before(deadline) {
			deadline = soft
		}
	}
	wctx := metatile.WriteContext(ctx)
	// page checkpoints a page deleted, and ends the truncation or the
	// slice when it is the last.
	page := func(keys []string, last bool) (bool, error) {
		to := min(t.Cursor+int64(len(keys)), t.End-1)
		if last {
			to = t.End
		}
		to = max(to, t.Cursor)
		release := !last && !time.Now().Before(deadline)
		cp := task.Checkpoint{ID: t.ID, From: t.Cursor, To: to, Tiles: to - t.Cursor, Owner: owner, Release: release, Token: leaseToken()}
		if len(keys) > 0 {
			cp.After = keys[len(keys)-1]
		}
		next, err := tr.tasks.Checkpoint(wctx, cp, time.Now())
		if apperr.Is(err, apperr.Conflict) {
			cur, gerr := tr.tasks.Get(wctx, t.ID)
			if gerr == nil && (cur.Status != task.Running || cur.Owner != owner) {
				tr.log.Info("truncation of a deleted layer stopped: its task was killed or taken over", "task", t.ID,
					"layer", job.Layer, "status", cur.Status.String(), "after", cur.After)
				return true, nil
			}
		}
		if err != nil {
			return true, fmt.Errorf("checkpoint task %d: %w", t.ID, err)
		}
		t = next
		if last {
			return true, tr.endDeletion(wctx, t, job)
		}
		if release {
			if err := tr.pool.send(wctx, []queue.Message{{TaskID: t.ID, Cursor: t.Cursor}}); err != nil {
				return true, fmt.Errorf("continue task %d: %w", t.ID, err)
			}
			return true, nil
		}
		return false, nil
	}
	if _, err := tr.deletePrefix(ctx, job.Prefix(), t.After, tr.opts.deletionPage(), page); err != nil {
		return fmt.Errorf("task %d: truncate deleted layer %s: %w", t.ID, job.Layer, err)
	}
	return nil
}

// endDeletion ends a deleted layer's truncation whose listing found no
// key left: the CDN told, the index rebuilt, the layer's usage removed
// (removed), the deletion mark removed, the task finished. A failure
// returns an error (the lane message comes again: its listing finds
// nothing and it ends here again).
func (tr *Truncation) endDeletion(ctx context.Context, t task.Task, job task.Job) error {
	if err := tr.removed(ctx, job.Layer, job.Prefix(), max(t.Done, 1), t.ID); err != nil {
		return fmt.Errorf("task %d: deleted layer %s: %w", t.ID, job.Layer, err)
	}
	if tr.opts.Unmark != nil {
		if err := tr.opts.Unmark(ctx, job.Layer, prefixID(tr.opts.KeyPrefix, job.Prefix())); err != nil {
			return fmt.Errorf("task %d: remove the deletion mark of layer %s: %w", t.ID, job.Layer, err)
		}
	}
	tr.log.Info("deleted layer truncated", "layer", job.Layer, "task", t.ID, "objects", t.Done)
	return tr.pool.finish(ctx, t, task.Done)
}

// prefixID returns the layer id of a layer's key prefix under keyPrefix
// (tilestore.LayerPrefix's inverse).
func prefixID(keyPrefix, prefix string) string {
	if p := strings.TrimSuffix(keyPrefix, "/"); p != "" {
		prefix = strings.TrimPrefix(prefix, p+"/")
	}
	return strings.TrimSuffix(prefix, "/")
}
