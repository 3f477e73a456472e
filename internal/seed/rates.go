// The render rates of the lanes worked in this process, by layer, which
// estimates count on.

package seed

import (
	"sync"
	"time"
)

// layerRates are the layers' recently measured rates of one lane.
type layerRates struct {
	mu sync.Mutex
	m  map[string]rate
}

// rate is a layer's recently measured tiles per second of one lane.
type rate struct {
	tiles float64
	secs  float64
	at    time.Time
}

// note records that a lane of layer processed tiles in d.
func (r *layerRates) note(layerName string, tiles int64, d time.Duration) {
	if tiles <= 0 || d <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]rate{}
	}
	lr := r.m[layerName]
	if time.Since(lr.at) > time.Hour {
		lr = rate{}
	}
	// A decaying sum: recent lanes weigh most.
	lr.tiles, lr.secs, lr.at = lr.tiles*0.8+float64(tiles), lr.secs*0.8+d.Seconds(), time.Now()
	r.m[layerName] = lr
}

// of returns the tiles per second of one lane of the layer, as measured
// in this process within the last hour; 0 when unknown.
func (r *layerRates) of(layerName string) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	lr, ok := r.m[layerName]
	if !ok || lr.secs <= 0 || time.Since(lr.at) > time.Hour {
		return 0
	}
	return lr.tiles / lr.secs
}
