// Package backends is the ports' adapters as one value (Backends): the
// tile store, the state adapters and the queue, on AWS (the bucket, the
// task table; AWS) or, in package app, embedded. Part of the shared core,
// apart from package core because the state's ports name the render on
// miss's claims, which the log ingest does not link.
package backends

import (
	"time"

	"tilecache/internal/account"
	"tilecache/internal/apitoken"
	"tilecache/internal/audit"
	"tilecache/internal/layer"
	"tilecache/internal/onmiss"
	"tilecache/internal/queue"
	"tilecache/internal/quota"
	"tilecache/internal/schedule"
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

// State is the state adapters, one per port, over one DynamoDB table or
// one bbolt file (internal/state/dynamo, internal/state/bolt).
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
	Schedules schedule.Store
	// Config is the configuration managed at run time.
	Config    layer.ConfigStore
	Claims    onmiss.Claims
	ReadMarks quota.Marks
	// Writes counts the state's write requests when its adapters do (the
	// DynamoDB table's); nil otherwise.
	Writes WriteCounter
	// Audit is the audit trail, keeping records for a retention.
	Audit func(retention time.Duration) audit.Store
	// Tokens are the API tokens (Authorization: Bearer).
	Tokens apitoken.Store
	// Accounts are the accounts added at run time.
	Accounts account.Store
}

// WriteCounter counts the write requests of the state adapters.
type WriteCounter interface {
	Writes() int64
	WritesByOp() map[string]int64
}
