package dynamo

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/awsconf"
	"tilecache/internal/quota"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// answerLoser sends the next write of the chosen operations to DynamoDB and
// then fails as a connection reset under the answer would: the write is
// applied, the client never hears of it, and the SDK sends it again.
type answerLoser struct {
	next http.RoundTripper
	mu   sync.Mutex
	ops  map[string]int // operation (X-Amz-Target suffix) → answers still to lose
	lost []string
}

func (l *answerLoser) lose(op string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops[op] += n
}

func (l *answerLoser) RoundTrip(r *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	res, err := l.next.RoundTrip(r)
	if err != nil {
		return res, err
	}
	l.mu.Lock()
	drop := l.ops[op] > 0
	if drop {
		l.ops[op]--
		l.lost = append(l.lost, op)
	}
	l.mu.Unlock()
	if !drop {
		return res, nil
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return nil, errors.New("read: connection reset by peer (answer lost by the test)")
}

// losingClient returns a DynamoDB client whose answers loser can lose.
func losingClient(t *testing.T) (*dynamodb.Client, *answerLoser) {
	t.Helper()
	cfg, err := awsconf.Load(t.Context(), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	loser := &answerLoser{next: http.DefaultTransport, ops: map[string]int{}}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: loser}
		o.DisableValidateResponseChecksum = true
	}), loser
}

// TestLostAnswersAreNotConflicts runs each conditional write of a lane's
// life with its first answer lost: the SDK's retry fails the condition the
// first attempt made true, and the store must recognise its own write.
func TestLostAnswersAreNotConflicts(t *testing.T) {
	testClient(t)
	sh := newShared(t)
	ctx := t.Context()
	c, loser := losingClient(t)
	s := all(New(c, sh.table, WithNamespace("lost/")))
	now := time.Now()
	if _, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a", Tiles: 30}}, lanes(2), now); err != nil {
		t.Fatal(err)
	}

	loser.lose("TransactWriteItems", 1)
	p, err := s.Promote(ctx, 1, nil, now)
	if err != nil || len(p) != 1 || p[0].ID != 1 {
		t.Fatalf("Promote with its answer lost: %+v, %v; want task 1 promoted", p, err)
	}
	if n, err := s.Running(ctx); err != nil || n != 1 {
		t.Fatalf("running: %d, %v; want 1 (the pool counted once)", n, err)
	}

	loser.lose("UpdateItem", 1)
	if tk, err := s.Acquire(ctx, 1, "w1", time.Minute, now); err != nil || tk.Owner != "w1" {
		t.Fatalf("Acquire with its answer lost: %+v, %v", tk, err)
	}

	loser.lose("UpdateItem", 1)
	tk, err := s.Checkpoint(ctx, task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 5, Owner: "w1", Token: "cp1"}, now)
	if err != nil || tk.Cursor != 1 || tk.Done != 5 {
		t.Fatalf("Checkpoint with its answer lost: %+v, %v; want cursor 1, done 5", tk, err)
	}

	set := tilestore.SetName{Layer: "a", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}
	usage := []quota.PageDelta{{Page: quota.PageKey{Set: set, Z: 3}, Tiles: 5, Bytes: 5 * 4096}}
	loser.lose("TransactWriteItems", 1)
	tk, err = s.Checkpoint(ctx, task.Checkpoint{ID: 1, From: 1, To: 2, Tiles: 5, Owner: "w1", Token: "cp2", Usage: usage}, now)
	if err != nil || tk.Cursor != 2 || tk.Done != 10 {
		t.Fatalf("Checkpoint with usage, its answer lost: %+v, %v; want cursor 2, done 10", tk, err)
	}
	ls, err := s.Layers(ctx)
	if err != nil || len(ls) != 1 || ls[0].Tiles != 5 || ls[0].Bytes != 5*4096 {
		t.Fatalf("usage after the lost answer: %+v, %v; want 5 tiles, %d bytes (counted once)", ls, err, 5*4096)
	}

	loser.lose("TransactWriteItems", 1)
	if tk, err := s.Finish(ctx, 1, task.Done, now); err != nil || tk.Status != task.Done {
		t.Fatalf("Finish with its answer lost: %+v, %v", tk, err)
	}
	if n, err := s.Running(ctx); err != nil || n != 0 {
		t.Fatalf("running: %d, %v; want 0 (the thread freed once)", n, err)
	}
	loser.lose("TransactWriteItems", 1)
	if before, err := s.Kill(ctx, 2, task.Pending, now); err != nil || before.Status != task.Pending {
		t.Fatalf("Kill with its answer lost: %+v, %v", before, err)
	}
	if got, _ := s.Get(ctx, 2); got.Status != task.Aborted || !got.Killed {
		t.Fatalf("task 2 after the kill: %+v", got)
	}
	loser.mu.Lock()
	defer loser.mu.Unlock()
	if len(loser.lost) != 6 {
		t.Fatalf("lost %d answers (%v), want 6: the test did not inject what it says", len(loser.lost), loser.lost)
	}
}
