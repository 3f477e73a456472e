// The truncation of a deleted layer's tiles: a background task that
// deletes every key under the layer's id, page by page from a key cursor.

package seed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/queue"
	"tilecache/internal/quota"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// StartDeletion records the truncation of the tiles of a layer deleted
// with them (d, the mark its deletion saved in the stored configuration)
// as a TRUNCATE task of the layer's name, and starts it if the pool
// allows: it is listed, killed and worked like any task, by any process
// (see Work), though the layer is gone from the catalogue. The task's
// job carries the key prefix (task.Job.Prefix); its lane total is the
// layer's counted tiles (at least 1), an estimate: its processed count
// is the objects deleted, held below the total until the listing ends.
func (e *Engine) StartDeletion(ctx context.Context, d layer.Deletion) (task.Task, error) {
	prefix := tilestore.LayerPrefix(e.opts.KeyPrefix, d.ID)
	// A render on miss that began before the deletion removes what it
	// stores (see Options.Truncations).
	if err := e.markTruncated(ctx, d.Name, time.Now()); err != nil {
		return task.Task{}, fmt.Errorf("truncate deleted layer %s: mark it for renders on miss in progress: %w", d.Name, err)
	}
	total := e.countedTiles(ctx, d.Name)
	now := time.Now()
	job := task.Job{Layer: d.Name, Type: task.Truncate, Prefix: prefix, Tiles: total, Metatiles: total, Lanes: 1,
		RetryCount: -1, MaxFailures: 1, Created: now}
	job, tasks, err := e.tasks.Create(ctx, job, []task.Lane{{Start: 0, End: total, Tiles: total}}, now)
	if err != nil {
		return task.Task{}, fmt.Errorf("record the truncation of deleted layer %s: %w", d.Name, err)
	}
	e.log.Info("truncation of a deleted layer recorded", "layer", d.Name, "prefix", prefix, "job", job.ID, "estimate", total)
	t := tasks[0]
	promoted, err := e.Dispatch(ctx)
	if err != nil {
		e.log.Error("dispatch after a layer's deletion", "job", job.ID, "err", err)
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
func (e *Engine) countedTiles(ctx context.Context, name string) int64 {
	lister, ok := e.opts.Usage.(interface {
		Layers(ctx context.Context) ([]quota.LayerUsage, error)
	})
	if !ok {
		return 1
	}
	ls, err := lister.Layers(ctx)
	if err != nil {
		e.log.Warn("read the usage of a deleted layer for its truncation's estimate", "layer", name, "err", err)
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
// task t this worker leases as owner): it lists the job's prefix from the
// task's key cursor a page at a time, deletes the page, and checkpoints
// the last key deleted with the count, so that the next slice, a
// redelivery or another process goes on from there. A kill (or a lost
// lease) is seen at the next checkpoint, which fails. When the listing
// ends it removes the layer's usage, has the CDN drop the prefix and the
// index rebuilt, removes the deletion mark and finishes the task.
func (e *Engine) runDeletion(ctx context.Context, t task.Task, job task.Job, owner string) (err error) {
	defer func() {
		if err == nil {
			return
		}
		// The message comes again: its worker takes the lane at once
		// rather than wait for this lease to lapse.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		c := t.Cursor
		if _, rerr := e.tasks.Checkpoint(rctx, task.Checkpoint{ID: t.ID, From: c, To: c, Owner: owner, Release: true, Token: leaseToken()}, time.Now()); rerr != nil && !apperr.Is(rerr, apperr.Conflict) {
			e.log.Warn("give up the lease of a stopping truncation", "task", t.ID, "err", rerr)
		}
	}()
	deadline := time.Now().Add(e.opts.Slice)
	if d, ok := ctx.Deadline(); ok {
		if soft := d.Add(-e.opts.SafetyMargin); soft.Before(deadline) {
			deadline = soft
		}
	}
	page := e.opts.deletionPage()
	wctx := metatile.WriteContext(ctx)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("task %d: %w", t.ID, err)
		}
		keys, err := e.listPage(ctx, job.Prefix, t.After, page)
		if err != nil {
			return fmt.Errorf("task %d: list the deleted layer's keys after %q: %w", t.ID, t.After, err)
		}
		if len(keys) > 0 {
			if _, err := e.tiles.Delete(wctx, keys); err != nil {
				return fmt.Errorf("task %d: delete %d keys of the deleted layer: %w", t.ID, len(keys), err)
			}
		}
		last := len(keys) < page
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
		next, err := e.tasks.Checkpoint(wctx, cp, time.Now())
		if apperr.Is(err, apperr.Conflict) {
			cur, gerr := e.tasks.Get(wctx, t.ID)
			if gerr == nil && (cur.Status != task.Running || cur.Owner != owner) {
				e.log.Info("truncation of a deleted layer stopped: its task was killed or taken over", "task", t.ID,
					"layer", job.Layer, "status", cur.Status.String(), "after", cur.After)
				return nil
			}
		}
		if err != nil {
			return fmt.Errorf("checkpoint task %d: %w", t.ID, err)
		}
		t = next
		if last {
			return e.endDeletion(wctx, t, job)
		}
		if release {
			if err := e.send(wctx, []queue.Message{{TaskID: t.ID, Cursor: t.Cursor}}); err != nil {
				return fmt.Errorf("continue task %d: %w", t.ID, err)
			}
			return nil
		}
	}
}

// errPageFull ends a page's listing.
var errPageFull = errors.New("page full")

// listPage returns up to n keys under prefix after key after (all from
// the start when after is ""), in key order.
func (e *Engine) listPage(ctx context.Context, prefix, after string, n int) ([]string, error) {
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
	if al, ok := e.tiles.(tilestore.AfterLister); ok {
		err = al.ListAfter(ctx, prefix, after, add)
	} else {
		err = e.tiles.List(ctx, prefix, add)
	}
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, err
	}
	return keys, nil
}

// endDeletion ends a deleted layer's truncation whose listing found no
// key left: the layer's usage removed, the CDN told, the index rebuilt,
// the deletion mark removed, the task finished. A failure returns an
// error (the lane message comes again: its listing finds nothing and it
// ends here again).
func (e *Engine) endDeletion(ctx context.Context, t task.Task, job task.Job) error {
	if e.opts.Changes != nil {
		e.opts.Changes.PrefixChanged(job.Prefix)
	}
	if e.opts.Documents != nil {
		changed, err := e.opts.Documents.RebuildIndex(ctx)
		if err != nil {
			e.log.Error("rebuild the index of tile sets after a deleted layer's truncation", "layer", job.Layer, "err", err)
		}
		e.keysChanged(changed)
	}
	if e.opts.Usage != nil {
		if err := e.opts.Usage.RemoveLayer(ctx, job.Layer, false); err != nil {
			return fmt.Errorf("task %d: remove the usage of deleted layer %s: %w", t.ID, job.Layer, err)
		}
	}
	if e.opts.Unmark != nil {
		if err := e.opts.Unmark(ctx, job.Layer, e.prefixID(job.Prefix)); err != nil {
			return fmt.Errorf("task %d: remove the deletion mark of layer %s: %w", t.ID, job.Layer, err)
		}
	}
	e.log.Info("deleted layer truncated", "layer", job.Layer, "task", t.ID, "objects", t.Done)
	return e.finish(ctx, t, task.Done)
}

// prefixID returns the layer id of a layer's key prefix
// (tilestore.LayerPrefix's inverse).
func (e *Engine) prefixID(prefix string) string {
	if p := strings.TrimSuffix(e.opts.KeyPrefix, "/"); p != "" {
		prefix = strings.TrimPrefix(prefix, p+"/")
	}
	return strings.TrimSuffix(prefix, "/")
}
