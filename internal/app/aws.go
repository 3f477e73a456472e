package app

import (
	"context"

	"tilecache/internal/app/backends/admin"
	"tilecache/internal/app/worker"
	"tilecache/internal/config"
)

// AWSBackends connects to the bucket, table and queue of cfg
// (worker.AWSBackends).
func AWSBackends(ctx context.Context, cfg config.Config) (admin.Backends, error) {
	return worker.AWSBackends(ctx, worker.Of(cfg))
}
