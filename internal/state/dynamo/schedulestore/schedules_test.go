package schedulestore

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/apperr"
	"tilecache/internal/schedule"
	"tilecache/internal/schedule/scheduletest"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/state/dynamo/dynamotest"
)

// TestScheduleConformance runs the schedule suite with every store in a
// namespace of one table.
func TestScheduleConformance(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	scheduletest.Run(t, func(t *testing.T) scheduletest.Stores { return sh.store(t) },
		func(t *testing.T, st scheduletest.Stores, name string) {
			// A definition that is not JSON; its next due time is intact.
			s := st.(*stores)
			e := dynamo.NewExpr()
			_, err := s.client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
				TableName:                 &s.table,
				Key:                       s.scheduleKey(name),
				UpdateExpression:          aws.String("SET " + e.N(aSchedDef) + " = " + e.V(dynamo.Str(`{"name":`))),
				ExpressionAttributeNames:  e.Names(),
				ExpressionAttributeValues: e.Values(),
			})
			if err != nil {
				t.Fatal(err)
			}
		})
}

// TestScheduleCapOnSchedulesSavedBefore: on a table whose schedules were
// saved by an earlier version (no count item), creates racing for the
// last places first count the schedules there (each of them may, one
// count is kept) and pass the cap no more than on a counted table; a
// delete on such a table keeps the count right too.
func TestScheduleCapOnSchedulesSavedBefore(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	sc, err := schedule.New("s", "0 * * * *", "", "topp:states", json.RawMessage(`{"seedRequest":{}}`), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	legacy := func(t *testing.T, s *stores, n int) {
		t.Helper()
		var reqs []types.WriteRequest
		for i := range n {
			item := s.scheduleKey(fmt.Sprintf("old%04d", i))
			item[aSchedDef] = dynamo.Str(fmt.Sprintf(`{"name":"old%04d","cron":"0 * * * *","layer":"topp:states","request":{}}`, i))
			item[aSchedNext] = dynamo.Num(dynamo.Nanos(sc.Next))
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		}
		for len(reqs) > 0 {
			n := min(25, len(reqs))
			out, err := s.client.BatchWriteItem(t.Context(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{s.table: reqs[:n]}})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.UnprocessedItems) > 0 {
				t.Fatalf("legacy schedules: %d writes unprocessed", len(out.UnprocessedItems[s.table]))
			}
			reqs = reqs[n:]
		}
	}
	count := func(t *testing.T, s *stores) (int64, bool) {
		t.Helper()
		out, err := s.client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &s.table, Key: s.it.MetaKey(skSchedules), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return dynamo.NumAttr(out.Item, aSchedCount)
	}

	t.Run("RacingCreates", func(t *testing.T) {
		s := sh.store(t)
		const racing, left = 16, 2
		legacy(t, s, schedule.MaxSchedules-left)
		if _, ok := count(t, s); ok {
			t.Fatal("a count item before any create")
		}
		start := make(chan struct{})
		errs := make([]error, racing)
		var wg sync.WaitGroup
		for i := range racing {
			wg.Go(func() {
				<-start
				c := sc
				c.Name = fmt.Sprintf("new%02d", i)
				errs[i] = s.CreateSchedule(t.Context(), c)
			})
		}
		close(start)
		wg.Wait()
		created := 0
		for i, err := range errs {
			switch {
			case err == nil:
				created++
			case !apperr.Is(err, apperr.Conflict) || !strings.Contains(apperr.Message(err), fmt.Sprint(schedule.MaxSchedules)):
				t.Errorf("create %d: %v, want nil or a conflict naming the limit", i, err)
			}
		}
		all, _, err := s.Schedules(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := count(t, s); created != left || len(all) != schedule.MaxSchedules || n != schedule.MaxSchedules {
			t.Fatalf("%d creates for the last %d places: %d passed, %d schedules, count %d; want %d, %d, %[7]d",
				racing, left, created, len(all), n, left, schedule.MaxSchedules)
		}
	})

	t.Run("DeleteFirst", func(t *testing.T) {
		s := sh.store(t)
		legacy(t, s, 3)
		if err := s.DeleteSchedule(t.Context(), "old0001"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteSchedule(t.Context(), "old0001"); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("deleted twice: %v, want NotFound", err)
		}
		if err := s.CreateSchedule(t.Context(), sc); err != nil {
			t.Fatal(err)
		}
		if n, ok := count(t, s); !ok || n != 3 {
			t.Fatalf("count %d (%v) after 3 saved before, a delete and a create; want 3", n, ok)
		}
	})
}

// TestScheduleLostAnswers: a create or a delete whose answer is lost is
// retried by the SDK with the transaction's token, which DynamoDB
// recognises: the call succeeds and the count changes once.
func TestScheduleLostAnswers(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	c, loser := dynamotest.LosingClient(t)
	s := open(c, sh.table, "lostsched/")
	sc, err := schedule.New("a", "0 * * * *", "", "topp:states", json.RawMessage(`{"seedRequest":{}}`), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSchedule(t.Context(), sc); err != nil { // makes the count
		t.Fatal(err)
	}
	count := func() int64 {
		out, err := s.client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &s.table, Key: s.it.MetaKey(skSchedules), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := dynamo.NumAttr(out.Item, aSchedCount)
		return n
	}
	sc.Name = "b"
	loser.Lose("TransactWriteItems", 1)
	if err := s.CreateSchedule(t.Context(), sc); err != nil {
		t.Fatalf("create with its answer lost: %v", err)
	}
	if n := count(); n != 2 {
		t.Fatalf("count %d after two creates, want 2", n)
	}
	loser.Lose("TransactWriteItems", 1)
	if err := s.DeleteSchedule(t.Context(), "a"); err != nil {
		t.Fatalf("delete with its answer lost: %v", err)
	}
	if n := count(); n != 1 {
		t.Fatalf("count %d after a delete, want 1", n)
	}
	if len(loser.Lost()) != 2 {
		t.Fatalf("lost %d answers (%v), want 2", len(loser.Lost()), loser.Lost())
	}
}
