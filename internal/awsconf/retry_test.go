package awsconf_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"tilecache/internal/awsconf"
	"tilecache/internal/metrics"
)

// fast is a policy with the default attempts and budget and millisecond
// backoffs, so that tests of many retries take no time.
var fast = awsconf.Retry{BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond}

func TestBackoff(t *testing.T) {
	r := awsconf.Retry{}.WithDefaults()
	if r.MaxAttempts != 10 || r.Budget != 20*time.Second || r.BaseDelay != 200*time.Millisecond || r.MaxDelay != 5*time.Second {
		t.Fatalf("defaults: %+v", r)
	}
	ceilings := []time.Duration{200, 400, 800, 1600, 3200, 5000, 5000, 5000, 5000}
	for i, ceiling := range ceilings {
		n := i + 1
		ceiling *= time.Millisecond
		var longest time.Duration
		for range 2000 {
			d := r.Backoff(n)
			if d < 0 || d > ceiling {
				t.Fatalf("Backoff(%d) = %v, want within [0, %v]", n, d, ceiling)
			}
			longest = max(longest, d)
		}
		if longest < ceiling*9/10 { // full jitter: the whole range is used
			t.Errorf("Backoff(%d): longest of 2000 draws %v, want close to %v", n, longest, ceiling)
		}
	}
	for _, tt := range []struct {
		attempts int
		elapsed  time.Duration
		want     bool
	}{
		{1, 0, true},
		{9, 0, true},
		{10, 0, false},                       // MaxAttempts
		{1, 19800 * time.Millisecond, true},  // + 200 ms ends at 20 s
		{1, 19801 * time.Millisecond, false}, // would end after the budget
		{6, 15 * time.Second, true},          // + 5 s
		{6, 15001 * time.Millisecond, false},
	} {
		if got := r.Allows(tt.attempts, tt.elapsed); got != tt.want {
			t.Errorf("Allows(%d, %v) = %v, want %v", tt.attempts, tt.elapsed, got, tt.want)
		}
	}
}

// tally is a metrics exporter that sums counters by metric and labels.
type tally struct {
	mu  sync.Mutex
	sum map[string]float64
	ctx context.Context // carries the tally's registry
}

