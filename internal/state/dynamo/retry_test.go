package dynamo_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/awsconf"
	"tilecache/internal/metrics"
	"tilecache/internal/state/dynamo"
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

// TestThrottlesRetried needs no DynamoDB: a store whose client is made as
// the program makes it (awsconf.Load) gets through six throttled attempts
// (and the transaction conflicts the store adds to the retryable errors)
// of one call, counting each throttled attempt and each retry.
func TestThrottlesRetried(t *testing.T) {
	var reg metrics.Registry
	tl := &tally{sum: map[string]float64{}}
	t.Cleanup(reg.Install(tl))
	ctx := metrics.NewContext(t.Context(), &reg)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		typ := ""
		switch {
		case n <= 4:
			typ = "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"
		case n <= 6:
			typ = "com.amazon.coral.availability#ThrottlingException"
		case n <= 8:
			typ = "com.amazonaws.dynamodb.v20120810#TransactionConflictException"
		default:
			fmt.Fprint(w, `{}`) // GetItem: no item
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":%q,"message":"x"}`, typ)
	}))
	defer srv.Close()
	cfg, err := awsconf.Load(t.Context(), func(string) (string, bool) { return "", false },
		awsconf.WithRetry(awsconf.Retry{BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.Credentials = credentials.NewStaticCredentialsProvider("k", "s", "")
	})
	s := dynamo.New(client, "tasks").Claims()
	if owner, _, _, err := s.Peek(ctx, "k", time.Now()); err != nil || owner != "" {
		t.Fatalf("Peek throttled 6 times and in conflict twice: owner %q, err %v", owner, err)
	}
	if n := requests.Load(); n != 9 {
		t.Errorf("%d requests, want 9", n)
	}
	if got := tl.get(metrics.AWSThrottled, "dynamodb"); got != 6 {
		t.Errorf("%s{service=dynamodb} rose by %v, want 6", metrics.AWSThrottled.Name, got)
	}
	if got := tl.get(metrics.AWSRetries, "dynamodb"); got != 8 {
		t.Errorf("%s{service=dynamodb} rose by %v, want 8", metrics.AWSRetries.Name, got)
	}
}
