package apptest

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"tilecache/internal/app"
	"tilecache/internal/app/backends/admin"
	"tilecache/internal/awsconf"
	"tilecache/internal/config"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
)

// awsResources are one test's table, queue and key prefix in the shared
// bucket. They are recorded in the data directory so that a restarted app
// (Start with the same DataDir) finds the same ones.
type awsResources struct {
	Bucket, Table, QueueURL, Queue, Prefix string
}

// awsEnv returns the TILECACHE_* settings of the AWS backend for this test,
// creating its resources on first use and removing them when it ends.
func awsEnv(t testing.TB, dataDir string) (map[string]string, awsResources) {
	t.Helper()
	testenv.RequireS3(t)
	testenv.RequireDynamoDB(t)
	testenv.RequireSQS(t)
	path := filepath.Join(dataDir, "aws-resources.json")
	var r awsResources
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
	} else {
		r = createAWS(t)
		data, _ := json.Marshal(r)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]string{
		"TILECACHE_BACKEND": "aws", "TILECACHE_S3_BUCKET": r.Bucket, "TILECACHE_DYNAMODB_TABLE": r.Table,
		"TILECACHE_SQS_QUEUE_URL": r.QueueURL, "TILECACHE_KEY_PREFIX": r.Prefix, "TILECACHE_LANE_VISIBILITY": "4s", // > the lease (see CheckpointInterval)
	}, r
}

func createAWS(t testing.TB) awsResources {
	t.Helper()
	ctx := context.Background()
	cfg, err := awsconf.Load(ctx, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	r := awsResources{Bucket: os.Getenv("TILECACHE_S3_BUCKET"), Table: testenv.Name(t, "tc"), Queue: testenv.Name(t, "tc"), Prefix: testenv.Name(t, "t")}
	if r.Bucket == "" {
		r.Bucket = "tilecache-tiles"
	}
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	if err := dynamo.CreateTable(ctx, ddb, r.Table); err != nil {
		t.Fatal(err)
	}
	sq := sqs.NewFromConfig(cfg)
	if r.QueueURL, err = sqsqueue.CreateQueue(ctx, sq, r.Queue); err != nil {
		t.Fatal(err)
	}
	tiles, err := s3store.NewFromEnv(os.LookupEnv, r.Bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(r.Table)})
		sq.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(r.QueueURL)})
		if out, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(r.Queue + sqsqueue.DLQSuffix)}); err == nil {
			sq.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
		}
		// A stack that is removed whole when the run ends (make test's
		// own, TILECACHE_TEST_DISPOSABLE_STACK=1) keeps the objects: the
		// fault suite alone leaves 27,306, and listing and deleting them
		// took 25 s, 18 s of the test's CPU (under the race detector) and
		// 18 s of MinIO's. A development stack is emptied, so that runs
		// do not pile objects up in it.
		if os.Getenv("TILECACHE_TEST_DISPOSABLE_STACK") != "1" {
			if err := emptyPrefix(ctx, tiles, r.Prefix+"/"); err != nil {
				t.Logf("clean up objects under %s: %v", r.Prefix, err)
			}
		}
		tiles.Close()
	})
	return r
}

func emptyPrefix(ctx context.Context, s tilestore.Store, prefix string) error {
	var keys []string
	err := s.List(ctx, prefix, func(o tilestore.Object) error {
		keys = append(keys, o.Key)
		return nil
	})
	for len(keys) > 0 {
		n := min(len(keys), tilestore.DeleteBatch)
		if _, derr := s.Delete(ctx, keys[:n]); derr != nil {
			return errors.Join(err, derr)
		}
		keys = keys[n:]
	}
	return err
}

// AWSBackends connects to the AWS resources recorded in dataDir (see
// StartProcess), for a test to inspect what processes did. Tile keys seen
// through it carry the returned key prefix.
func AWSBackends(t testing.TB, dataDir string, extra map[string]string) (admin.Backends, string) {
	t.Helper()
	vars, r := awsEnv(t, dataDir)
	maps.Copy(vars, extra)
	cfg, err := config.Load(testenv.Lookup(vars))
	if err != nil {
		t.Fatal(err)
	}
	b, err := app.AWSBackends(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, r.Prefix + "/"
}
