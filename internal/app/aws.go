package app

import (
	"context"

	"tilecache/internal/app/backends/admin"
	"tilecache/internal/app/worker"
	"tilecache/internal/config"
)

// AWSBackends connects to the bucket, table and queue of cfg (as
// maintenance.AWSBackends does) with the administration's state over the
// same table (admin.AWS).
func AWSBackends(ctx context.Context, cfg config.Config) (admin.Backends, error) {
	b, awsCfg, err := admin.AWS(ctx, cfg.AWS, cfg.Bucket, cfg.Table, cfg.StaleAfter)
	if err != nil {
		return admin.Backends{}, err
	}
	b.Queue = worker.LaneQueue(awsCfg, worker.Of(cfg))
	return b, nil
}
