package dynamo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"tilecache/internal/apperr"
)

// errBusy marks a transaction that kept meeting concurrent transactions on
// the same items; it is wrapped in an apperr.Conflict.
var errBusy = errors.New("transaction conflicts with concurrent ones")

// fail classifies an SDK error at the boundary and adds context:
//
//   - a cancelled ctx: the error satisfies errors.Is(err, context.Canceled);
//   - a failed condition: apperr.Conflict;
//   - a missing table: apperr.Unavailable naming the table;
//   - throttling, server faults, a deadline, transport failures:
//     apperr.Unavailable;
//   - anything else (a request DynamoDB refused as malformed): unclassified.
func (s *store) fail(ctx context.Context, err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return apperr.Wrap(apperr.Unavailable, withCause(err, cerr), "%s: DynamoDB did not answer in time", what)
		}
		return fmt.Errorf("%s: %w", what, withCause(err, cerr))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return apperr.Wrap(apperr.Unavailable, err, "%s: DynamoDB did not answer in time", what)
	}
	if _, ok := errors.AsType[*apperr.Error](err); ok {
		return fmt.Errorf("%s: %w", what, err)
	}
	if isConditionFailed(err) {
		return apperr.Wrap(apperr.Conflict, err, "%s: condition not met", what)
	}
	if _, ok := errors.AsType[*types.ResourceNotFoundException](err); ok {
		return apperr.Wrap(apperr.Unavailable, err, "%s: DynamoDB table %s not found (or its index %s)", what, s.table, indexActive)
	}
	if tc, ok := errors.AsType[*types.TransactionCanceledException](err); ok {
		for _, r := range tc.CancellationReasons {
			switch code(r) {
			case "ConditionalCheckFailed", "TransactionConflict":
				return apperr.Wrap(apperr.Conflict, err, "%s: transaction cancelled (%s)", what, reasonCodes(tc.CancellationReasons))
			case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				return apperr.Wrap(apperr.Unavailable, err, "%s: DynamoDB is throttling", what)
			}
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	if ae, ok := errors.AsType[smithy.APIError](err); ok {
		switch ae.ErrorCode() {
		case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
			"LimitExceededException", "TransactionInProgressException", "TransactionConflictException",
			"InternalServerError", "InternalFailure", "ServiceUnavailable", "RequestTimeout", "RequestTimeoutException":
			return apperr.Wrap(apperr.Unavailable, err, "%s: DynamoDB is unavailable (%s)", what, ae.ErrorCode())
		}
		if ae.ErrorFault() == smithy.FaultServer {
			return apperr.Wrap(apperr.Unavailable, err, "%s: DynamoDB is unavailable (%s)", what, ae.ErrorCode())
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	var se *smithy.SerializationError
	var de *smithy.DeserializationError
	if errors.As(err, &de) && cutAnswer(err) {
		return apperr.Wrap(apperr.Unavailable, err, "%s: DynamoDB's answer was cut short", what)
	}
	if errors.As(err, &se) || errors.As(err, &de) {
		return fmt.Errorf("%s: %w", what, err)
	}
	// No answer from DynamoDB at all: connection refused, DNS, reset, the
	// SDK's retry quota.
	return apperr.Wrap(apperr.Unavailable, err, "%s: DynamoDB is unreachable", what)
}

// withCause returns err, made to also match cause under errors.Is.
func withCause(err, cause error) error {
	if errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w (%w)", cause, err)
}

func isConditionFailed(err error) bool {
	_, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
	return ok
}

func code(r types.CancellationReason) string {
	if r.Code == nil {
		return ""
	}
	return *r.Code
}

func reasonCodes(rs []types.CancellationReason) string {
	codes := make([]string, len(rs))
	for i, r := range rs {
		codes[i] = code(r)
	}
	return strings.Join(codes, ", ")
}

// backoff sleeps before retry attempt (0-based) with full jitter, or
// returns ctx's error.
func backoff(ctx context.Context, attempt int) error {
	d := min(5*time.Millisecond<<attempt, 250*time.Millisecond)
	d = time.Duration(rand.Int64N(int64(d)) + 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// transactAttempts bounds the tries of a transaction that meets concurrent
// transactions on its items.
const transactAttempts = 8

// transact runs a write transaction. It returns (nil, nil) on success, the
// cancellation reasons (one per item, in order) when a condition failed,
// or an error. A transaction cancelled only because of concurrent
// transactions or throttling is retried with backoff; when that persists
// the error is an apperr.Conflict wrapping errBusy (or Unavailable for
// throttling).
func (s *store) transact(ctx context.Context, what string, items []types.TransactWriteItem) ([]types.CancellationReason, error) {
	for attempt := 0; ; attempt++ {
		s.wrote(opName(what), int64(len(items)))
		_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}, s.callOpts...)
		if err == nil {
			return nil, nil
		}
		tc, ok := errors.AsType[*types.TransactionCanceledException](err)
		if !ok || ctx.Err() != nil {
			return nil, s.fail(ctx, err, "%s", what)
		}
		retry := false
		for _, r := range tc.CancellationReasons {
			switch code(r) {
			case "ConditionalCheckFailed":
				return tc.CancellationReasons, nil
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				retry = true
			}
		}
		if !retry {
			return nil, s.fail(ctx, err, "%s", what)
		}
		if attempt+1 == transactAttempts {
			if strings.Contains(reasonCodes(tc.CancellationReasons), "TransactionConflict") {
				return nil, apperr.Wrap(apperr.Conflict, fmt.Errorf("%w: %w", errBusy, err), "%s: too much contention", what)
			}
			return nil, s.fail(ctx, err, "%s", what)
		}
		if err := backoff(ctx, attempt); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
}

// batchAttempts bounds the requests of one batch (BatchWriteItem or
// BatchGetItem) whose items DynamoDB keeps leaving unprocessed.
const batchAttempts = 10

// batchWrite writes reqs with BatchWriteItem, 25 at a time, resubmitting
// unprocessed items with backoff.
func (s *store) batchWrite(ctx context.Context, what string, reqs []types.WriteRequest) error {
	const batch = 25
	for len(reqs) > 0 {
		todo := reqs[:min(batch, len(reqs))]
		reqs = reqs[len(todo):]
		for attempt := 0; len(todo) > 0; attempt++ {
			if attempt == batchAttempts {
				return apperr.New(apperr.Unavailable, "%s: DynamoDB left %d writes unprocessed", what, len(todo))
			}
			if attempt > 0 {
				if err := backoff(ctx, attempt); err != nil {
					return fmt.Errorf("%s: %w", what, err)
				}
			}
			s.wrote(opName(what), int64(len(todo)))
			out, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{s.table: todo},
			}, s.callOpts...)
			if err != nil {
				return s.fail(ctx, err, "%s", what)
			}
			todo = out.UnprocessedItems[s.table]
		}
	}
	return nil
}

// cutAnswer reports whether err is an answer that ended early (the
// connection closed or reset while its body was read): a transport
// failure, not a malformed answer.
func cutAnswer(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}
