package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/apperr"
	"tilecache/internal/awsconf"
	"tilecache/internal/quota"
	"tilecache/internal/task"
	"tilecache/internal/task/tasktest"
	"tilecache/internal/testenv"
)

var (
	clientOnce sync.Once
	client     *dynamodb.Client
	clientErr  error
)

// testClient returns a client for AWS_ENDPOINT_URL_DYNAMODB, or skips.
func testClient(t *testing.T) *dynamodb.Client {
	t.Helper()
	testenv.RequireDynamoDB(t)
	clientOnce.Do(func() {
		cfg, err := awsconf.Load(context.Background(), os.LookupEnv)
		if err != nil {
			clientErr = err
			return
		}
		client = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			o.DisableValidateResponseChecksum = true // DynamoDB Local (devstack notes)
		})
	})
	if clientErr != nil {
		t.Fatal(clientErr)
	}
	return client
}

// newTable creates a table for the test and deletes it at its end.
func newTable(t *testing.T) string {
	t.Helper()
	c := testClient(t)
	name := testenv.Name(t, "tasks")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := CreateTable(ctx, c, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &name}); err != nil {
			t.Errorf("delete table %s: %v", name, err)
		}
	})
	return name
}

// shared gives tests of one top-level test fresh stores in one table, each
// in a namespace of its own.
type shared struct {
	table string
	n     atomic.Int64
}

func newShared(t *testing.T) *shared { return &shared{table: newTable(t)} }

func (sh *shared) store(t *testing.T, opts ...Option) *Store {
	t.Helper()
	ns := fmt.Sprintf("ns%d/", sh.n.Add(1))
	return New(testClient(t), sh.table, append([]Option{WithNamespace(ns)}, opts...)...)
}

func TestEndpointFromEnvironment(t *testing.T) {
	c := testClient(t)
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
	tasktest.Run(t, func(t *testing.T) task.Store { return New(testClient(t), newTable(t)) })
}

