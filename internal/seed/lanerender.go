// A lane's renders: a metatile through the writer, with the job's retries
// and the invocation's time budget.

package seed

import (
	"context"
	"fmt"
	"sync"
	"time"

	"tilecache/internal/grid"
)

// renderAll renders metas at once (the first in this goroutine) and
// returns their outcomes by position.
func (ln *lane) renderAll(ctx context.Context, metas []grid.Metatile) []error {
	errs := make([]error, len(metas))
	var wg sync.WaitGroup
	for i := 1; i < len(metas); i++ {
		wg.Go(func() { errs[i] = ln.renderWithRetries(ctx, metas[i]) })
	}
	errs[0] = ln.renderWithRetries(ctx, metas[0])
	wg.Wait()
	return errs
}

// renderWithRetries works one seed/reseed metatile, retrying per the job's
// failure settings.
func (ln *lane) renderWithRetries(ctx context.Context, m grid.Metatile) error {
	rctx := ctx
	if !ln.hard.IsZero() {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadlineCause(ctx, ln.hard, errRenderBudget)
		defer cancel()
	}
	// outOfTime: the budget, not the lane, ended the render; a tile
	// failure like any other (never a storage error to redeliver).
	outOfTime := func() error {
		r := m.Tiles
		return fmt.Errorf("render z%d metatile at %d,%d: %w", r.Z, r.MinX, r.MinY, errRenderBudget)
	}
	tries := 1 + max(ln.job.Render().RetryCount, 0)
	var err error
	for try := range tries {
		if try > 0 {
			select {
			case <-rctx.Done():
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return outOfTime()
			case <-time.After(time.Duration(ln.job.Render().RetryWaitMS) * time.Millisecond):
			}
		}
		err = ln.w.Render(rctx, m)
		switch {
		case err == nil || ctx.Err() != nil:
			return err
		case rctx.Err() != nil:
			return outOfTime()
		}
		ln.env.log.Warn("tile failure", "job", ln.job.ID, "layer", ln.job.Layer, "z", m.Tiles.Z,
			"x", m.Tiles.MinX, "y", m.Tiles.MinY, "try", try+1, "err", err)
	}
	return err
}
