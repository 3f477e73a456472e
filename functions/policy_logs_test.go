package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"tilecache/internal/app/logingest"
	"tilecache/internal/gwc"
	"tilecache/internal/testkit/lambdatest"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

// logBucket is the log bucket of the deployment the policy test models:
// the template names it after the stack id (cfn_test.go's AWS::StackId).
const logBucket = "tilecache-logs-6a7b8c90-0000-1111-2222-333344445555"

// exerciseLogs is the log function's recording run: a layer seeded (not
// recorded), then a CloudFront log of reads of its tiles delivered to the
// log bucket and handed to the function's handler, built (and so
// recorded) as functions/logs builds it.
func exerciseLogs(t *testing.T, r lambdatest.Resources, rec *lambdatest.Recorder, env map[string]string) {
	t.Helper()
	ctx := t.Context()
	worker := lambdatest.Worker(t, env)       // not recorded
	cleaner := lambdatest.Maintenance(t, env) // not recorded
	if err := cleaner.Cleaner.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	z0, z1 := 0, 1
	ts, err := worker.Engine.Control.Submit(ctx, gwc.SeedRequest{Layer: "demo:world", GridSetID: "EPSG:4326", HasGridSetID: true, ZoomStart: &z0, ZoomStop: &z1, Format: "image/png", Type: "seed"})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(ts))
	for i, tk := range ts {
		ids[i] = tk.ID
	}
	src := &lambdatest.EventSource{Client: lambdatest.SQS(t), QueueURL: r.QueueURL, QueueArn: r.QueueArn(), Timeout: time.Minute}
	src.RunUntil(t, worker.HandleSQS, 30*time.Second, finished(t, worker, ids))

	// The log bucket, and a log in it.
	ep, err := url.Parse(os.Getenv("AWS_ENDPOINT_URL_S3"))
	if err != nil {
		t.Fatal(err)
	}
	mc, err := minio.New(ep.Host, &minio.Options{Creds: credentials.NewStaticV4(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""), Region: lambdatest.Region})
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.MakeBucket(ctx, logBucket, minio.MakeBucketOptions{Region: lambdatest.Region}); err != nil {
		if minio.ToErrorResponse(err).Code != "BucketAlreadyOwnedByYou" {
			t.Fatal(err)
		}
	}
	set := tilestore.TileSet{Prefix: r.Prefix, LayerID: "demo:world", Ext: "png", SetName: tilestore.SetName{Layer: "demo:world", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}}
	at := time.Now().UTC()
	var b strings.Builder
	b.WriteString("#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status\n")
	for x := range int64(2) {
		fmt.Fprintf(&b, "%s\t%s\tSEA19-C1\t2390\t192.0.2.1\tGET\td1.cloudfront.net\t/%s\t200\n", at.Format("2006-01-02"), at.Format("15:04:05"),
			strings.ReplaceAll(set.Key(0, x, 0), ":", "%3A"))
	}
	key := r.Prefix + "/E2EXAMPLE.2026-11-25-12.0123abcd.gz"
	if _, err := mc.PutObject(ctx, logBucket, key, strings.NewReader(b.String()), int64(b.Len()), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mc.RemoveObject(context.Background(), logBucket, key, minio.RemoveObjectOptions{}) })

	var li *logingest.Ingester
	lambdatest.Recording(t, rec, func() {
		cfg, err := logingest.Load(testenv.Lookup(env))
		if err != nil {
			t.Fatal(err)
		}
		if li, err = logingest.New(ctx, cfg, lambdatest.Logger()); err != nil {
			t.Fatal(err)
		}
	})
	var ev events.S3Event
	ev.Records = []events.S3EventRecord{{EventSource: "aws:s3", EventName: "ObjectCreated:Put",
		S3: events.S3Entity{Bucket: events.S3Bucket{Name: logBucket}, Object: events.S3Object{Key: url.QueryEscape(key), ETag: "0123abcd"}}}}
	raw, _ := json.Marshal(ev)
	var again events.S3Event
	if err := json.Unmarshal(raw, &again); err != nil {
		t.Fatal(err)
	}
	if err := li.HandleS3(ctx, again); err != nil {
		t.Fatal(err)
	}
	ps, err := worker.Usage.Pages(ctx, "demo:world")
	if err != nil {
		t.Fatal(err)
	}
	var hits int64
	for _, p := range ps {
		hits += p.Hits
	}
	if hits != 2 {
		t.Fatalf("the log's 2 reads: %d hits recorded", hits)
	}
}
