package dynamo

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"tilecache/internal/state/dynamo/dynamotest"
	"tilecache/internal/task"
)

// readLog records, for a client, the GetItem calls and the attribute
// names of the items its Queries return.
type readLog struct {
	gets  atomic.Int64
	attrs map[string]bool // written by the test's one goroutine of calls
}

func (r *readLog) add(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("log-reads",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			switch o := out.Result.(type) {
			case *dynamodb.GetItemOutput:
				r.gets.Add(1)
			case *dynamodb.QueryOutput:
				for _, it := range o.Items {
					for a := range it {
						r.attrs[a] = true
					}
				}
			}
			return out, md, err
		}), middleware.After)
}

// TestListReadsStatusAttributes checks what a status call reads: the
// listed attributes of each task only, and a large (staged) job's state
// once per process, not once per call.
func TestListReadsStatusAttributes(t *testing.T) {
	base := dynamotest.Client(t)
	r := &readLog{attrs: map[string]bool{}}
	client := dynamodb.New(base.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, r.add) })
	sh := newShared(t)
	s := New(client, sh.table, WithNamespace("listattrs/")).Tasks()
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	const n, running = MaxTransactLanes + 21, 20 // written in stages
	j, created, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a", Type: task.Reseed}}, lanes(n), now)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.Promote(ctx, running, nil, now); err != nil || len(p) != running {
		t.Fatalf("Promote: %d tasks, %v", len(p), err)
	}
	if _, err := s.Checkpoint(ctx, task.Checkpoint{ID: j.ID, From: 0, To: 1, Tiles: 7}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Kill(ctx, j.ID+1, task.Running, now); err != nil {
		t.Fatal(err)
	}
	// Another process lists.
	other := New(client, sh.table, WithNamespace("listattrs/")).Tasks()
	for call := range 3 {
		r.gets.Store(0)
		clear(r.attrs)
		got, err := other.List(ctx, now.Add(-time.Second))
		if err != nil || len(got) != n {
			t.Fatalf("List #%d: %d tasks, %v; want %d", call, len(got), err, n)
		}
		for i, tk := range got {
			c := created[i]
			want := task.Task{ID: c.ID, JobID: j.ID, Layer: "a", Type: task.Reseed, Status: task.Pending, Cursor: c.Start, Total: c.Total, Heartbeat: now, Created: c.Created}
			switch {
			case i == 0:
				want.Status, want.Cursor, want.Done = task.Running, 1, 7
			case i == 1:
				want.Status, want.Killed, want.Finished = task.Aborted, true, now
			case i < running:
				want.Status = task.Running
			}
			if tk != want {
				t.Fatalf("List #%d: task %d is\n  %+v, want\n  %+v", call, i, tk, want)
			}
		}
		var names []string
		for a := range r.attrs {
			names = append(names, a)
		}
		slices.Sort(names)
		for _, a := range names {
			if !slices.Contains(listedAttrs, a) {
				t.Fatalf("List #%d read attribute %q (read %v); want only the listed ones %v", call, a, names, listedAttrs)
			}
		}
		if want := int64(min(call, 1) ^ 1); r.gets.Load() != want {
			t.Fatalf("List #%d read the job %d times, want %d (once per process)", call, r.gets.Load(), want)
		}
	}
}

// TestDecodeListedMatchesDecodeTask decodes one full task item both ways:
// the listed fields must agree.
func TestDecodeListedMatchesDecodeTask(t *testing.T) {
	s := &Tasks{&store{table: "t"}}
	full := task.Task{ID: 41, JobID: 40, Layer: "roads", Type: task.Truncate, Status: task.Aborted, Start: 3, End: 9,
		Cursor: 5, Total: 96, Done: 32, Heartbeat: time.Unix(0, 1700000000123456789).UTC(), Created: time.Unix(5, 0).UTC(),
		Finished: time.Unix(0, 1700000000999999999).UTC(), Killed: true, Owner: "w1", WriteToken: "tok", After: "k/9"}
	item, err := s.newTaskItem(full, 1700000000)
	if err != nil {
		t.Fatal(err)
	}
	item["finished"], _ = attributevalue.Marshal(full.Finished.UnixNano())
	item["killed"], _ = attributevalue.Marshal(true)
	whole, err := decodeTask(item)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := decodeListed(item)
	if err != nil {
		t.Fatal(err)
	}
	w := whole.task()
	w.Start, w.End, w.Owner, w.WriteToken, w.After = 0, 0, "", "", ""
	if got := listed.task(); got != w || listed.Staged != whole.Staged {
		t.Fatalf("decodeListed: %+v (staged %d), want %+v (staged %d)", got, listed.Staged, w, whole.Staged)
	}
	if _, err := decodeListed(map[string]types.AttributeValue{"id": str("x")}); err == nil {
		t.Fatal("decodeListed accepted a string id")
	}
}
