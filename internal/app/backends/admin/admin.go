// Package admin is the administration's state adapters (State: the audit
// trail, the API tokens and the accounts) beside the backends with the
// schedules of package scheduling: what the API function and `tilecache
// serve` assemble, and the other functions do not link (the tile origin
// and the log ingest have no administration interface; the cleaner fires
// the schedules and needs no more, the worker not even those).
package admin

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"tilecache/internal/account"
	"tilecache/internal/apitoken"
	"tilecache/internal/app/backends/scheduling"
	"tilecache/internal/audit"
	"tilecache/internal/config"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/state/dynamo/adminstore"
)

// State is the administration's state adapters, over the same table or
// bbolt file as the backends' State.
type State struct {
	// Audit is the audit trail, keeping records for a retention.
	Audit func(retention time.Duration) audit.Store
	// Tokens are the API tokens (Authorization: Bearer).
	Tokens apitoken.Store
	// Accounts are the accounts added at run time.
	Accounts account.Store
}

// Backends are the backends and the schedules with the administration's
// state.
type Backends struct {
	scheduling.Backends
	Admin State
}

// AWS is scheduling.AWS with the administration's state over the same
// table.
func AWS(ctx context.Context, a config.AWS, bucket, tableName string, staleAfter time.Duration) (Backends, aws.Config, error) {
	b, table, awsCfg, err := scheduling.AWS(ctx, a, bucket, tableName, staleAfter)
	if err != nil {
		return Backends{}, aws.Config{}, err
	}
	return Backends{Backends: b, Admin: Dynamo(table)}, awsCfg, nil
}

// Dynamo is the administration's state adapters over table.
func Dynamo(table *dynamo.Table) State {
	s := adminstore.New(table)
	return State{Audit: func(d time.Duration) audit.Store { return s.Audit(d) }, Tokens: s.Tokens(), Accounts: s.Accounts()}
}
