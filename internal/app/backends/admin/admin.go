// Package admin is the administration's state adapters (State: the
// schedules, the audit trail, the API tokens and the accounts) beside the
// shared ones of package backends: what the API, the worker and the
// cleaner, and `tilecache serve` assemble, and the tile origin does not
// link (it has no administration interface and fires no schedule).
package admin

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"tilecache/internal/account"
	"tilecache/internal/apitoken"
	"tilecache/internal/app/backends"
	"tilecache/internal/audit"
	"tilecache/internal/config"
	"tilecache/internal/schedule"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/state/dynamo/adminstore"
)

// State is the administration's state adapters, over the same table or
// bbolt file as the backends' State.
type State struct {
	// Schedules are the schedules of saved requests.
	Schedules schedule.Store
	// Audit is the audit trail, keeping records for a retention.
	Audit func(retention time.Duration) audit.Store
	// Tokens are the API tokens (Authorization: Bearer).
	Tokens apitoken.Store
	// Accounts are the accounts added at run time.
	Accounts account.Store
}

// Backends are the backends with the administration's state.
type Backends struct {
	backends.Backends
	Admin State
}

// AWS is backends.AWS with the administration's state over the same
// table.
func AWS(ctx context.Context, a config.AWS, bucket, tableName string, staleAfter time.Duration) (Backends, aws.Config, error) {
	b, table, awsCfg, err := backends.AWSTable(ctx, a, bucket, tableName, staleAfter)
	if err != nil {
		return Backends{}, aws.Config{}, err
	}
	return Backends{Backends: b, Admin: Dynamo(table)}, awsCfg, nil
}

// Dynamo is the administration's state adapters over table.
func Dynamo(table *dynamo.Table) State {
	s := adminstore.New(table)
	return State{Schedules: s.Schedules(), Audit: func(d time.Duration) audit.Store { return s.Audit(d) },
		Tokens: s.Tokens(), Accounts: s.Accounts()}
}