// newTally returns a tally installed in a registry of its own, which
// tl.ctx carries to the code under test.
func newTally(t *testing.T) *tally {
	var reg metrics.Registry
	tl := &tally{sum: map[string]float64{}, ctx: metrics.NewContext(t.Context(), &reg)}
	t.Cleanup(reg.Install(tl))
	return tl
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

// dynamo is a DynamoDB endpoint whose answer to request n (1, 2, …) is
// chosen by script; every request is a GetItem here.
type dynamo struct {
	requests atomic.Int64
	script   func(n int64, w http.ResponseWriter)
}

func (d *dynamo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.script(d.requests.Add(1), w)
}

// found answers an empty GetItem result (no item).
func found(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	fmt.Fprint(w, `{}`)
}

// dynamoError answers a DynamoDB error in its wire format.
func dynamoError(w http.ResponseWriter, status int, typ string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"__type":%q,"message":"x"}`, typ)
}

const throughputExceeded = "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"

// hangUp closes the connection without an answer: reset (RST) or closed
// (FIN, the client reads EOF).
func hangUp(t *testing.T, w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	if reset {
		conn.(*net.TCPConn).SetLinger(0)
	}
	conn.Close()
}

// newDynamo returns a DynamoDB client made from awsconf.Load's
// configuration with policy r, talking to a server running script.
func newDynamo(t *testing.T, r awsconf.Retry, script func(n int64, w http.ResponseWriter)) (*dynamodb.Client, *dynamo) {
	t.Helper()
	d := &dynamo{script: script}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	cfg, err := awsconf.Load(t.Context(), func(string) (string, bool) { return "", false }, awsconf.WithRetry(r))
	if err != nil {
		t.Fatal(err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.Credentials = credentials.NewStaticCredentialsProvider("k", "s", "")
		o.DisableValidateResponseChecksum = true
	}), d
}

func getItem(ctx context.Context, c *dynamodb.Client) error {
	_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}})
	return err
}

// TestThrottlesRetried: a call DynamoDB throttles six times (both of its
// throttling errors) succeeds at the seventh attempt, and each throttled
// attempt and each retry is counted.
func TestThrottlesRetried(t *testing.T) {
	tl := newTally(t)
	c, d := newDynamo(t, fast, func(n int64, w http.ResponseWriter) {
		switch {
		case n <= 4:
			dynamoError(w, 400, throughputExceeded)
		case n <= 6:
			dynamoError(w, 400, "com.amazon.coral.availability#ThrottlingException")
		default:
			found(w)
		}
	})
	if err := getItem(tl.ctx, c); err != nil {
		t.Fatalf("GetItem throttled 6 times: %v", err)
	}
	if n := d.requests.Load(); n != 7 {
		t.Errorf("%d requests, want 7", n)
	}
	if got := tl.get(metrics.AWSThrottled, "dynamodb"); got != 6 {
		t.Errorf("%s{service=dynamodb} rose by %v, want 6", metrics.AWSThrottled.Name, got)
	}
	if got := tl.get(metrics.AWSRetries, "dynamodb"); got != 6 {
		t.Errorf("%s{service=dynamodb} rose by %v, want 6", metrics.AWSRetries.Name, got)
	}
}

// TestConnectionFailuresRetried: a connection reset or closed before the
// answer, an answer cut short and a 503 are retried.
func TestConnectionFailuresRetried(t *testing.T) {
	tl := newTally(t)
	c, d := newDynamo(t, fast, func(n int64, w http.ResponseWriter) {
		switch n {
		case 1:
			hangUp(t, w, true)
		case 2:
			hangUp(t, w, false)
		case 3: // headers and half the body, then the connection closes
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.Header().Set("Content-Length", "40")
			w.WriteHeader(200)
			fmt.Fprint(w, `{"Item":{"pk":`)
			http.NewResponseController(w).Flush()
			hangUp(t, w, false)
		case 4:
			dynamoError(w, 503, "com.amazonaws.dynamodb.v20120810#ServiceUnavailable")
		default:
			found(w)
		}
	})
	if err := getItem(tl.ctx, c); err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if n := d.requests.Load(); n != 5 {
		t.Errorf("%d requests, want 5", n)
	}
	if got := tl.get(metrics.AWSRetries, "dynamodb"); got != 4 {
		t.Errorf("retries rose by %v, want 4", got)
	}
	if got := tl.get(metrics.AWSThrottled, "dynamodb"); got != 0 {
		t.Errorf("throttles rose by %v, want 0 (none of the failures was throttling)", got)
	}
}

// TestBudget: a table that throttles forever fails the call once the
// budget leaves no room for another backoff, with the throttling error.
func TestBudget(t *testing.T) {
	r := awsconf.Retry{MaxAttempts: 1000, Budget: 500 * time.Millisecond, BaseDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond}
	c, d := newDynamo(t, r, func(_ int64, w http.ResponseWriter) { dynamoError(w, 400, throughputExceeded) })
	start := time.Now()
	err := getItem(t.Context(), c)
	took := time.Since(start)
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "ProvisionedThroughputExceededException" {
		t.Fatalf("got %v, want the throttling error", err)
	}
	var be *awsconf.BudgetError
	if !errors.As(err, &be) || be.Budget != r.Budget {
		t.Errorf("got %v, want a BudgetError too", err)
	}
	if took < r.Budget-r.MaxDelay || took > r.Budget+time.Second {
		t.Errorf("the call took %v, want %v (budget) minus at most %v (one backoff), plus slack", took, r.Budget, r.MaxDelay)
	}
	if n := d.requests.Load(); n < 10 || n >= 1000 {
		t.Errorf("%d requests", n)
	}
	t.Logf("%d attempts in %v: %v", d.requests.Load(), took, err)
}

func TestMaxAttempts(t *testing.T) {
	c, d := newDynamo(t, awsconf.Retry{MaxAttempts: 3, BaseDelay: time.Millisecond}, func(_ int64, w http.ResponseWriter) {
		dynamoError(w, 400, throughputExceeded)
	})
	err := getItem(t.Context(), c)
	if err == nil || !strings.Contains(err.Error(), "exceeded maximum number of attempts, 3") {
		t.Errorf("got %v, want max attempts 3 exceeded", err)
	}
	if n := d.requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// TestCallerDeadline: the caller's context ends the retries before the
// budget does.
func TestCallerDeadline(t *testing.T) {
	c, _ := newDynamo(t, awsconf.Retry{MaxAttempts: 1000, BaseDelay: 20 * time.Millisecond, MaxDelay: 50 * time.Millisecond}, func(_ int64, w http.ResponseWriter) {
		dynamoError(w, 400, throughputExceeded)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := getItem(ctx, c)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 300*time.Millisecond+time.Second {
		t.Errorf("the call took %v past a 300 ms deadline", took)
	}
}

// TestNoRetryQuota: sustained throttling does not make calls fail at once,
// as the SDK's default retry quota does once it has lost 500 tokens (5 per
// failed retry, 1 back per successful attempt): here after about 55 calls
// throttled three times each.
func TestNoRetryQuota(t *testing.T) {
	throttleThrice := func(n int64, w http.ResponseWriter) {
		if n%4 != 0 {
			dynamoError(w, 400, throughputExceeded)
			return
		}
		found(w)
	}
	c, _ := newDynamo(t, fast, throttleThrice)
	for i := range 100 {
		if err := getItem(t.Context(), c); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}

	// The same with the SDK's standard retryer and its quota.
	other, _ := newDynamo(t, fast, throttleThrice)
	std := dynamodb.New(other.Options(), func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 10
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
		})
	})
	var err error
	for range 100 {
		if err = getItem(t.Context(), std); err != nil {
			break
		}
	}
	var qe ratelimit.QuotaExceededError
	if !errors.As(err, &qe) {
		t.Errorf("the SDK's standard retryer: got %v, want a call failing on its retry quota", err)
	}
}

// TestLoadOverridesSDKRetrySettings: AWS_MAX_ATTEMPTS and AWS_RETRY_MODE
// (read by the SDK) do not cap or replace the policy.
func TestLoadOverridesSDKRetrySettings(t *testing.T) {
	t.Setenv("AWS_MAX_ATTEMPTS", "2")
	t.Setenv("AWS_RETRY_MODE", "adaptive")
	c, d := newDynamo(t, fast, func(n int64, w http.ResponseWriter) {
		if n <= 5 {
			dynamoError(w, 400, throughputExceeded)
			return
		}
		found(w)
	})
	if err := getItem(t.Context(), c); err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if n := d.requests.Load(); n != 6 {
		t.Errorf("%d requests, want 6", n)
	}
	if got := c.Options().Retryer.MaxAttempts(); got != awsconf.DefaultMaxAttempts {
		t.Errorf("client's MaxAttempts %d, want %d", got, awsconf.DefaultMaxAttempts)
	}
}
