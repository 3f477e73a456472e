// Package lambdatest runs the Lambda functions in tests, against the local
// AWS stack (see internal/testkit/testenv): per-test resources shaped as
// template.yaml shapes them, the functions' environment, programs built by
// app.New, worker.NewAWS, maintenance.NewAWS and tileorigin.New, API Gateway HTTP API (payload 2.0) events, a
// stand-in for the SQS event source, a recording proxy that tells which AWS
// calls a function makes, and the functions' bootstraps built as for Lambda
// and run under the Lambda Runtime Interface Emulator (AWS's Runtime API,
// built from its Go module and cached with the project's tools).
//
// The end-to-end tests run the bootstraps under the emulator only. It can
// give them all they need: deadlines (a function timeout of whole
// seconds), error answers (an error document, a timeout, a runtime that
// exits during init) and one invocation at a time per execution
// environment, as Lambda runs them (concurrency is several emulators).
// What it cannot do, a fake Runtime API could: deadlines under a second,
// answers of the Runtime API itself that Lambda gives rarely (an error on
// GET …/invocation/next, a rejected response), several invocations at once
// in one process. No test needs those, so there is no fake: a test that
// does should add one here and say why.
package lambdatest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"tilecache/internal/app"
	"tilecache/internal/app/maintenance"
	"tilecache/internal/app/tileorigin"
	"tilecache/internal/app/worker"
	"tilecache/internal/auth"
	"tilecache/internal/awsconf"
	"tilecache/internal/config"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
)

// User and Password are the administrator account of the functions under
// test; the recorded API Gateway events carry them as HTTP Basic
// credentials ("Basic YWRtaW46czNjcmV0IHBhc3M=").
const (
	User     = "admin"
	Password = "s3cret pass"
)

// Region and Account are what the local stack answers for (fauxqs uses
// account 000000000000); they name the resources' ARNs in the policy checks.
const (
	Region  = "us-east-1"
	Account = "000000000000"
)

// Resources are one test's table, lane queue (with its dead-letter queue)
// and key prefix in the stack's bucket: what template.yaml creates for one
// deployment.
type Resources struct {
	Bucket, Table, Queue, QueueURL, Prefix string
}

// QueueArn is the ARN of the lane queue on the local stack.
func (r Resources) QueueArn() string { return "arn:aws:sqs:" + Region + ":" + Account + ":" + r.Queue }

// NewResources creates a table, a queue pair and a key prefix for the test
// and removes them (and the objects under the prefix) when it ends. It
// needs the local AWS stack: without it the test skips, or fails under
// TILECACHE_REQUIRE_DEVSTACK=1.
func NewResources(t testing.TB) Resources {
	t.Helper()
	testenv.Label(t)
	testenv.RequireS3(t)
	testenv.RequireDynamoDB(t)
	testenv.RequireSQS(t)
	ctx := context.Background()
	r := Resources{Bucket: os.Getenv("TILECACHE_S3_BUCKET"), Table: testenv.Name(t, "tcl"), Queue: testenv.Name(t, "tcl"), Prefix: testenv.Name(t, "l")}
	if r.Bucket == "" {
		r.Bucket = "tilecache-tiles"
	}
	ddb := DynamoDB(t)
	if err := dynamo.CreateTable(ctx, ddb, r.Table); err != nil {
		t.Fatal(err)
	}
	sq := SQS(t)
	var err error
	if r.QueueURL, err = sqsqueue.CreateQueue(ctx, sq, r.Queue); err != nil {
		t.Fatal(err)
	}
	tiles := Tiles(t, r)
	t.Cleanup(func() {
		ctx := context.Background()
		ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(r.Table)})
		sq.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(r.QueueURL)})
		if out, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(r.Queue + sqsqueue.DLQSuffix)}); err == nil {
			sq.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
		}
		var keys []string
		tiles.List(ctx, r.Prefix+"/", func(o tilestore.Object) error { keys = append(keys, o.Key); return nil })
		for len(keys) > 0 {
			n := min(len(keys), tilestore.DeleteBatch)
			tiles.Delete(ctx, keys[:n])
			keys = keys[n:]
		}
	})
	return r
}

