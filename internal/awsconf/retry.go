package awsconf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddle "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/middleware"

	"tilecache/internal/metrics"
)

// Defaults of Retry.
const (
	DefaultMaxAttempts = 10
	DefaultRetryBudget = 20 * time.Second
	DefaultBaseDelay   = 200 * time.Millisecond
	DefaultMaxDelay    = 5 * time.Second
)

// Retry is the retry policy of every AWS client tilecache builds: the SDK's
// (DynamoDB, SQS, CloudFront; see Load) and the tile store's S3 client
// (s3store).
//
// A call that fails in a retryable way (throttling, 5xx, a connection
// refused, reset or closed, a timeout) is tried again after a backoff with
// full jitter: a uniformly random delay between zero and
// min(MaxDelay, BaseDelay × 2^(n−1)) before retry n. It is tried at most
// MaxAttempts times in all, and a retry is made only while its longest
// backoff still ends within Budget of the call's start, so a call returns
// at most Budget plus the length of its last attempt after it began (or
// when the caller's context ends, whichever is first). With the defaults
// the longest backoffs are 0.2, 0.4, 0.8, 1.6 and 3.2 s, then 5 s: a call
// throttled at every attempt makes its ten attempts in about 13 s on
// average, and never starts a retry whose backoff could end after 20 s.
//
// There is no retry quota: a client that is throttled for a long time
// keeps backing off and retrying each call up to the bounds above, rather
// than failing calls at once when a shared token bucket runs dry (the
// SDK's default), which turns throttling into errors and makes callers
// retry without any backoff.
type Retry struct {
	// MaxAttempts bounds the attempts of one call, the first included
	// (DefaultMaxAttempts); 1 disables retries.
	MaxAttempts int
	// Budget bounds the time of one call (DefaultRetryBudget): no retry is
	// made whose longest backoff would end later than Budget after the
	// call's start.
	Budget time.Duration
	// BaseDelay is the longest backoff before the first retry
	// (DefaultBaseDelay); it doubles with every retry up to MaxDelay
	// (DefaultMaxDelay).
	BaseDelay, MaxDelay time.Duration
}

// WithDefaults returns r with its zero fields set to the defaults.
func (r Retry) WithDefaults() Retry {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	if r.Budget <= 0 {
		r.Budget = DefaultRetryBudget
	}
	if r.BaseDelay <= 0 {
		r.BaseDelay = DefaultBaseDelay
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = max(DefaultMaxDelay, r.BaseDelay)
	}
	return r
}

// ceiling returns the longest backoff before retry n (n >= 1).
func (r Retry) ceiling(n int) time.Duration {
	d := r.BaseDelay
	for i := 1; i < n && d < r.MaxDelay; i++ {
		d *= 2
	}
	return min(d, r.MaxDelay)
}

// Backoff returns the delay before retry n (n >= 1: after n attempts
// failed), drawn uniformly from [0, min(MaxDelay, BaseDelay × 2^(n−1))].
func (r Retry) Backoff(n int) time.Duration {
	return time.Duration(rand.Int64N(int64(r.ceiling(max(n, 1))) + 1))
}

// Allows reports whether a call that has made n attempts, the first of
// them elapsed ago, may make another: n < MaxAttempts, and the longest
// backoff before it ends within Budget of the call's start.
func (r Retry) Allows(n int, elapsed time.Duration) bool {
	return n < r.MaxAttempts && elapsed+r.ceiling(max(n, 1)) <= r.Budget
}

// BudgetError is why a retryable failure was not retried: the call's retry
// budget does not leave room for another backoff. The SDK clients return it
// joined with the attempt's own error, which errors.As still finds.
type BudgetError struct {
	Attempts int           // attempts made
	Elapsed  time.Duration // since the call's start
	Budget   time.Duration
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("retry budget of %s spent: %d attempts in %s", e.Budget, e.Attempts, e.Elapsed.Round(time.Millisecond))
}

// Services, the values of the service label of metrics.AWSThrottled and
// metrics.AWSRetries.
const (
	ServiceS3         = "s3"
	ServiceDynamoDB   = "dynamodb"
	ServiceSQS        = "sqs"
	ServiceCloudFront = "cloudfront"
)

