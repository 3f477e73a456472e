package maintenance

import (
	"context"
	"encoding/json"

	"tilecache/internal/gwc"
	"tilecache/internal/task"
)

// Submitter takes seed, reseed and truncate requests (seed.Control).
type Submitter interface {
	Submit(ctx context.Context, r gwc.SeedRequest) ([]task.Task, error)
}

// ScheduledRequests starts the requests of schedules (schedule.Starter)
// as POST /rest/seed/{layer}.json starts a request: the same decoding
// (gwc.DecodeScheduledSeedRequest), then Submit.
type ScheduledRequests struct{ Submitter Submitter }

// Start implements schedule.Starter.
func (s ScheduledRequests) Start(ctx context.Context, layer string, body json.RawMessage) ([]task.Task, error) {
	req, err := gwc.DecodeScheduledSeedRequest(layer, body)
	if err != nil {
		return nil, err
	}
	return s.Submitter.Submit(ctx, req)
}
