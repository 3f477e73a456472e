// The engine's options, and the ports they name.

package seed

import (
	"context"
	"time"

	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/tilestore"
)

// Options tune the engine. Zero values take the defaults documented per field.
type Options struct {
	// SourceOf, when set, returns the source a layer's tiles are rendered
	// from, for layers that change at run time (a layer's Version names
	// its definition); New's sources map is then unused.
	SourceOf func(*layer.Layer) (source.Source, error)
	// Sync, when set, brings the layer catalogue up to the stored
	// configuration's newest version (layer.Registry.Sync: one small read
	// when nothing changed). Submit calls it before it reads the layer, so
	// that a layer another process deleted (or changed) moments ago is not
	// seeded on a catalogue up to a refresh period old.
	Sync func(ctx context.Context) error
	// Unmark, when set, removes the deletion mark of layer name with id
	// from the stored configuration (layer.Config.Unmark through
	// layer.Registry.Update): a deleted layer's truncation calls it when
	// every key under the id is gone (see StartDeletion).
	Unmark func(ctx context.Context, name, id string) error
	// TruncatePage is how many keys a deleted layer's truncation lists
	// and deletes between checkpoints. Default (and most)
	// tilestore.DeleteBatch.
	TruncatePage int
	// PoolSize bounds the number of RUNNING tasks. Default 16.
	PoolSize int
	// KeyPrefix is prepended to every tile key. Default none.
	KeyPrefix string
	// CheckpointEvery is the longest time between checkpoints (progress
	// writes) of a working lane. Default 8s: a lane writes one item per
	// checkpoint, and its usage pages on every 15th (see usageEvery).
	CheckpointEvery time.Duration
	// KillCheckEvery is how often a working lane reads its task to notice
	// a kill between checkpoints. Default 1s.
	KillCheckEvery time.Duration
	// Slice is the longest time one lane message is worked before the lane
	// continues in a new message. Default 5m.
	Slice time.Duration
	// SafetyMargin is kept before a context deadline (a Lambda's) when
	// deciding to stop claiming metatiles. Default 10s.
	SafetyMargin time.Duration
	// Retention is how long finished tasks stay in the task lists
	// (the contract allows at most 5 s). Default 3s.
	Retention time.Duration
	// StaleAfter is the heartbeat age after which Sweep re-enqueues a RUNNING
	// lane. It must exceed the slowest metatile. Default 2m.
	StaleAfter time.Duration
	// PutConcurrency bounds the tile writes of one metatile in flight at
	// once. Default 8.
	PutConcurrency int
	// Visibility is how long a received lane message stays invisible; the
	// worker extends it while working. Default 60s.
	Visibility time.Duration
	// Usage, if set, is where stored and deleted tiles are counted (see
	// Usage). Default none: nothing is counted.
	Usage Usage
	// Changes, if set, is told which stored tiles a reseed replaced or a
	// truncate deleted, so a CDN drops its cached copies. Default none.
	Changes Changes
	// Truncations, if set, is told of a mass truncation as it starts, so
	// that renders on miss in progress drop what they store
	// (onmiss.Renderer). Default none.
	Truncations TruncationMarker
	// Documents, if set, keeps the documents that describe tile sets to
	// map clients: a seed or reseed makes sure its tile set has them, a
	// mass truncation removes the layer's from the index. Default none.
	Documents Documents
	// Archives, if set, opens the archives imports copy (see
	// SubmitImport). Default none: imports are refused.
	Archives ArchiveOpener
}

// TruncationMarker hears of a layer's mass truncation as it starts.
type TruncationMarker interface {
	MarkTruncated(ctx context.Context, layerName string, now time.Time) error
}

// Documents keeps the discovery documents of tile sets (and whatever else
// a bucket needs to be read by other programs).
type Documents interface {
	// Ensure writes the documents of a tile set where they are missing or
	// out of date, and returns the keys it changed.
	Ensure(ctx context.Context, layerName, gridSetID, format string, parameters map[string]string) (changed []string, err error)
	// RebuildIndex rewrites the index of tile sets after objects were
	// removed, and returns the keys it changed.
	RebuildIndex(ctx context.Context) (changed []string, err error)
}

// Changes hears of stored objects that were replaced or removed (the CDN
// purger). It must not block: it only records.
type Changes interface {
	// TilesChanged: tiles of set at level z in columns minX..maxX changed.
	TilesChanged(set tilestore.TileSet, z int, minX, maxX int64)
	// PrefixChanged: objects under a key prefix (ending in "/") changed.
	PrefixChanged(prefix string)
	// KeysChanged: single objects (documents) changed.
	KeysChanged(keys ...string)
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.PoolSize <= 0 {
		o.PoolSize = 16
	}
	if o.PutConcurrency <= 0 {
		o.PutConcurrency = 8
	}
	def(&o.CheckpointEvery, 8*time.Second)
	def(&o.KillCheckEvery, time.Second)
	def(&o.Slice, 5*time.Minute)
	def(&o.SafetyMargin, 10*time.Second)
	def(&o.Retention, 3*time.Second)
	def(&o.StaleAfter, 2*time.Minute)
	def(&o.Visibility, 60*time.Second)
	return o
}

// usageEvery is the longest a lane holds usage changes back from its
// checkpoints (see lane.run).
func (o Options) usageEvery() time.Duration { return 15 * o.CheckpointEvery }

// takeoverAfter is the heartbeat age after which a redelivered lane
// message behind the task's cursor takes the lane over.
func (o Options) takeoverAfter() time.Duration { return 5 * o.CheckpointEvery }

// heartbeatEvery is the heartbeat age at which a busy lane refreshes it:
// well inside both the sweep's staleness and a redelivery's takeover age.
func (o Options) heartbeatEvery() time.Duration {
	return min(o.StaleAfter, o.takeoverAfter()) / 3
}