// applyRetry makes cfg's clients retry by r and count throttled and
// retried attempts. The SDK's own retry settings (AWS_MAX_ATTEMPTS,
// AWS_RETRY_MODE, the shared config file's) are overridden: r is the one
// policy.
func applyRetry(cfg *aws.Config, r Retry) {
	r = r.WithDefaults()
	cfg.Retryer = func() aws.Retryer { return newRetryer(r) }
	cfg.RetryMaxAttempts = 0 // else the client caps our retryer's attempts with it
	cfg.RetryMode = ""
	cfg.APIOptions = append(cfg.APIOptions, addRetryMiddleware)
}

// retryer is the SDK's standard retryer (its retryable errors: throttling
// codes, 500/502/503/504, connection errors; RetryDelay from r; no retry
// quota) with r's budget and a few more retryable errors.
type retryer struct {
	aws.RetryerV2
	policy Retry
}

func newRetryer(r Retry) *retryer {
	std := retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = r.MaxAttempts
		o.MaxBackoff = r.MaxDelay
		o.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
			return r.Backoff(attempt), nil
		})
		o.RateLimiter = ratelimit.None
		o.Retryables = append(o.Retryables, retryableExtra)
	})
	return &retryer{RetryerV2: std, policy: r}
}

// retryableExtra retries what the standard retryer leaves out but is
// transient: an answer cut short (a connection closed in the middle of the
// response: io.ErrUnexpectedEOF or io.EOF under the deserialization error)
// and HTTP 429. It comes after the standard checks, so a cancelled call is
// never retried.
var retryableExtra = retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return aws.TrueTernary
	}
	if status(err) == http.StatusTooManyRequests {
		return aws.TrueTernary
	}
	return aws.UnknownTernary
})

// GetRetryToken refuses a retry the call's budget has no room for; the SDK
// then returns the attempt's error joined with the BudgetError.
func (r *retryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		if elapsed := time.Since(c.start); !r.policy.Allows(c.attempts, elapsed) {
			return nil, &BudgetError{Attempts: c.attempts, Elapsed: elapsed, Budget: r.policy.Budget}
		}
	}
	return r.RetryerV2.GetRetryToken(ctx, opErr)
}

// call is the retry state of one SDK call: when it started and how many
// attempts it has made. The attempts of a call run one after the other on
// the caller's goroutine.
type call struct {
	start    time.Time
	attempts int
}

type callKey struct{}

// addRetryMiddleware adds the call's state at its start (initialize step)
// and, inside the retry loop, at each attempt (the end of the finalize
// step, after the SDK's Retry middleware), counts the attempt and its
// throttling.
func addRetryMiddleware(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("tilecache.RetryCall",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			return next.HandleInitialize(context.WithValue(ctx, callKey{}, &call{start: time.Now()}), in)
		}), middleware.After); err != nil {
		return err
	}
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("tilecache.RetryAttempt",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			svc := strings.ToLower(awsmiddle.GetServiceID(ctx))
			if c, ok := ctx.Value(callKey{}).(*call); ok {
				c.attempts++
				if c.attempts > 1 {
					metrics.AWSRetries.Add(ctx, 1, svc)
				}
			}
			out, md, err := next.HandleFinalize(ctx, in)
			if err != nil && IsThrottle(err) {
				metrics.AWSThrottled.Add(ctx, 1, svc)
			}
			return out, md, err
		}), middleware.After)
}

// IsThrottle reports whether err is an AWS service asking for fewer
// requests: one of the SDK's throttling error codes
// (retry.DefaultThrottleErrorCodes: ProvisionedThroughputExceededException,
// ThrottlingException, RequestThrottled, SlowDown, …) or HTTP 429.
func IsThrottle(err error) bool {
	return retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary ||
		status(err) == http.StatusTooManyRequests
}

// status returns the HTTP status of the answer err carries, or 0.
func status(err error) int {
	var v interface{ HTTPStatusCode() int }
	if errors.As(err, &v) {
		return v.HTTPStatusCode()
	}
	return 0
}
