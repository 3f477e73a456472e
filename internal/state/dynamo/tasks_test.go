package dynamo

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/apperr"
	"tilecache/internal/state/dynamo/dynamotest"
	"tilecache/internal/task"
)

// indexCount returns the number of entries in the active partition of
// s's namespace.
func indexCount(t *testing.T, s *adapters) int { return partitionCount(t, s, s.activePK()) }

// finishedCount returns the number of entries in the finished partition
// of s's namespace.
func finishedCount(t *testing.T, s *adapters) int { return partitionCount(t, s, s.finishedPK()) }

func partitionCount(t *testing.T, s *adapters, pk string) int {
	t.Helper()
	e := newExpr()
	out, err := s.client.Query(t.Context(), &dynamodb.QueryInput{
		TableName:                 &s.table,
		IndexName:                 aws.String(indexActive),
		KeyConditionExpression:    aws.String(e.n(attrGSIPK) + " = " + e.v(str(pk))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		Select:                    types.SelectCount,
	})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

func rawItem(t *testing.T, s *adapters, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := s.client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &s.table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func TestIndexHygiene(t *testing.T) {
	dynamotest.Client(t)
	s := newShared(t).store(t)
	ctx := t.Context()
	now := time.Now()
	old := now.Add(-2 * time.Minute)
	j, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, lanes(4), old)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.Promote(ctx, 2, nil, old); err != nil || len(p) != 2 {
		t.Fatalf("Promote: %v, %v", p, err)
	}
	// Task 1 finished two minutes ago, task 2 just now; 3 and 4 are pending.
	if _, err := s.Finish(ctx, 1, task.Aborted, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, 2, task.Aborted, now); err != nil {
		t.Fatal(err)
	}
	// Finishing moved both from the active partition to the finished one.
	if n := indexCount(t, s); n != 2 {
		t.Fatalf("the active partition holds %d entries after two finishes, want 2", n)
	}
	if n := finishedCount(t, s); n != 2 {
		t.Fatalf("the finished partition holds %d entries, want 2", n)
	}
	// A List reaching back beyond task 1's finish lists it.
	if got, err := s.List(ctx, old); err != nil || len(got) != 4 {
		t.Fatalf("List(old): %v, %v; want 4 tasks", got, err)
	}
	got, err := s.List(ctx, now.Add(-3*time.Second))
	if err != nil || len(got) != 3 || got[0].ID != 2 || got[1].ID != 3 || got[2].ID != 4 {
		t.Fatalf("List(recent): %+v, %v; want tasks 2, 3, 4", got, err)
	}
	// Task 1 as an older version left it: finished, its entry still in
	// the active partition. A List reaching back beyond it keeps it; one
	// that does not removes its entry.
	e := newExpr()
	if _, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       s.taskKey(1),
		UpdateExpression:          aws.String("SET " + e.n(attrGSIPK) + " = " + e.v(str(s.activePK())) + ", " + e.n(attrGSISK) + " = " + e.v(num(1))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.List(ctx, old); err != nil || len(got) != 4 || got[0].ID != 1 || got[0].Status != task.Aborted {
		t.Fatalf("List(old), older entry: %+v, %v; want 4 tasks, task 1 ABORTED", got, err)
	}
	if n := indexCount(t, s); n != 3 {
		t.Fatalf("the active partition holds %d entries after List(old), want 3", n)
	}
	got, err = s.List(ctx, now.Add(-3*time.Second))
	if err != nil || len(got) != 3 || got[0].ID != 2 || got[1].ID != 3 || got[2].ID != 4 {
		t.Fatalf("List(recent), older entry: %+v, %v; want tasks 2, 3, 4", got, err)
	}
	if n := indexCount(t, s); n != 2 {
		t.Fatalf("the active partition holds %d entries after List, want 2 (task 1 removed)", n)
	}
	// The task itself stays readable until its TTL.
	tk, err := s.Get(ctx, 1)
	if err != nil || tk.Status != task.Aborted {
		t.Fatalf("Get(1): %+v, %v", tk, err)
	}
	item := rawItem(t, s, s.taskKey(1))
	exp, ok := numAttr(item, attrExpires)
	if want := now.Add(Retention).Unix(); !ok || exp < want-5 || exp > want+60 {
		t.Fatalf("task 1 expires %d, want about %d", exp, want)
	}
	if _, ok := item[attrGSIPK]; ok {
		t.Fatalf("task 1 still has %s", attrGSIPK)
	}
	// The job gets its TTL with its last task, not before.
	if _, ok := rawItem(t, s, s.jobKey(j.ID))[attrExpires]; ok {
		t.Fatal("job expires while tasks are pending")
	}
	for _, id := range []int64{3, 4} {
		if _, err := s.Kill(ctx, id, task.Pending, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := numAttr(rawItem(t, s, s.jobKey(j.ID)), attrExpires); !ok {
		t.Fatal("job without TTL after its last task finished")
	}
	if n, err := s.Running(ctx); err != nil || n != 0 {
		t.Fatalf("pool count %d, %v; want 0", n, err)
	}
}

func TestLargeCreate(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	ctx := t.Context()
	now := time.Now()
	for _, n := range []int{MaxTransactLanes, MaxTransactLanes + 1, 128} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := sh.store(t)
			j, ts, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, lanes(n), now)
			if err != nil {
				t.Fatal(err)
			}
			want := int64(1 + n + 1) // the sequence, the job and the tasks
			if n > MaxTransactLanes {
				want++ // the flip
			}
			if got := s.Writes(); got != want {
				t.Errorf("Create(%d lanes) issued %d writes, want %d", n, got, want)
			}
			if j.ID != 1 || j.Lanes != n || len(ts) != n || ts[n-1].ID != int64(n) {
				t.Fatalf("got job %+v and %d tasks", j, len(ts))
			}
			got, err := s.List(ctx, now)
			if err != nil || len(got) != n || got[n-1].ID != int64(n) {
				t.Fatalf("List: %d tasks, %v; want %d", len(got), err, n)
			}
			if _, err := s.Job(ctx, 1); err != nil {
				t.Fatal(err)
			}
			if tk, err := s.Get(ctx, int64(n)); err != nil || tk.Start != int64(n-1)*2 {
				t.Fatalf("Get(%d): %+v, %v", n, tk, err)
			}
			if p, err := s.Promote(ctx, 2, nil, now); err != nil || len(p) != 2 || p[0].ID != 1 || p[1].ID != 2 {
				t.Fatalf("Promote: %+v, %v", p, err)
			}
		})
	}
}

// TestGetMany reads more tasks than one BatchGetItem holds, as Get reads
// them, leaving out missing ids and tasks of a job not committed.
func TestGetMany(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	ctx := t.Context()
	now := time.Now()
	s := sh.store(t)
	const n = 130
	if _, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, lanes(n), now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Kill(ctx, 7, task.Pending, now); err != nil {
		t.Fatal(err)
	}
	ids := []int64{5, 999} // a duplicate and a missing id
	for id := range int64(n) {
		ids = append(ids, id+1)
	}
	got, err := s.GetMany(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("GetMany: %d tasks, want %d", len(got), n)
	}
	for _, id := range []int64{1, 7, 100, n} {
		want, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got[id] != want {
			t.Errorf("GetMany task %d: %+v, want %+v as Get reads it", id, got[id], want)
		}
	}
	if got[7].Status == task.Pending || got[8].Status != task.Pending {
		t.Errorf("statuses: task 7 %v (killed), task 8 %v (pending)", got[7].Status, got[8].Status)
	}

	staged := sh.store(t)
	staged.testBeforeFlip = func() error { return errors.New("boom") }
	staged.testNoCleanup = true
	if _, _, err := staged.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, lanes(110), now); err == nil {
		t.Fatal("Create: want the injected error")
	}
	if got, err := staged.GetMany(ctx, []int64{1, 2, 110}); err != nil || len(got) != 0 {
		t.Errorf("GetMany of tasks of a job not committed: %d tasks, %v; want none", len(got), err)
	}
}