// TestConformanceNamespaces runs the suite again with all stores in one
// table, which checks that namespaces isolate stores completely.
func TestConformanceNamespaces(t *testing.T) {
	testClient(t)
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

func TestQuotaConfig(t *testing.T) {
	testClient(t)
	sh := newShared(t)
	s := sh.store(t)
	ctx := t.Context()
	got, err := s.QuotaConfig(ctx)
	if err != nil || got.DiskBlockSize != quota.Default().DiskBlockSize || got.Enabled {
		t.Fatalf("fresh store: got %+v, %v; want the defaults", got, err)
	}
	enabled := true
	if _, err := s.UpdateQuotaConfig(ctx, func(c quota.Config) (quota.Config, error) {
		return c.Apply(quota.Patch{Enabled: &enabled})
	}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, err := s.UpdateQuotaConfig(ctx, func(c quota.Config) (quota.Config, error) {
		c.Enabled = false
		return c, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the function's error", err)
	}
	// Another store on the same table and namespace sees the stored value.
	again := New(testClient(t), s.Table(), WithNamespace(s.ns))
	if got, err := again.QuotaConfig(ctx); err != nil || !got.Enabled {
		t.Fatalf("from another store: got %+v, %v; want enabled (and the failed update not applied)", got, err)
	}
	// Concurrent updates are each applied exactly once.
	const n = 8
	base := quota.Default().GlobalQuota
	var wg sync.WaitGroup
	var calls atomic.Int64
	for range n {
		wg.Go(func() {
			_, err := s.UpdateQuotaConfig(ctx, func(c quota.Config) (quota.Config, error) {
				calls.Add(1)
				c.GlobalQuota++
				return c, nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err = again.QuotaConfig(ctx)
	if err != nil || got.GlobalQuota != base+n || !got.Enabled {
		t.Fatalf("after %d concurrent increments: got %+v, %v; want global quota %d", n, got, err, base+n)
	}
	t.Logf("%d concurrent updates took %d calls of fn", n, calls.Load())
	// Namespaces keep configurations apart.
	if got, _ := sh.store(t).QuotaConfig(ctx); got.Enabled {
		t.Fatal("another namespace sees the configuration")
	}
}

// TestPoolUnderConcurrency promotes from many goroutines at once and checks
// that the pool is never exceeded and no task is promoted twice.
func TestPoolUnderConcurrency(t *testing.T) {
	testClient(t)
	s := newShared(t).store(t)
	ctx := t.Context()
	now := time.Now()
	const pool, tasks, workers = 3, 20, 10
	if _, _, err := s.Create(ctx, task.Job{Layer: "a"}, lanes(tasks), now); err != nil {
		t.Fatal(err)
	}
	// Phase 1: everybody promotes at once.
	var mu sync.Mutex
	promoted := map[int64]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			p, err := s.Promote(ctx, pool, nil, now)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, tk := range p {
				promoted[tk.ID]++
			}
		})
	}
	wg.Wait()
	if len(promoted) != pool {
		t.Fatalf("got %d tasks promoted (%v), want %d", len(promoted), promoted, pool)
	}
	if n, err := s.Running(ctx); err != nil || n != pool {
		t.Fatalf("pool count %d, %v; want %d", n, err, pool)
	}
	all, err := s.List(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, tk := range all {
		if tk.Status == task.Running {
			running++
			if promoted[tk.ID] != 1 {
				t.Errorf("task %d RUNNING but promoted %d times", tk.ID, promoted[tk.ID])
			}
		}
	}
	if running != pool {
		t.Fatalf("List shows %d RUNNING, want %d", running, pool)
	}
	// Phase 2: workers promote and finish until everything is done, while a
	// monitor watches the pool count.
	stop := make(chan struct{})
	var peak atomic.Int64
	var monitor sync.WaitGroup
	monitor.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := s.Running(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			if n > peak.Load() {
				peak.Store(n)
			}
		}
	})
	finish := func(id int64) {
		tk, err := s.Get(ctx, id)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := s.Checkpoint(ctx, task.Checkpoint{ID: id, From: tk.Cursor, To: tk.End, Tiles: tk.Total - tk.Done}, now); err != nil {
			t.Error(err)
		}
		if _, err := s.Finish(ctx, id, task.Done, now); err != nil {
			t.Error(err)
		}
	}
	mu.Lock()
	first := make([]int64, 0, len(promoted))
	for id := range promoted {
		first = append(first, id)
	}
	mu.Unlock()
	var done atomic.Int64
	for i := range workers {
		wg.Go(func() {
			if i < len(first) {
				finish(first[i])
				done.Add(1)
			}
			for done.Load() < tasks && !t.Failed() {
				p, err := s.Promote(ctx, pool, nil, now)
				if err != nil {
					t.Error(err)
					return
				}
				for _, tk := range p {
					mu.Lock()
					promoted[tk.ID]++
					mu.Unlock()
					finish(tk.ID)
					done.Add(1)
				}
				if len(p) == 0 {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	monitor.Wait()
	if peak.Load() > pool {
		t.Fatalf("pool count reached %d, above the pool of %d", peak.Load(), pool)
	}
	if len(promoted) != tasks {
		t.Fatalf("got %d tasks promoted, want %d", len(promoted), tasks)
	}
	for id, n := range promoted {
		if n != 1 {
			t.Errorf("task %d promoted %d times", id, n)
		}
	}
	if n, err := s.Running(ctx); err != nil || n != 0 {
		t.Fatalf("pool count at the end %d, %v; want 0", n, err)
	}
	t.Logf("peak pool count %d of %d", peak.Load(), pool)
}

// indexCount returns the number of index entries of s's namespace.
func indexCount(t *testing.T, s *Store) int {
	t.Helper()
	e := newExpr()
	out, err := s.client.Query(t.Context(), &dynamodb.QueryInput{
		TableName:                 &s.table,
		IndexName:                 aws.String(indexActive),
		KeyConditionExpression:    aws.String(e.n(attrGSIPK) + " = " + e.v(str(s.activePK()))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		Select:                    types.SelectCount,
	})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

func rawItem(t *testing.T, s *Store, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := s.client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &s.table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func TestIndexHygiene(t *testing.T) {
	testClient(t)
	s := newShared(t).store(t)
	ctx := t.Context()
	now := time.Now()
	old := now.Add(-2 * time.Minute)
	j, _, err := s.Create(ctx, task.Job{Layer: "a"}, lanes(4), old)
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
	if n := indexCount(t, s); n != 4 {
		t.Fatalf("index holds %d entries before List, want 4", n)
	}
	// A List reaching back beyond task 1's finish keeps it.
	if got, err := s.List(ctx, old); err != nil || len(got) != 4 {
		t.Fatalf("List(old): %v, %v; want 4 tasks", got, err)
	}
	if n := indexCount(t, s); n != 4 {
		t.Fatalf("index holds %d entries after List(old), want 4", n)
	}
	got, err := s.List(ctx, now.Add(-3*time.Second))
	if err != nil || len(got) != 3 || got[0].ID != 2 || got[1].ID != 3 || got[2].ID != 4 {
		t.Fatalf("List(recent): %+v, %v; want tasks 2, 3, 4", got, err)
	}
	if n := indexCount(t, s); n != 3 {
		t.Fatalf("index holds %d entries after List, want 3 (task 1 removed)", n)
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
	testClient(t)
	sh := newShared(t)
	ctx := t.Context()
	now := time.Now()
	for _, n := range []int{MaxTransactLanes, MaxTransactLanes + 1, 128} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := sh.store(t)
			j, ts, err := s.Create(ctx, task.Job{Layer: "a"}, lanes(n), now)
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
	testClient(t)
	sh := newShared(t)
	ctx := t.Context()
	now := time.Now()
	s := sh.store(t)
	const n = 130
	if _, _, err := s.Create(ctx, task.Job{Layer: "a"}, lanes(n), now); err != nil {
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
	if _, _, err := staged.Create(ctx, task.Job{Layer: "a"}, lanes(110), now); err == nil {
		t.Fatal("Create: want the injected error")
	}
	if got, err := staged.GetMany(ctx, []int64{1, 2, 110}); err != nil || len(got) != 0 {
		t.Errorf("GetMany of tasks of a job not committed: %d tasks, %v; want none", len(got), err)
	}
}

// TestStagedCreateFailure fails a large Create before its flip.
func TestStagedCreateFailure(t *testing.T) {
	testClient(t)
	sh := newShared(t)
	ctx := t.Context()
	now := time.Now()
	const n = 110
	invisible := func(t *testing.T, s *Store) {
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
		if _, _, err := s.Create(ctx, task.Job{Layer: "a"}, lanes(n), now); !errors.Is(err, boom) {
			t.Fatalf("got %v, want the injected error", err)
		}
		invisible(t, s)
		if c := indexCount(t, s); c != 0 {
			t.Fatalf("index holds %d entries, want 0", c)
		}
		s.testBeforeFlip = nil
		_, ts, err := s.Create(ctx, task.Job{Layer: "a"}, lanes(2), now)
		if err != nil || ts[0].ID != n+1 {
			t.Fatalf("next Create: %+v, %v; want first id %d", ts, err, n+1)
		}
	})
	t.Run("Crashed", func(t *testing.T) {
		s := sh.store(t)
		s.testBeforeFlip = func() error { return boom }
		s.testNoCleanup = true // as if the process died before cleaning up
		if _, _, err := s.Create(ctx, task.Job{Layer: "a"}, lanes(n), now); !errors.Is(err, boom) {
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

// TestWritesPerOperation records the write units of each operation.
func TestWritesPerOperation(t *testing.T) {
	testClient(t)
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
	step("Create, 4 lanes", 1+1+4, func() error { _, _, err := s.Create(ctx, task.Job{Layer: "a"}, lanes(4), now); return err })
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
			us = append(us, quota.PageDelta{Page: quota.PageKey{Set: quota.TileSet{Layer: "a", GridSetID: "g", FormatID: "png", ParametersID: "default"}, Z: 5, X: int64(i)}, Tiles: 16, Bytes: 16 * 4096})
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
	c := testClient(t)
	ctx := t.Context()
	missing := New(c, testenv.Name(t, "missing"))
	_, err := missing.Get(ctx, 1)
	wantKind(t, err, apperr.Unavailable)
	if msg := apperr.Message(err); !strings.Contains(msg, missing.Table()) {
		t.Fatalf("message %q does not name the table %s", msg, missing.Table())
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
	down := New(dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String("http://127.0.0.1:1")
		o.RetryMaxAttempts = 1
	}), "x")
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
	testClient(t)
	sh := newShared(t)
	ctx := t.Context()
	now := time.Now()
	cfg, err := awsconf.Load(ctx, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	inject := &conflicter{next: http.DefaultTransport}
	c := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: inject} })
	s := New(c, sh.table, WithNamespace("conflicts/"))
	if _, _, err := s.Create(ctx, task.Job{Layer: "a"}, lanes(3), now); err != nil {
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
