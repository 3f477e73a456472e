package dynamo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/apperr"
	"tilecache/internal/awsconf"
	"tilecache/internal/quota"
	"tilecache/internal/state/dynamo/dynamotest"
	"tilecache/internal/task"
	"tilecache/internal/task/tasktest"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

// newTable creates a table for the test and deletes it at its end.
func newTable(t testing.TB) string {
	t.Helper()
	return dynamotest.Table(t, "tasks", CreateTable)
}

// adapters is every adapter over one table as one value, for the tests
// and suites that use several ports of one table (tasktest's usage deltas
// through checkpoints). Config is embedded under another name: a field
// called Config would hide the method of that name.
type adapters struct {
	*store
	tbl *Table
	*Tasks
	*Usage
	*configPort
	*Claims
}

type configPort = Config

// Writes is the table's (Table.Writes).
func (a *adapters) Writes() int64 { return a.tbl.Writes() }

// all returns the adapters over t.
func all(t *Table) *adapters {
	return &adapters{t.s, t, t.Tasks(), t.Usage(), t.Config(), t.Claims()}
}

// shared gives tests of one top-level test fresh stores in one table, each
// in a namespace of its own.
type shared struct {
	table string
	n     atomic.Int64
}

func newShared(t testing.TB) *shared { return &shared{table: newTable(t)} }

func (sh *shared) store(t testing.TB, opts ...Option) *adapters {
	t.Helper()
	ns := fmt.Sprintf("ns%d/", sh.n.Add(1))
	return all(New(dynamotest.Client(t), sh.table, append([]Option{WithNamespace(ns)}, opts...)...))
}

func TestEndpointFromEnvironment(t *testing.T) {
	c := dynamotest.Client(t)
	got := aws.ToString(c.Options().BaseEndpoint)
	if want := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"); got != want {
		t.Fatalf("client endpoint %q, want AWS_ENDPOINT_URL_DYNAMODB %q", got, want)
	}
	if awsEndpoint(&got) {
		t.Fatalf("%s taken for an AWS endpoint", got)
	}
	for _, u := range []string{"", "https://dynamodb.eu-west-1.amazonaws.com"} {
		if !awsEndpoint(&u) {
			t.Errorf("%q not taken for an AWS endpoint", u)
		}
	}
}

// TestConformance gives every store of the suite a table of its own.
func TestConformance(t *testing.T) {
	tasktest.Run(t, func(t *testing.T) task.Store { return all(New(dynamotest.Client(t), newTable(t))) })
}

// TestConformanceNamespaces runs the suite again with all stores in one
// table, which checks that namespaces isolate stores completely.
func TestConformanceNamespaces(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	tasktest.Run(t, func(t *testing.T) task.Store { return sh.store(t) })
}

func lanes(n int) []task.Lane {
	out := make([]task.Lane, n)
	for i := range out {
		out[i] = task.Lane{Start: int64(i) * 2, End: int64(i)*2 + 2, Tiles: 10}
	}
	return out
}

func wantKind(t *testing.T, err error, k apperr.Kind) {
	t.Helper()
	if got := apperr.KindOf(err); err == nil || got != k {
		t.Fatalf("got error %v (kind %v), want kind %v", err, got, k)
	}
}

// TestWritesPerOperation records the write units of each operation.
func TestWritesPerOperation(t *testing.T) {
	dynamotest.Client(t)
	s := newShared(t).store(t)
	ctx := t.Context()
	now := time.Now()
	step := func(name string, want int64, fn func() error) {
		t.Helper()
		before := s.Writes()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := s.Writes() - before
		t.Logf("%-36s %d writes", name, got)
		if got != want {
			t.Errorf("%s: %d writes, want %d", name, got, want)
		}
	}
	step("Create, 4 lanes", 1+1+4, func() error {
		_, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, lanes(4), now)
		return err
	})
	step("Promote, pool 2 (2 promoted)", 2*3, func() error { _, err := s.Promote(ctx, 2, nil, now); return err })
	step("Promote, pool full", 0, func() error { _, err := s.Promote(ctx, 2, nil, now); return err })
	step("Acquire", 1, func() error { _, err := s.Acquire(ctx, 1, "w", time.Minute, now); return err })
	step("Checkpoint", 1, func() error {
		_, err := s.Checkpoint(ctx, task.Checkpoint{ID: 1, From: 0, To: 2, Tiles: 10}, now)
		return err
	})
	step("Checkpoint, conflict", 1, func() error {
		_, err := s.Checkpoint(ctx, task.Checkpoint{ID: 1, From: 0, To: 2, Tiles: 10}, now)
		if apperr.Is(err, apperr.Conflict) {
			return nil
		}
		return fmt.Errorf("got %v, want a conflict", err)
	})
	step("Checkpoint with usage of 3 pages", 1+3+1, func() error {
		var us []quota.PageDelta
		for i := range 3 {
			us = append(us, quota.PageDelta{Page: quota.PageKey{Set: tilestore.SetName{Layer: "a", GridSetID: "g", FormatID: "png", ParametersID: "default"}, Z: 5, X: int64(i)}, Tiles: 16, Bytes: 16 * 4096})
		}
		_, err := s.Checkpoint(ctx, task.Checkpoint{ID: 2, From: 2, To: 3, Tiles: 5, Usage: us}, now)
		return err
	})
	step("Finish DONE (RUNNING)", 4, func() error { _, err := s.Finish(ctx, 1, task.Done, now); return err })
	step("Finish, not RUNNING", 0, func() error {
		_, err := s.Finish(ctx, 1, task.Done, now)
		if apperr.Is(err, apperr.Conflict) {
			return nil
		}
		return fmt.Errorf("got %v, want a conflict", err)
	})
	step("Kill RUNNING", 4, func() error { _, err := s.Kill(ctx, 2, task.Running, now); return err })
	step("Kill PENDING", 2, func() error { _, err := s.Kill(ctx, 3, task.Pending, now); return err })
	step("Kill PENDING, last of job (+TTL)", 2+1, func() error { _, err := s.Kill(ctx, 4, task.Pending, now); return err })
	step("AddFailures", 1, func() error { _, err := s.AddFailures(ctx, 1, 2); return err })
	step("List (nothing to prune)", 0, func() error { _, err := s.List(ctx, now); return err })
}