// TestStagedCreateFailure fails a large Create before its flip.
func TestStagedCreateFailure(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	ctx := t.Context()
	now := time.Now()
	const n = 110
	invisible := func(t *testing.T, s *adapters) {
		t.Helper()
		if got, err := s.List(ctx, time.Time{}); err != nil || len(got) != 0 {
			t.Fatalf("List: %d tasks, %v; want none", len(got), err)
		}
		if p, err := s.Promote(ctx, 5, nil, now); err != nil || len(p) != 0 {
			t.Fatalf("Promote: %+v, %v; want none", p, err)
		}
		_, err := s.Get(ctx, 1)
		wantKind(t, err, apperr.NotFound)
		_, err = s.Job(ctx, 1)
		wantKind(t, err, apperr.NotFound)
		_, err = s.Kill(ctx, 1, task.Pending, now)
		wantKind(t, err, apperr.NotFound)
	}
	boom := errors.New("boom")

	t.Run("CleanedUp", func(t *testing.T) {
		s := sh.store(t)
		s.testBeforeFlip = func() error { return boom }
		if _, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, lanes(n), now); !errors.Is(err, boom) {
			t.Fatalf("got %v, want the injected error", err)
		}
		invisible(t, s)
		if c := indexCount(t, s); c != 0 {
			t.Fatalf("index holds %d entries, want 0", c)
		}
		s.testBeforeFlip = nil
		_, ts, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, lanes(2), now)
		if err != nil || ts[0].ID != n+1 {
			t.Fatalf("next Create: %+v, %v; want first id %d", ts, err, n+1)
		}
	})
	t.Run("Crashed", func(t *testing.T) {
		s := sh.store(t)
		s.testBeforeFlip = func() error { return boom }
		s.testNoCleanup = true // as if the process died before cleaning up
		if _, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, lanes(n), now); !errors.Is(err, boom) {
			t.Fatalf("got %v, want the injected error", err)
		}
		invisible(t, s)
		if c := indexCount(t, s); c != n {
			t.Fatalf("index holds %d entries, want %d staged ones", c, n)
		}
		// After StageTimeout a List removes them.
		s.clock = func() time.Time { return time.Now().Add(DefaultStageTimeout + time.Minute) }
		invisible(t, s)
		if c := indexCount(t, s); c != 0 {
			t.Fatalf("index holds %d entries after the timeout, want 0", c)
		}
		if st, _ := strAttr(rawItem(t, s, s.jobKey(1)), aState); st != jobAbandoned {
			t.Fatalf("job state %q, want %q", st, jobAbandoned)
		}
	})
}
