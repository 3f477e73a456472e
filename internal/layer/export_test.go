package layer

import "time"

// LayersBuilt returns how many layer entries the package has built.
func LayersBuilt() int64 { return layersBuilt.Load() }

// SetClock makes r read the time from now (a test's virtual clock).
func (r *Registry) SetClock(now func() time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = now
}
