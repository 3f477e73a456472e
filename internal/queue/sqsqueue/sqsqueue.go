// Package sqsqueue is the queue.Queue adapter for Amazon SQS (and for
// SQS-compatible servers such as fauxqs, which the tests use).
//
// Each queue.Message travels as the body of one SQS message, written by
// queue.EncodeMessage and read by queue.DecodeMessage. The adapter maps
// the port onto standard-queue calls: Send is one SendMessageBatch,
// Receive one ReceiveMessage, Ack one DeleteMessage and Extend one
// ChangeMessageVisibility. SQS counts time in whole seconds, so
// durations are rounded up (see Receive and Extend).
//
// # Poison messages
//
// A message whose body queue.DecodeMessage refuses (not JSON, a member
// missing, unknown or repeated, a value that is no integer, data after the
// object, a task id under 1 or a negative cursor) cannot be processed by
// any worker. Receive skips it: it is neither returned nor deleted, and
// nothing is logged here. It stays invisible for the visibility timeout of
// the Receive that got it and then becomes visible again, and once it has
// been received more often than the queue's redrive policy allows
// (maxReceiveCount, 5 for the queues that CreateQueue makes) SQS moves it
// to the dead-letter queue, where an operator can inspect it. Poisoned reports how many such receipts this
// Queue has skipped. A queue without a redrive policy keeps a poison message
// until its retention period ends.
//
// The worker function meets the same messages through the SQS event source
// rather than Receive: it takes each one in with ParseDelivery, as Receive
// does, and reports a refused one as a batch item failure, so the event
// source leaves it in the queue and the same redrive policy applies.
//
// Never dial a queue URL directly: emulators return URLs with hosts that do
// not resolve. The SDK sends every request to the client's endpoint
// (BaseEndpoint, set from AWS_ENDPOINT_URL_SQS by awsconf.Load) and passes
// the URL only as a parameter.
package sqsqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"tilecache/internal/apperr"
	"tilecache/internal/queue"
)

const (
	// MaxWait is the longest long poll SQS allows; longer waits are capped.
	MaxWait = 20 * time.Second
	// MaxVisibility is the longest visibility timeout SQS allows.
	MaxVisibility = 12 * time.Hour
	// DLQSuffix is appended to a queue's name to name its dead-letter queue.
	DLQSuffix = "-dlq"
	// MaxReceiveCount is how often CreateQueue's queues deliver a message
	// before SQS moves it to the dead-letter queue.
	MaxReceiveCount = 5
)

// Queue is a queue.Queue backed by one SQS queue. It is safe for concurrent
// use.
type Queue struct {
	client   *sqs.Client
	url      string
	name     string // last path element of url, for error messages
	sent     atomic.Int64
	poisoned atomic.Int64
}

var _ queue.Queue = (*Queue)(nil)

// New returns the adapter for the queue at queueURL. It makes no calls.
func New(client *sqs.Client, queueURL string) *Queue {
	name := queueURL
	if i := strings.LastIndexByte(strings.TrimRight(queueURL, "/"), '/'); i >= 0 {
		name = strings.TrimRight(queueURL, "/")[i+1:]
	}
	return &Queue{client: client, url: queueURL, name: name}
}

// URL returns the queue's URL.
func (q *Queue) URL() string { return q.url }

// Sent reports how many messages SQS has accepted through this Queue
// (entries that succeeded, not API calls).
func (q *Queue) Sent() int64 { return q.sent.Load() }

// Poisoned reports how many received messages Receive skipped because
// queue.DecodeMessage refused their body (or SQS sent no receipt handle).
// A poison message counts once per receipt.
func (q *Queue) Poisoned() int64 { return q.poisoned.Load() }

// Send enqueues msgs, at most queue.MaxBatch of them, with one
// SendMessageBatch call; a batch with an invalid message
// (queue.Message.Validate) fails with apperr.Invalid before that call.
// When SQS rejects some entries the others are enqueued all the same, and
// the error names the rejected ones (retrying the whole batch then
// duplicates the accepted ones, which at-least-once delivery allows).
func (q *Queue) Send(ctx context.Context, msgs ...queue.Message) error {
	if len(msgs) > queue.MaxBatch {
		return apperr.Invalidf("send %d messages: at most %d per call", len(msgs), queue.MaxBatch)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send %d messages: %w", len(msgs), err)
	}
	if len(msgs) == 0 {
		return nil
	}
	entries := make([]types.SendMessageBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		body, err := queue.EncodeMessage(m)
		if err != nil {
			return fmt.Errorf("send %d messages: entry %d: %w", len(msgs), i, err)
		}
		entries[i] = types.SendMessageBatchRequestEntry{
			Id:          aws.String(strconv.Itoa(i)),
			MessageBody: aws.String(string(body)),
		}
	}
	out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{
		QueueUrl: aws.String(q.url),
		Entries:  entries,
	})
	if err != nil {
		return q.mapErr(ctx, fmt.Sprintf("send %d messages", len(msgs)), err)
	}
	q.sent.Add(int64(len(out.Successful)))
	if len(out.Failed) == 0 {
		return nil
	}
	return q.batchErr(msgs, out.Failed)
}

