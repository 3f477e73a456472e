// Package scheduling is the backends with the schedules of saved requests
// (Backends): what the maintenance's assembly (package maintenance: the
// cleaner function, which fires the due schedules) runs on; the worker's
// (package worker) runs on the backends alone. The rest of the
// administration's state (the audit trail, the API tokens, the accounts)
// is package admin's, which only the API and `tilecache serve` link; the
// tile origin, the log ingest and the worker link neither.
package scheduling

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"tilecache/internal/app/backends"
	"tilecache/internal/config"
	"tilecache/internal/schedule"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/state/dynamo/schedulestore"
)

// Backends are the backends with the schedules' store, over the same
// table or bbolt file as the backends' State.
type Backends struct {
	backends.Backends
	// Schedules are the schedules of saved requests.
	Schedules schedule.Store
}

// AWS is backends.AWSTable with the schedules over the same table, which
// it returns for the administration's other adapters (admin.AWS).
func AWS(ctx context.Context, a config.AWS, bucket, tableName string, staleAfter time.Duration) (Backends, *dynamo.Table, aws.Config, error) {
	b, table, awsCfg, err := backends.AWSTable(ctx, a, bucket, tableName, staleAfter)
	if err != nil {
		return Backends{}, nil, aws.Config{}, err
	}
	return Backends{Backends: b, Schedules: schedulestore.New(table)}, table, awsCfg, nil
}
