// Package backends is the ports' adapters as one value (Backends): the
// tile store, the state adapters and the queue, on AWS (the bucket, the
// task table; AWS) or, in package app, embedded. Part of the shared core,
// apart from package core because the state's ports name the render on
// miss's claims, which the log ingest does not link. The schedules are
// apart, in package scheduling (the cleaner's maintenance fires them), and
// the rest of the administration's state (audit trail, API tokens,
// accounts) in package admin, so that the tile origin and the worker link
// none of it and the maintenance's assembly only the schedules.
package backends

import (
	"tilecache/internal/layer"
	"tilecache/internal/onmiss"
	"tilecache/internal/queue"
	"tilecache/internal/quota"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// Backends are the ports' adapters: the tile store, the queue and the
// state adapters.
type Backends struct {
	Tiles tilestore.Store
	State
	// Queue is the lane queue (nil where no lane is sent or worked: the
	// tile origin).
	Queue queue.Queue
	// RecoverAll says the queue does not survive the process (embedded):
	// every RUNNING lane is re-enqueued at start, not only stale ones.
	RecoverAll bool
	Close      func() error
}

// State is the state adapters every assembly shares, one per port, over
// one DynamoDB table or one bbolt file (internal/state/dynamo,
// internal/state/bolt); the schedules' are scheduling.Backends', the
// administration's admin.State.
type State struct {
	// Tasks is the task store, with the reasons tasks failed.
	Tasks interface {
		task.Store
		task.FailureStore
	}
	// Usage is the disk usage and the disk-quota configuration.
	Usage interface {
		quota.UsageStore
		quota.ConfigStore
	}
	// Config is the configuration managed at run time.
	Config    layer.ConfigStore
	Claims    onmiss.Claims
	ReadMarks quota.Marks
	// Writes counts the state's write requests when its adapters do (the
	// DynamoDB table's); nil otherwise.
	Writes WriteCounter
}

// WriteCounter counts the write requests of the state adapters.
type WriteCounter interface {
	Writes() int64
	WritesByOp() map[string]int64
}
