package dynamo

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"tilecache/internal/state/dynamo/dynamotest"
	"tilecache/internal/task"
)

// queryItems counts the items the Queries of a client return.
type queryItems struct{ n atomic.Int64 }

func (q *queryItems) add(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("count-query-items",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			if r, ok := out.Result.(*dynamodb.QueryOutput); ok {
				q.n.Add(int64(r.Count))
			}
			return out, md, err
		}), middleware.After)
}

// TestListReadsActiveAndRecentTasks checks that a status call's reads
// grow with the active tasks and those finished since the time it asks
// for, not with the finished tasks kept: finished tasks leave the active
// partition when they finish.
func TestListReadsActiveAndRecentTasks(t *testing.T) {
	base := dynamotest.Client(t)
	var q queryItems
	client := dynamodb.New(base.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, q.add) })
	sh := newShared(t)
	s := New(client, sh.table, WithNamespace("listcost/")).Tasks()
	ctx := t.Context()
	now := time.Now()
	old := now.Add(-time.Hour)
	const n = 60
	if _, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, lanes(n), old); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Promote(ctx, n, nil, old); err != nil || len(p) != n {
		t.Fatalf("Promote: %d tasks, %v", len(p), err)
	}
	// Tasks 1…57 finished an hour ago, 58 and 59 just now; 60 runs.
	for id := int64(1); id < n; id++ {
		at := old
		if id >= n-2 {
			at = now
		}
		if _, err := s.Finish(ctx, id, task.Aborted, at); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		q.n.Store(0)
		got, err := s.List(ctx, now.Add(-3*time.Second))
		if err != nil || len(got) != 3 || got[0].ID != n-2 || got[1].ID != n-1 || got[2].ID != n {
			t.Fatalf("List #%d: %+v, %v; want tasks %d, %d, %d", i, got, err, n-2, n-1, n)
		}
		if got[0].Status != task.Aborted || got[2].Status != task.Running {
			t.Fatalf("List #%d: statuses %v, %v; want ABORTED, RUNNING", i, got[0].Status, got[2].Status)
		}
		if r := q.n.Load(); r != 3 {
			t.Fatalf("List #%d read %d index entries, want 3 (1 running, 2 finished since)", i, r)
		}
	}
	// Asked from further back, it reads the older finished tasks too.
	q.n.Store(0)
	if got, err := s.List(ctx, old); err != nil || len(got) != n {
		t.Fatalf("List(an hour ago): %d tasks, %v; want %d", len(got), err, n)
	}
	if r := q.n.Load(); r != n {
		t.Fatalf("List(an hour ago) read %d index entries, want %d", r, n)
	}
}