func awsConfig(t testing.TB) aws.Config {
	t.Helper()
	cfg, err := awsconf.Load(context.Background(), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// DynamoDB returns a client for the stack's DynamoDB endpoint.
func DynamoDB(t testing.TB) *dynamodb.Client {
	return dynamodb.NewFromConfig(awsConfig(t), func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
}

// SQS returns a client for the stack's SQS endpoint.
func SQS(t testing.TB) *sqs.Client { return sqs.NewFromConfig(awsConfig(t)) }

// Tiles returns a store on the whole bucket of r (keys carry r.Prefix).
func Tiles(t testing.TB, r Resources) *s3store.Store {
	t.Helper()
	s, err := s3store.NewFromEnv(os.LookupEnv, r.Bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var (
	accountsOnce sync.Once
	accounts     string
	accountsErr  error
)

// Accounts returns the value of TILECACHE_ACCOUNTS for the test account,
// as the SSM parameter AccountsSecret names would hold it.
func Accounts(t testing.TB) string {
	t.Helper()
	accountsOnce.Do(func() {
		var hash string
		hash, accountsErr = auth.HashPassword(Password, 4) // bcrypt.MinCost: tests only
		accounts = User + ":" + hash
	})
	if accountsErr != nil {
		t.Fatal(accountsErr)
	}
	return accounts
}

// Env returns the TILECACHE_* environment of the functions as
// template.yaml sets it, for the resources r, with test-friendly timings
// (checkpoints every 300 ms and kill checks every 250 ms, as apptest
// has them), the bundled demo layers and a
// pool of 4 threads. extra entries are added or replace defaults; an empty
// value removes the variable.
func Env(t testing.TB, r Resources, extra map[string]string) map[string]string {
	env := map[string]string{
		"TILECACHE_BACKEND":             "aws",
		"TILECACHE_S3_BUCKET":           r.Bucket,
		"TILECACHE_DYNAMODB_TABLE":      r.Table,
		"TILECACHE_SQS_QUEUE_URL":       r.QueueURL,
		"TILECACHE_KEY_PREFIX":          r.Prefix,
		"TILECACHE_SEED_THREADS":        "4",
		"TILECACHE_LOG_LEVEL":           "info",
		"TILECACHE_CHECKPOINT_INTERVAL": "300ms",
		"TILECACHE_KILL_CHECK_INTERVAL": "250ms",
		"TILECACHE_LANE_SLICE":          "5m",
		"TILECACHE_STALE_AFTER":         "2m",
		"TILECACHE_ACCOUNTS":            Accounts(t),
	}
	for k, v := range extra {
		if v == "" {
			delete(env, k)
			continue
		}
		env[k] = v
	}
	return env
}

// LayersFile writes a layer file into a temporary directory and returns
// its path, for TILECACHE_LAYERS.
func LayersFile(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "layers.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Config loads env with config.Load, as the functions' main does with
// os.LookupEnv; the AWS SDK's variables not in env come from the process
// environment (testenv.Lookup), as in Lambda.
func Config(t testing.TB, env map[string]string) config.Config {
	t.Helper()
	cfg, err := config.Load(testenv.Lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Logger discards logs unless TILECACHE_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("TILECACHE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// API builds ApiFunction's program (app.New) for env; AWS endpoints and
// credentials come from the process environment, as in Lambda.
func API(t testing.TB, env map[string]string) *app.Program {
	t.Helper()
	return program(t, env, app.New)
}

// Worker builds the program of WorkerFunction (worker.NewAWS, with the
// configuration worker.Load reads) for env, closed when the test ends.
func Worker(t testing.TB, env map[string]string) *worker.Program {
	t.Helper()
	cfg, err := worker.Load(testenv.Lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	p, err := worker.NewAWS(context.Background(), cfg, Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// Maintenance builds the program of CleanerFunction (maintenance.NewAWS,
// with the configuration maintenance.Load reads) for env, closed when the
// test ends.
func Maintenance(t testing.TB, env map[string]string) *maintenance.Program {
	t.Helper()
	return MaintenanceAt(t, env, nil)
}

// MaintenanceAt is Maintenance with the clock of the maintenance
// (maintenance.Config.Now; nil is time.Now).
func MaintenanceAt(t testing.TB, env map[string]string, now func() time.Time) *maintenance.Program {
	t.Helper()
	cfg, err := maintenance.Load(testenv.Lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Now = now
	p, err := maintenance.NewAWS(context.Background(), cfg, Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// Tile builds TileFunction's program (tileorigin.New, with the
// configuration tileorigin.Load reads) for env, closed when the test ends.
func Tile(t testing.TB, env map[string]string) *tileorigin.Origin {
	t.Helper()
	cfg, err := tileorigin.Load(testenv.Lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	o, err := tileorigin.New(context.Background(), cfg, Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// program builds a function's program with newProgram, closed when the
// test ends.
func program(t testing.TB, env map[string]string, newProgram func(context.Context, config.Config, *slog.Logger) (*app.Program, error)) *app.Program {
	t.Helper()
	p, err := newProgram(context.Background(), Config(t, env), Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// ReadEvent decodes the JSON file at path into v (an events.* type).
func ReadEvent(t testing.TB, path string, v any) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Fatalf("decode %s: data after the event", path)
	}
	return data
}
