package worker

import (
	"context"
	"encoding/json"

	"tilecache/internal/seed"
	"tilecache/internal/task"
	"tilecache/internal/wire"
)

// Submitter takes seed, reseed and truncate requests (seed.Engine).
type Submitter interface {
	Submit(ctx context.Context, r seed.Request) ([]task.Task, error)
}

// ScheduledRequests starts the requests of schedules (schedule.Starter)
// as POST /rest/seed/{layer}.json starts a request: the same decoding
// (wire.DecodeScheduledSeedRequest), then Submit.
type ScheduledRequests struct{ Submitter Submitter }

// Start implements schedule.Starter.
func (s ScheduledRequests) Start(ctx context.Context, layer string, body json.RawMessage) ([]task.Task, error) {
	req, err := wire.DecodeScheduledSeedRequest(layer, body)
	if err != nil {
		return nil, err
	}
	return s.Submitter.Submit(ctx, req)
}
