package app

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"tilecache/internal/audit"
	"tilecache/internal/awsconf"
	"tilecache/internal/config"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/tilestore/s3store"
)

// AWSBackends connects to the bucket, table and queue of cfg, with
// endpoints and credentials from the SDK's environment variables as cfg
// read them (cfg.AWS.Env: AWS_REGION, AWS_ENDPOINT_URL_S3, credentials;
// the SDK's clients read their other variables themselves), and the retry
// policy of all the clients (awsRetry).
func AWSBackends(ctx context.Context, cfg config.Config) (Backends, error) {
	awsCfg, err := awsconf.Load(ctx, cfg.AWS.Env, awsconf.WithRetry(awsRetry(cfg)))
	if err != nil {
		return Backends{}, err
	}
	tiles, err := s3store.NewFromEnv(cfg.AWS.Env, cfg.Bucket, "", func(o *s3store.Options) { o.Retry = awsRetry(cfg) })
	if err != nil {
		return Backends{}, fmt.Errorf("tile bucket %s: %w", cfg.Bucket, err)
	}
	// Finished tasks stay listed long enough for the disk-quota cleaner to
	// see that a layer worked within its settle time (cfg.StaleAfter).
	keep := max(dynamo.DefaultFinishedKeep, cfg.StaleAfter+time.Minute)
	table := dynamo.New(dynamoClient(awsCfg, cfg), cfg.Table, dynamo.WithFinishedKeep(keep))
	q := sqsqueue.New(sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if e := awsconf.ServiceEndpoint(cfg.AWS.Env, "SQS"); e != nil {
			o.BaseEndpoint = e
		}
	}), cfg.QueueURL)
	return Backends{Tiles: tiles, State: DynamoState(table), Queue: q, Close: tiles.Close}, nil
}

// DynamoState is the state adapters over table.
func DynamoState(table *dynamo.Table) State {
	return State{Tasks: table.Tasks(), Usage: table.Usage(), Schedules: table.Schedules(), Config: table.Config(),
		Claims: table.Claims(), ReadMarks: table.ReadMarks(), Writes: table,
		Audit: func(d time.Duration) audit.Store { return table.Audit(d) }, Tokens: table.Tokens(), Accounts: table.Accounts()}
}

// awsRetry is the retry policy of every AWS client: cfg's attempts and
// budget, awsconf's backoff.
func awsRetry(cfg config.Config) awsconf.Retry {
	return awsconf.Retry{MaxAttempts: cfg.AWSMaxAttempts, Budget: cfg.AWSRetryBudget}
}

// dynamoClient returns the DynamoDB client of cfg, at the endpoint its
// configuration names (awsconf.ServiceEndpoint).
func dynamoClient(awsCfg aws.Config, cfg config.Config) *dynamodb.Client {
	return dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = true
		if e := awsconf.ServiceEndpoint(cfg.AWS.Env, "DYNAMODB"); e != nil {
			o.BaseEndpoint = e
		}
	})
}
