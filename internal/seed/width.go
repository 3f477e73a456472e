// The lanes worked in this process: their live progress, and the width of
// a seed lane (how many of its metatiles it renders at once).

package seed

import (
	"sync"
	"sync/atomic"
)

// working is the lanes worked in this process: each one's progress (the
// tiles processed, checkpointed or not: Control.List reports it between
// checkpoints) and the lanes of each job (jobWidths).
type working struct {
	live   sync.Map // task id → *atomic.Int64
	widths jobWidths
}

// track registers a lane of job working task id with its live progress;
// the returned function ends that.
func (w *working) track(id, job int64, progress *atomic.Int64) (untrack func()) {
	w.live.Store(id, progress)
	leave := w.widths.join(job)
	return func() {
		leave()
		w.live.CompareAndDelete(id, progress)
	}
}

// progress returns the live progress of task id's lane, if it works here.
func (w *working) progress(id int64) (int64, bool) {
	v, ok := w.live.Load(id)
	if !ok {
		return 0, false
	}
	return v.(*atomic.Int64).Load(), true
}

// jobWidths tracks, per job, the lanes worked in this process: how many
// are now and the most there were at once. When some of a job's lanes are
// done and others still work, those render several metatiles at once so
// that the job keeps as many renders going as it had lanes here: a job's
// last lane does not finish alone while the threads its siblings held sit
// idle. Renders in flight never exceed the job's peak here, so the
// upstream sees no more requests than threadCount, and memory holds no
// more metatiles than before. A process that works one lane at a time
// (the worker function) always has width 1.
type jobWidths struct {
	mu   sync.Mutex
	jobs map[int64]*jobWidth
}

type jobWidth struct{ live, peak int }

// join records a lane of job starting here; the returned function records
// its end.
func (w *jobWidths) join(job int64) (leave func()) {
	w.mu.Lock()
	if w.jobs == nil {
		w.jobs = map[int64]*jobWidth{}
	}
	j := w.jobs[job]
	if j == nil {
		j = &jobWidth{}
		w.jobs[job] = j
	}
	j.live++
	j.peak = max(j.peak, j.live)
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		if j.live--; j.live == 0 {
			delete(w.jobs, job)
		}
		w.mu.Unlock()
	}
}

// width returns how many metatiles a lane of job may render at once.
func (w *jobWidths) width(job int64) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if j := w.jobs[job]; j != nil && j.live > 0 {
		return max(1, j.peak/j.live)
	}
	return 1
}
