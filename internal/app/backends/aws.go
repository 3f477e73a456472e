package backends

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"tilecache/internal/app/core"
	"tilecache/internal/awsconf"
	"tilecache/internal/config"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/tilestore/s3store"
)

// AWS connects to the tile bucket and the task table, with
// endpoints and credentials from the SDK's environment variables as a
// read them (a.Env: AWS_REGION, AWS_ENDPOINT_URL_S3, credentials; the
// SDK's clients read their other variables themselves), and the retry
// policy of all the clients (AWSRetry). Finished tasks stay listed for
// FinishedKeep(staleAfter). The Backends returned have no queue.
func AWS(ctx context.Context, a config.AWS, bucket, tableName string, staleAfter time.Duration) (Backends, aws.Config, error) {
	b, _, awsCfg, err := AWSTable(ctx, a, bucket, tableName, staleAfter)
	return b, awsCfg, err
}

// AWSTable is AWS with the task table, over which other adapters are
// taken (the schedules', the administration's: scheduling.AWS, admin.AWS).
func AWSTable(ctx context.Context, a config.AWS, bucket, tableName string, staleAfter time.Duration) (Backends, *dynamo.Table, aws.Config, error) {
	awsCfg, err := awsconf.Load(ctx, a.Env, awsconf.WithRetry(core.AWSRetry(a)))
	if err != nil {
		return Backends{}, nil, aws.Config{}, err
	}
	tiles, err := s3store.NewFromEnv(a.Env, bucket, "", func(o *s3store.Options) { o.Retry = core.AWSRetry(a) })
	if err != nil {
		return Backends{}, nil, aws.Config{}, fmt.Errorf("tile bucket %s: %w", bucket, err)
	}
	table := dynamo.New(core.DynamoClient(awsCfg, a), tableName, dynamo.WithFinishedKeep(FinishedKeep(staleAfter)))
	return Backends{Tiles: tiles, State: DynamoState(table), Close: tiles.Close}, table, awsCfg, nil
}

// FinishedKeep is how long finished tasks stay listed in the task table:
// long enough for the disk-quota cleaner to see that a layer worked within
// its settle time (staleAfter, TILECACHE_STALE_AFTER). Every process on
// one table keeps the same, since a listing prunes what it does not keep.
func FinishedKeep(staleAfter time.Duration) time.Duration {
	return max(dynamo.DefaultFinishedKeep, staleAfter+time.Minute)
}

// DynamoState is the state adapters over table.
func DynamoState(table *dynamo.Table) State {
	return State{Tasks: table.Tasks(), Usage: table.Usage(), Config: table.Config(),
		Claims: table.Claims(), ReadMarks: table.ReadMarks(), Writes: table}
}