// batchErr describes the failed entries of a SendMessageBatch. It is
// Unavailable when every failure was the server's fault (retrying may
// help), Internal otherwise.
func (q *Queue) batchErr(msgs []queue.Message, failed []types.BatchResultErrorEntry) error {
	var b strings.Builder
	kind := apperr.Unavailable
	for i, f := range failed {
		if i > 0 {
			b.WriteString("; ")
		}
		id := aws.ToString(f.Id)
		if n, err := strconv.Atoi(id); err == nil && n >= 0 && n < len(msgs) {
			fmt.Fprintf(&b, "entry %d (task %d cursor %d)", n, msgs[n].TaskID, msgs[n].Cursor)
		} else {
			fmt.Fprintf(&b, "entry %q", id)
		}
		fmt.Fprintf(&b, ": %s", aws.ToString(f.Code))
		if m := aws.ToString(f.Message); m != "" {
			fmt.Fprintf(&b, " (%s)", m)
		}
		if f.SenderFault {
			kind = apperr.Internal
		}
	}
	return &apperr.Error{
		Kind:    kind,
		Message: fmt.Sprintf("send to queue %s: %d of %d messages failed", q.name, len(failed), len(msgs)),
		Err:     errors.New(b.String()),
	}
}

// Receive long-polls for up to wait and returns at most max messages (SQS
// returns at most 10 per call, possibly fewer than are available).
//
// The wait is rounded down to whole seconds (the port promises to wait at
// most wait, so a sub-second wait becomes a short poll) and capped at
// MaxWait, after which an empty result returns. A wait of 0 is a short poll only while the queue's
// ReceiveMessageWaitTimeSeconds is 0 (the default, and what CreateQueue
// leaves): the SDK omits a zero WaitTimeSeconds, and SQS then applies the
// queue's default. Visibility is rounded up to whole seconds and is at
// least one second (a zero would likewise fall back to the queue's
// default); it may not exceed MaxVisibility.
//
// Attempt is SQS's ApproximateReceiveCount. Poison messages are skipped
// (see the package documentation), so Receive may return fewer messages
// than SQS delivered, or none. When ctx ends during a long poll, messages
// the server picked at that moment stay invisible for visibility and are
// then delivered again.
func (q *Queue) Receive(ctx context.Context, maxMsgs int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	if maxMsgs < 1 {
		return nil, apperr.Invalidf("receive: max must be at least 1, got %d", maxMsgs)
	}
	vis, err := visibilitySeconds("receive", visibility)
	if err != nil {
		return nil, err
	}
	vis = max(vis, 1)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("receive from queue %s: %w", q.name, err)
	}
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(q.url),
		MaxNumberOfMessages:         int32(min(maxMsgs, queue.MaxBatch)),
		WaitTimeSeconds:             int32(min(max(wait, 0), MaxWait) / time.Second),
		VisibilityTimeout:           vis,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount, types.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		return nil, q.mapErr(ctx, "receive", err)
	}
	ds := make([]queue.Delivery, 0, len(out.Messages))
	for _, m := range out.Messages {
		d, err := ParseDelivery(aws.ToString(m.Body), aws.ToString(m.ReceiptHandle), m.Attributes)
		if err != nil || d.Handle == "" { // without its handle it could never be acked
			q.poisoned.Add(1)
			continue
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// ParseDelivery takes in one SQS message, as ReceiveMessage returns it or
// as the SQS event source hands it to a Lambda function (the same body,
// receipt handle and system attributes): the body is decoded by
// queue.DecodeMessage, whose apperr.Invalid error it returns for a poison
// message; Attempt is the ApproximateReceiveCount attribute (1 when absent
// or unreadable) and Sent the SentTimestamp attribute (zero when absent or
// unreadable).
func ParseDelivery(body, receiptHandle string, attributes map[string]string) (queue.Delivery, error) {
	msg, err := queue.DecodeMessage([]byte(body))
	if err != nil {
		return queue.Delivery{}, err
	}
	attempt := 1
	if n, err := strconv.Atoi(attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]); err == nil && n > 0 {
		attempt = n
	}
	var sent time.Time
	if ms, err := strconv.ParseInt(attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil && ms > 0 {
		sent = time.UnixMilli(ms)
	}
	return queue.Delivery{Message: msg, Handle: receiptHandle, Attempt: attempt, Sent: sent}, nil
}

// Ack deletes the message. SQS deletes with an expired handle silently or
// fails with an invalid-handle error, which becomes apperr.Conflict.
func (q *Queue) Ack(ctx context.Context, d queue.Delivery) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	_, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{
		QueueUrl:      aws.String(q.url),
		ReceiptHandle: aws.String(d.Handle),
	})
	if err != nil {
		return q.mapErr(ctx, fmt.Sprintf("ack task %d cursor %d", d.Message.TaskID, d.Message.Cursor), err)
	}
	return nil
}

