package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"tilecache/internal/app"
	"tilecache/internal/awsconf"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/task/dynamostore"
	"tilecache/internal/tilestore/s3store"
)

// awsResources creates a table and a queue for one run and picks a fresh
// key prefix in the bucket of TILECACHE_S3_BUCKET; it fills env and returns
// the clean-up.
func awsResources(env map[string]string) (func(), error) {
	ctx := context.Background()
	bucket := os.Getenv("TILECACHE_S3_BUCKET")
	if bucket == "" || os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" {
		return nil, fmt.Errorf(`-backend aws needs the local AWS stack: eval "$(make -s devstack)"`)
	}
	cfg, err := awsconf.Load(ctx, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("seedbench-%d", time.Now().UnixNano())
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	if err := dynamostore.CreateTable(ctx, ddb, name); err != nil {
		return nil, err
	}
	sq := sqs.NewFromConfig(cfg)
	url, err := sqsqueue.CreateQueue(ctx, sq, name)
	if err != nil {
		return nil, err
	}
	env["TILECACHE_BACKEND"], env["TILECACHE_S3_BUCKET"], env["TILECACHE_DYNAMODB_TABLE"] = "aws", bucket, name
	env["TILECACHE_SQS_QUEUE_URL"], env["TILECACHE_KEY_PREFIX"] = url, name
	return func() {
		ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		sq.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		if out, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name + sqsqueue.DLQSuffix)}); err == nil {
			sq.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
		}
	}, nil
}

// counts are the adapters' request counters at one moment.
type counts struct {
	s3     s3store.RequestCounts
	writes int64
	sent   int64
}

func snapshot(p *app.Program) counts {
	s3, ok1 := p.Tiles.(*s3store.Store)
	ddb, ok2 := p.Tasks.(*dynamostore.Store)
	q, ok3 := p.Queue.(*sqsqueue.Queue)
	if !ok1 || !ok2 || !ok3 {
		return counts{}
	}
	return counts{s3.Requests(), ddb.Writes(), q.Sent()}
}

// since formats the requests made since before, per 1,000 tiles.
func since(p *app.Program, before counts, tiles int64) string {
	now := snapshot(p)
	if now == (counts{}) || tiles == 0 {
		return ""
	}
	per := func(n int64) float64 { return float64(n) * 1000 / float64(tiles) }
	d := now.s3
	d.Put -= before.s3.Put
	d.Get -= before.s3.Get
	d.Head -= before.s3.Head
	d.Delete -= before.s3.Delete
	d.List -= before.s3.List
	d.Other -= before.s3.Other
	return fmt.Sprintf("; per 1,000 tiles: S3 requests %.1f (PUT %.1f, HEAD %.1f, LIST %.1f, DELETE %.1f), DynamoDB writes %.2f, SQS messages %.2f",
		per(d.Total()), per(d.Put), per(d.Head), per(d.List), per(d.Delete), per(now.writes-before.writes), per(now.sent-before.sent))
}

// costs formats the adapters' request counts per 1,000 tiles.
func costs(p *app.Program, tiles int64) string {
	s3, ok1 := p.Tiles.(*s3store.Store)
	ddb, ok2 := p.Tasks.(*dynamostore.Store)
	q, ok3 := p.Queue.(*sqsqueue.Queue)
	if !ok1 || !ok2 || !ok3 || tiles == 0 {
		return ""
	}
	per := func(n int64) float64 { return float64(n) * 1000 / float64(tiles) }
	r := s3.Requests()
	return fmt.Sprintf("; per 1,000 tiles: S3 requests %.1f (PUT %.1f, HEAD %.1f, LIST %.1f), DynamoDB writes %.2f (%s), SQS messages %.2f",
		per(r.Total()), per(r.Put), per(r.Head), per(r.List), per(ddb.Writes()), writesByOp(ddb, per), per(q.Sent()))
}

// writesByOp formats the DynamoDB writes per operation, most first.
func writesByOp(ddb *dynamostore.Store, per func(int64) float64) string {
	ops := ddb.WritesByOp()
	names := slices.Collect(maps.Keys(ops))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(ops[b], ops[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.2f", n, per(ops[n]))
	}
	return strings.Join(parts, ", ")
}
