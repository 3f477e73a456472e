// Counting a writer's tally in the disk usage, for every owner of writers
// (seed lanes, render on miss).

package metatile

import (
	"context"
	"log/slog"
	"time"

	"tilecache/internal/quota"
)

// Usage is where stored and deleted tiles are counted (implemented by the
// task store adapters).
type Usage interface {
	QuotaConfig(ctx context.Context) (quota.Config, error)
	quota.Accounting
}

// Accounts counts writers' tallies in Usage; with Usage nil nothing is
// counted and every method does nothing.
type Accounts struct {
	Usage Usage
	Log   *slog.Logger
}

// Start turns counting on for a tally, reading the disk block size.
func (a Accounts) Start(ctx context.Context, t *Tally) error {
	if a.Usage == nil {
		return nil
	}
	cfg, err := a.Usage.QuotaConfig(ctx)
	if err != nil {
		return err
	}
	t.Start(cfg.DiskBlockSize)
	return nil
}

// Settle ends a tally its owner could not hand to a checkpoint: when
// killed (nobody redoes those tiles) it is applied directly, else (or when
// that fails) layer is marked for a recount, why being the reason logged.
// job names the owner's job in logs (0 for none). The tally is empty
// afterwards.
func (a Accounts) Settle(ctx context.Context, t *Tally, layer string, job int64, killed bool, why string) {
	defer t.Reset()
	if !t.Touched() || a.Usage == nil {
		return
	}
	if killed {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err := a.Usage.ApplyDeltas(ctx, t.Pending(), time.Now())
		if err == nil {
			return
		}
		a.Log.Error("apply the usage of a killed lane", "job", job, "layer", layer, "err", err)
	}
	a.MarkDirty(ctx, layer, why)
}

// MarkDirty marks a layer for a recount, best-effort (a context of its
// own: ctx may be what ended the writer's owner).
func (a Accounts) MarkDirty(ctx context.Context, layer, why string) {
	if a.Usage == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := a.Usage.MarkDirty(ctx, []string{layer}); err != nil {
		a.Log.Error("mark usage for a recount", "layer", layer, "why", why, "err", err)
		return
	}
	a.Log.Info("usage marked for a recount", "layer", layer, "why", why)
}