// Extend sets the message's visibility timeout to visibility from now,
// rounded up to whole seconds (0 makes it visible at once). It fails with
// apperr.Conflict when the handle is not in flight any more. SQS also caps
// the total time a message stays invisible at MaxVisibility from its first
// receipt.
func (q *Queue) Extend(ctx context.Context, d queue.Delivery, visibility time.Duration) error {
	vis, err := visibilitySeconds("extend", visibility)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("extend: %w", err)
	}
	_, err = q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.url),
		ReceiptHandle:     aws.String(d.Handle),
		VisibilityTimeout: vis,
	})
	if err != nil {
		return q.mapErr(ctx, fmt.Sprintf("extend task %d cursor %d", d.Message.TaskID, d.Message.Cursor), err)
	}
	return nil
}

// CreateQueue creates the standard queue name and its dead-letter queue
// name+DLQSuffix, with a redrive policy that moves a message there once it
// has been received MaxReceiveCount times, and returns name's URL. It is
// meant for tests and local stacks; in AWS the template creates the queues.
// Creating a queue that exists with the same attributes succeeds.
func CreateQueue(ctx context.Context, client *sqs.Client, name string) (queueURL string, err error) {
	dlqName := name + DLQSuffix
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(dlqName)})
	if err != nil {
		return "", createErr(ctx, dlqName, err)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       dlq.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", createErr(ctx, dlqName, err)
	}
	arn := attrs.Attributes[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", fmt.Errorf("create queue %s: no ARN in the attributes of %s", name, dlqName)
	}
	policy, err := json.Marshal(map[string]string{
		"deadLetterTargetArn": arn,
		"maxReceiveCount":     strconv.Itoa(MaxReceiveCount),
	})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", name, err)
	}
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name),
		Attributes: map[string]string{
			string(types.QueueAttributeNameRedrivePolicy): string(policy),
		},
	})
	if err != nil {
		return "", createErr(ctx, name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

func createErr(ctx context.Context, name string, err error) error {
	return (&Queue{name: name}).mapErr(ctx, "create queue", err)
}

// ceilSeconds rounds d up to whole seconds.
func ceilSeconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}

func visibilitySeconds(op string, visibility time.Duration) (int32, error) {
	if visibility < 0 {
		return 0, apperr.Invalidf("%s: negative visibility timeout %v", op, visibility)
	}
	if visibility > MaxVisibility {
		return 0, apperr.Invalidf("%s: visibility timeout %v exceeds the maximum of %v", op, visibility, MaxVisibility)
	}
	return ceilSeconds(visibility), nil
}

// mapErr translates an SDK error into the application's error kinds:
//   - ctx ended: an error wrapping ctx.Err() (errors.Is context.Canceled or
//     context.DeadlineExceeded);
//   - the queue does not exist: Unavailable, naming the queue;
//   - an invalid or expired receipt handle, or a message not in flight:
//     Conflict;
//   - throttling, server errors (5xx), exhausted retry quota and network
//     failures: Unavailable;
//   - anything else: an unclassified (Internal) error.
func (q *Queue) mapErr(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s on queue %s: %w (%v)", op, q.name, ctxErr, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s on queue %s: %w", op, q.name, err)
	}
	var (
		notExist   *types.QueueDoesNotExist
		badHandle  *types.ReceiptHandleIsInvalid
		notFlight  *types.MessageNotInflight
		api        smithy.APIError
		quota      ratelimit.QuotaExceededError
		status     interface{ HTTPStatusCode() int }
		connection interface{ ConnectionError() bool }
		netErr     net.Error
	)
	code := ""
	if errors.As(err, &api) {
		code = api.ErrorCode()
	}
	switch {
	case errors.As(err, &notExist), code == "AWS.SimpleQueueService.NonExistentQueue", code == "QueueDoesNotExist":
		return apperr.Wrap(apperr.Unavailable, err, "%s: queue %s does not exist", op, q.name)
	case errors.As(err, &badHandle), errors.As(err, &notFlight), code == "ReceiptHandleIsInvalid",
		code == "InvalidParameterValue" && strings.Contains(strings.ToLower(api.ErrorMessage()), "receipthandle"),
		code == "InvalidParameterValue" && strings.Contains(strings.ToLower(api.ErrorMessage()), "receipt handle"):
		return apperr.Wrap(apperr.Conflict, err, "%s: receipt handle is not in flight (visibility expired, redelivered or already acked)", op)
	case retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary,
		code == "KmsThrottled", code == "OverLimit":
		return apperr.Wrap(apperr.Unavailable, err, "%s: queue %s is throttling requests", op, q.name)
	case errors.As(err, &quota),
		errors.As(err, &connection) && connection.ConnectionError(),
		errors.As(err, &netErr),
		errors.As(err, &status) && status.HTTPStatusCode() >= 500:
		return apperr.Wrap(apperr.Unavailable, err, "%s: queue %s is unavailable", op, q.name)
	}
	return fmt.Errorf("%s on queue %s: %w", op, q.name, err)
}
