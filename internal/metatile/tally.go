package metatile

import (
	"sync"

	"tilecache/internal/quota"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// Tally is the usage changes of a writer's stores and deletes that its
// owner has not counted yet (a lane's checkpoint carries them).
type Tally struct {
	on        bool
	blockSize int64
	set       tilestore.SetName
	metaPages int // most pages one metatile touches
	mu        sync.Mutex
	deltas    quota.Deltas
	touched   bool // tiles stored or deleted since the last checkpoint
}

// NewTally returns the tally of a writer of set (metatiles of metaW×metaH).
func NewTally(set tilestore.TileSet, metaW, metaH int) *Tally {
	pages := func(n int) int { return (n+(1<<quota.PageShift)-2)>>quota.PageShift + 1 }
	return &Tally{
		set:       set.SetName,
		metaPages: pages(metaW) * pages(metaH),
		deltas:    make(quota.Deltas),
	}
}

// MarkTouched records that tiles were (or may have been) changed.
func (a *Tally) MarkTouched() {
	a.mu.Lock()
	a.touched = true
	a.mu.Unlock()
}

// Start turns counting on in the current block size.
func (a *Tally) Start(blockSize int64) { a.on, a.blockSize = true, blockSize }

// Stored records a tile stored over an old one (oldSize < 0: there was none).
func (a *Tally) Stored(z int, x, y, oldSize, newSize int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.touched = true
	if !a.on {
		return
	}
	tiles := int64(1)
	if oldSize >= 0 {
		tiles = 0
	}
	a.deltas.Add(quota.PageOf(a.set, z, x, y), tiles, quota.Blocks(newSize, a.blockSize)-quota.Blocks(max(oldSize, 0), a.blockSize))
}

// Deleted records a tile of size bytes deleted.
func (a *Tally) Deleted(z int, x, y, size int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.on {
		a.deltas.Add(quota.PageOf(a.set, z, x, y), -1, -quota.Blocks(size, a.blockSize))
	}
}

// Touch records that a batch works on tile z/x/y's page, so that a batch
// stops before its checkpoint would carry too many pages.
func (a *Tally) Touch(z int, x, y int64) {
	if a.on {
		a.deltas.Add(quota.PageOf(a.set, z, x, y), 0, 0)
	}
}

// Full reports whether one more metatile could take the batch past the
// pages a checkpoint may carry.
func (a *Tally) Full() bool {
	return a.on && len(a.deltas)+a.metaPages > task.MaxCheckpointPages
}

// Room returns how many more metatiles the batch can take before Full
// (a large number when usage is not counted).
func (a *Tally) Room() int64 {
	if !a.on {
		return 1 << 30
	}
	return int64(max(0, (task.MaxCheckpointPages-len(a.deltas))/a.metaPages))
}

// Pending returns the batch's changes.
func (a *Tally) Pending() []quota.PageDelta {
	if !a.on {
		return nil
	}
	return a.deltas.List()
}

// Reset forgets the batch (after it was counted, applied or dropped).
func (a *Tally) Reset() {
	clear(a.deltas)
	a.touched = false
}

// On reports whether usage is counted (Start was called).
func (a *Tally) On() bool { return a.on }

// Touched reports whether tiles were (or may have been) stored or deleted
// since the last Reset.
func (a *Tally) Touched() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.touched
}
