package sqsqueue_test

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"tilecache/internal/apperr"
	"tilecache/internal/awsconf"
	"tilecache/internal/metrics"
	"tilecache/internal/queue"
	"tilecache/internal/queue/sqsqueue"
)

// tally is a metrics exporter that sums counters by metric and labels.
type tally struct {
	mu  sync.Mutex
	sum map[string]float64
}

func (tl *tally) Record(m *metrics.Metric, v float64, labels []string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.sum[m.Name+"/"+strings.Join(labels, ",")] += v
}

func (tl *tally) get(m *metrics.Metric, labels ...string) float64 {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.sum[m.Name+"/"+strings.Join(labels, ",")]
}

// newRetryingQueue returns a Queue on the fake whose client is made as the
// program makes it (awsconf.Load) with policy r.
func newRetryingQueue(t *testing.T, r awsconf.Retry) (*fakeSQS, *sqsqueue.Queue) {
	t.Helper()
	f := &fakeSQS{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg, err := awsconf.Load(t.Context(), func(string) (string, bool) { return "", false }, awsconf.WithRetry(r))
	if err != nil {
		t.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.Credentials = credentials.NewStaticCredentialsProvider("k", "s", "")
	})
	return f, sqsqueue.New(client, fakeURL)
}

// requests returns how many requests reached f.
func requests(f *fakeSQS) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// throttled is SQS's throttling answer in the JSON protocol: HTTP 403 as
// its model declares, the code in the query-compatibility header too.
func throttled() (int, map[string]string, string) {
	return http.StatusForbidden, map[string]string{"x-amzn-query-error": "RequestThrottled;Sender"},
		`{"__type":"com.amazonaws.sqs#RequestThrottled","message":"Request is throttled."}`
}

// sent answers a SendMessageBatch: every entry succeeded.
func sent(c call) (int, map[string]string, string) {
	var ok []map[string]string
	entries, _ := c.Body["Entries"].([]any)
	for _, e := range entries {
		e, _ := e.(map[string]any)
		body, _ := e["MessageBody"].(string)
		sum := md5.Sum([]byte(body))
		ok = append(ok, map[string]string{"Id": e["Id"].(string), "MessageId": "m-" + e["Id"].(string), "MD5OfMessageBody": hex.EncodeToString(sum[:])})
	}
	b, _ := json.Marshal(map[string]any{"Successful": ok, "Failed": []any{}})
	return http.StatusOK, nil, string(b)
}

// TestThrottlesRetried: a Send that SQS throttles six times succeeds at the
// seventh attempt; each throttled attempt and each retry is counted.
func TestThrottlesRetried(t *testing.T) {
	var reg metrics.Registry
	tl := &tally{sum: map[string]float64{}}
	t.Cleanup(reg.Install(tl))
	ctx := metrics.NewContext(t.Context(), &reg)
	f, q := newRetryingQueue(t, awsconf.Retry{BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond})
	f.respond = func(c call) (int, map[string]string, string) {
		if requests(f) <= 6 {
			return throttled()
		}
		return sent(c)
	}
	if err := q.Send(ctx, queue.Message{TaskID: 1}, queue.Message{TaskID: 1, Cursor: 1}); err != nil {
		t.Fatalf("Send throttled 6 times: %v", err)
	}
	if n := requests(f); n != 7 || q.Sent() != 2 {
		t.Errorf("%d requests, %d messages sent; want 7, 2", n, q.Sent())
	}
	if got := tl.get(metrics.AWSThrottled, "sqs"); got != 6 {
		t.Errorf("%s{service=sqs} rose by %v, want 6", metrics.AWSThrottled.Name, got)
	}
	if got := tl.get(metrics.AWSRetries, "sqs"); got != 6 {
		t.Errorf("%s{service=sqs} rose by %v, want 6", metrics.AWSRetries.Name, got)
	}
}

// TestThrottlingBudget: a queue that throttles forever fails the call
// within the retry budget, as Unavailable.
func TestThrottlingBudget(t *testing.T) {
	r := awsconf.Retry{MaxAttempts: 1000, Budget: 400 * time.Millisecond, BaseDelay: 10 * time.Millisecond, MaxDelay: 40 * time.Millisecond}
	f, q := newRetryingQueue(t, r)
	f.respond = func(call) (int, map[string]string, string) { return throttled() }
	start := time.Now()
	err := q.Send(t.Context(), queue.Message{TaskID: 1})
	took := time.Since(start)
	if !apperr.Is(err, apperr.Unavailable) || !strings.Contains(apperr.Message(err), "throttling") {
		t.Errorf("got %v, want Unavailable: throttling", err)
	}
	if took < r.Budget-r.MaxDelay || took > r.Budget+time.Second {
		t.Errorf("Send took %v, want about the %v budget", took, r.Budget)
	}
	t.Logf("%d attempts in %v", requests(f), took)
}