func TestErrors(t *testing.T) {
	c := dynamotest.Client(t)
	ctx := t.Context()
	missing := all(New(c, testenv.Name(t, "missing")))
	_, err := missing.Get(ctx, 1)
	wantKind(t, err, apperr.Unavailable)
	if msg := apperr.Message(err); !strings.Contains(msg, missing.table) {
		t.Fatalf("message %q does not name the table %s", msg, missing.table)
	}
	_, err = missing.List(ctx, time.Time{})
	wantKind(t, err, apperr.Unavailable)

	s := newShared(t).store(t)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.Create(cctx, task.Job{}, lanes(1), time.Now()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create with a cancelled context: %v", err)
	}
	if _, err := s.Promote(cctx, 1, nil, time.Now()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Promote with a cancelled context: %v", err)
	}
	if _, err := s.Checkpoint(cctx, task.Checkpoint{ID: 1}, time.Now()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Checkpoint with a cancelled context: %v", err)
	}
	// Nothing unreachable: a closed port is Unavailable.
	cfg, err := awsconf.Load(ctx, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	down := all(New(dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String("http://127.0.0.1:1")
		o.RetryMaxAttempts = 1
	}), "x"))
	_, err = down.Get(ctx, 1)
	wantKind(t, err, apperr.Unavailable)
	// Validation happens before any write.
	before := s.Writes()
	if _, _, err := s.Create(ctx, task.Job{}, nil, time.Now()); !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("Create without lanes: %v", err)
	}
	_, err = s.Checkpoint(ctx, task.Checkpoint{ID: 1, From: 2, To: 1}, time.Now())
	wantKind(t, err, apperr.Invalid)
	if n := s.Writes() - before; n != 0 {
		t.Fatalf("refused requests issued %d writes", n)
	}
	_, err = s.Checkpoint(ctx, task.Checkpoint{ID: 99, From: 0, To: 1}, time.Now())
	wantKind(t, err, apperr.NotFound)
}

// conflicter makes the next n TransactWriteItems calls (all of them while
// always is set) fail as DynamoDB does when concurrent transactions touch
// the same items, which DynamoDB Local (it serialises transactions) never
// does.
type conflicter struct {
	next   http.RoundTripper
	n      atomic.Int64
	always atomic.Bool
}

func (c *conflicter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("X-Amz-Target") != "DynamoDB_20120810.TransactWriteItems" || !c.always.Load() && c.n.Add(-1) < 0 {
		return c.next.RoundTrip(r)
	}
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",` +
		`"Message":"Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]",` +
		`"CancellationReasons":[{"Code":"None"},{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"}]}`
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusBadRequest, Status: "400 Bad Request", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Requestid": {"injected"}},
		Body:   io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r,
	}, nil
}

func TestTransactionConflictsAreRetried(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	ctx := t.Context()
	now := time.Now()
	cfg, err := awsconf.Load(ctx, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	inject := &conflicter{next: http.DefaultTransport}
	c := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: inject} })
	s := all(New(c, sh.table, WithNamespace("conflicts/")))
	if _, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, lanes(3), now); err != nil {
		t.Fatal(err)
	}
	// Three conflicts, then success.
	inject.n.Store(3)
	before := s.Writes()
	p, err := s.Promote(ctx, 1, nil, now)
	if err != nil || len(p) != 1 || p[0].ID != 1 {
		t.Fatalf("Promote after 3 conflicts: %+v, %v; want task 1", p, err)
	}
	if n := s.Writes() - before; n != 4*3 {
		t.Fatalf("Promote issued %d writes, want 12 (4 tries of 3 items)", n)
	}
	// Conflicts that persist: Promote returns nothing, without an error
	// (other promoters are at work); Kill reports a Conflict and changes
	// nothing.
	inject.always.Store(true)
	if p, err := s.Promote(ctx, 5, nil, now); err != nil || len(p) != 0 {
		t.Fatalf("Promote under persistent conflicts: %+v, %v; want nothing and no error", p, err)
	}
	_, err = s.Kill(ctx, 2, task.Pending, now)
	wantKind(t, err, apperr.Conflict)
	if !errors.Is(err, errBusy) {
		t.Fatalf("got %v, want errBusy in the chain", err)
	}
	inject.always.Store(false)
	if tk, err := s.Get(ctx, 2); err != nil || tk.Status != task.Pending {
		t.Fatalf("Get(2): %+v, %v; want PENDING", tk, err)
	}
	if p, err := s.Promote(ctx, 5, nil, now); err != nil || len(p) != 2 {
		t.Fatalf("Promote after the conflicts: %+v, %v; want tasks 2 and 3", p, err)
	}
}
