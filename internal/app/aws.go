package app

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"tilecache/internal/app/backends"
	"tilecache/internal/awsconf"
	"tilecache/internal/config"
	"tilecache/internal/queue/sqsqueue"
)

// AWSBackends connects to the bucket, table and queue of cfg (see
// backends.AWS), the queue with the same AWS configuration.
func AWSBackends(ctx context.Context, cfg config.Config) (backends.Backends, error) {
	b, awsCfg, err := backends.AWS(ctx, cfg.AWS, cfg.Bucket, cfg.Table, cfg.StaleAfter)
	if err != nil {
		return backends.Backends{}, err
	}
	b.Queue = sqsqueue.New(sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if e := awsconf.ServiceEndpoint(cfg.AWS.Env, "SQS"); e != nil {
			o.BaseEndpoint = e
		}
	}), cfg.QueueURL)
	return b, nil
}
