package quota

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// maxPendingPages bounds the pages a Recorder holds between flushes; reads
// of further pages are not counted until the next flush.
const maxPendingPages = 100_000

// Recorder aggregates client reads of tiles per page in memory and flushes
// them to the usage store in batches: every FlushEvery (started by the
// read that finds the last flush that old, and by Run's ticker) and when
// Run ends. A flush adds the hits and moves each page's last access to the
// latest read. It is safe for concurrent use.
type Recorder struct {
	store AccessStore
	every time.Duration
	log   *slog.Logger

	mu        sync.Mutex
	pending   map[PageKey]*Access
	lastFlush time.Time
	flushing  bool
	dropped   int64
}

// NewRecorder returns a recorder flushing to store every every (default 5s).
func NewRecorder(store AccessStore, every time.Duration, log *slog.Logger) *Recorder {
	if every <= 0 {
		every = 5 * time.Second
	}
	return &Recorder{store: store, every: every, log: log, pending: map[PageKey]*Access{}, lastFlush: time.Now()}
}

// Record counts one read of a tile of page k at time at. When the last
// flush is older than the flush interval it starts one in the background,
// with ctx's values (its metrics registry) but not its end.
func (r *Recorder) Record(ctx context.Context, k PageKey, at time.Time) {
	r.mu.Lock()
	a := r.pending[k]
	if a == nil {
		if len(r.pending) >= maxPendingPages {
			r.dropped++
			r.mu.Unlock()
			return
		}
		a = &Access{Page: k}
		r.pending[k] = a
	}
	a.Hits++
	if at.After(a.Last) {
		a.Last = at
	}
	due := !r.flushing && at.Sub(r.lastFlush) >= r.every
	if due {
		r.flushing = true
	}
	r.mu.Unlock()
	if due {
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if err := r.flush(ctx); err != nil {
				r.log.Warn("flush tile accesses", "err", err)
			}
		}()
	}
}

// Flush writes the pending reads now. On failure they are kept for the
// next flush.
func (r *Recorder) Flush(ctx context.Context) error {
	r.mu.Lock()
	r.flushing = true
	r.mu.Unlock()
	return r.flush(ctx)
}

// flush writes the pending reads; the caller has set flushing.
func (r *Recorder) flush(ctx context.Context) error {
	r.mu.Lock()
	batch := make([]Access, 0, len(r.pending))
	for _, a := range r.pending {
		batch = append(batch, *a)
	}
	clear(r.pending)
	dropped := r.dropped
	r.dropped = 0
	r.lastFlush = time.Now()
	r.mu.Unlock()
	if dropped > 0 {
		r.log.Warn("tile accesses not counted: too many pages read between flushes", "reads", dropped)
	}
	err := r.store.RecordAccess(ctx, batch)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushing = false
	if err != nil {
		// Keep them for the next flush; hits may count twice for pages
		// whose update went through before the failure.
		for _, a := range batch {
			p := r.pending[a.Page]
			if p == nil {
				p = &Access{Page: a.Page}
				r.pending[a.Page] = p
			}
			p.Hits += a.Hits
			if a.Last.After(p.Last) {
				p.Last = a.Last
			}
		}
	}
	return err
}

// Run flushes every flush interval until ctx ends, then a last time.
func (r *Recorder) Run(ctx context.Context) {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if err := r.Flush(fctx); err != nil {
				r.log.Warn("flush tile accesses at shutdown", "err", err)
			}
			cancel()
			return
		case <-t.C:
			if err := r.Flush(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("flush tile accesses", "err", err)
			}
		}
	}
}
