package sqsqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"tilecache/internal/apperr"
	"tilecache/internal/awsconf"
	"tilecache/internal/queue"
	"tilecache/internal/queue/queuetest"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/testkit/testenv"
)

// The tests in this file need an SQS-compatible server (fauxqs in the
// local stack) at AWS_ENDPOINT_URL_SQS.

// newClient builds the client the way the application does and checks that
// the SDK picked the endpoint up from AWS_ENDPOINT_URL_SQS by itself.
func newClient(t *testing.T) *sqs.Client {
	t.Helper()
	endpoint := testenv.RequireSQS(t)
	cfg, err := awsconf.Load(t.Context(), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	if got := aws.ToString(client.Options().BaseEndpoint); got != endpoint {
		t.Fatalf("client BaseEndpoint: got %q, want AWS_ENDPOINT_URL_SQS %q", got, endpoint)
	}
	return client
}

// newQueue creates a fresh queue and its dead-letter queue, deleted when
// the test ends, and returns the adapter and the dead-letter queue's URL.
func newQueue(t *testing.T, client *sqs.Client) (q *sqsqueue.Queue, dlqURL string) {
	t.Helper()
	name := testenv.Name(t, "tc")
	url, err := sqsqueue.CreateQueue(t.Context(), client, name)
	if err != nil {
		t.Fatalf("CreateQueue(%q): %v", name, err)
	}
	dlq, err := client.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(name + sqsqueue.DLQSuffix)})
	if err != nil {
		t.Fatalf("GetQueueUrl(%q): %v", name+sqsqueue.DLQSuffix, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, u := range []string{url, aws.ToString(dlq.QueueUrl)} {
			if _, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}); err != nil {
				t.Errorf("DeleteQueue(%s): %v", u, err)
			}
		}
	})
	return sqsqueue.New(client, url), aws.ToString(dlq.QueueUrl)
}

func TestConformance(t *testing.T) {
	client := newClient(t)
	queuetest.Run(t, func(t *testing.T) queue.Queue {
		q, _ := newQueue(t, client)
		return q
	})
}

func TestCreateQueueRedrivePolicy(t *testing.T) {
	client := newClient(t)
	q, dlqURL := newQueue(t, client)
	out, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.URL()),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		t.Fatal(err)
	}
	dlqAttrs, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(dlqURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Target string `json:"deadLetterTargetArn"`
		Max    any    `json:"maxReceiveCount"` // a string on AWS, a number on some emulators
	}
	raw := out.Attributes[string(types.QueueAttributeNameRedrivePolicy)]
	if err := json.Unmarshal([]byte(raw), &policy); err != nil {
		t.Fatalf("RedrivePolicy %q: %v", raw, err)
	}
	if want := dlqAttrs.Attributes[string(types.QueueAttributeNameQueueArn)]; policy.Target != want || fmt.Sprint(policy.Max) != "5" {
		t.Errorf("RedrivePolicy: got %q, want target %q and maxReceiveCount 5", raw, want)
	}
	// Creating it again with the same attributes succeeds (tests may retry).
	if url, err := sqsqueue.CreateQueue(t.Context(), client, lastSegment(q.URL())); err != nil || url != q.URL() {
		t.Errorf("CreateQueue again: got %q, %v; want %q, nil", url, err, q.URL())
	}
}

func TestSendCountsAndRejectsTooMany(t *testing.T) {
	client := newClient(t)
	q, _ := newQueue(t, client)
	msgs := make([]queue.Message, queue.MaxBatch+1)
	for i := range msgs {
		msgs[i] = queue.Message{TaskID: 1, Cursor: int64(i)}
	}
	if err := q.Send(t.Context(), msgs...); !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("Send(11 messages): got %v, want kind %v", err, apperr.Invalid)
	}
	if got := q.Sent(); got != 0 {
		t.Errorf("Sent() after a rejected batch: got %d, want 0", got)
	}
	if ds, err := q.Receive(t.Context(), queue.MaxBatch, 0, time.Minute); err != nil || len(ds) != 0 {
		t.Errorf("Receive after a rejected batch: got %+v, %v; want nothing", ds, err)
	}
	if err := q.Send(t.Context(), msgs[:queue.MaxBatch]...); err != nil {
		t.Fatal(err)
	}
	if err := q.Send(t.Context(), msgs[:3]...); err != nil {
		t.Fatal(err)
	}
	if err := q.Send(t.Context()); err != nil {
		t.Errorf("Send of no messages: got %v, want nil", err)
	}
	if got := q.Sent(); got != queue.MaxBatch+3 {
		t.Errorf("Sent(): got %d, want %d", got, queue.MaxBatch+3)
	}
}

func lastSegment(url string) string { return url[strings.LastIndexByte(url, '/')+1:] }

// receiveUntil calls Receive (wait 1 s, visibility 1 s) until done reports
// true or timeout passes, and returns every delivery. It acks deliveries
// when ack is set.
func receiveUntil(t *testing.T, q *sqsqueue.Queue, timeout time.Duration, ack bool, done func() bool) []queue.Delivery {
	t.Helper()
	var all []queue.Delivery
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v (%d deliveries so far: %+v)", timeout, len(all), all)
		}
		ds, err := q.Receive(t.Context(), queue.MaxBatch, time.Second, time.Second)
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		all = append(all, ds...)
		for _, d := range ds {
			if ack {
				if err := q.Ack(t.Context(), d); err != nil {
					t.Fatalf("Ack(%+v): %v", d, err)
				}
			}
		}
	}
	return all
}

// rawReceive reads the dead-letter queue with the SDK, so that bodies the
// adapter would skip are seen too.
func rawReceive(t *testing.T, client *sqs.Client, url string) []types.Message {
	t.Helper()
	out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(url),
		MaxNumberOfMessages: 10,
		VisibilityTimeout:   60,
	})
	if err != nil {
		t.Fatalf("ReceiveMessage(%s): %v", url, err)
	}
	return out.Messages
}

func TestDeadLetterAfterMaxReceiveCount(t *testing.T) {
	client := newClient(t)
	q, dlqURL := newQueue(t, client)
	m := queue.Message{TaskID: 11, Cursor: 12}
	if err := q.Send(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	dlq := sqsqueue.New(client, dlqURL)
	var dead []queue.Delivery
	got := receiveUntil(t, q, 60*time.Second, false, func() bool {
		ds, err := dlq.Receive(t.Context(), queue.MaxBatch, 0, time.Minute)
		if err != nil {
			t.Fatalf("Receive from the dead-letter queue: %v", err)
		}
		dead = append(dead, ds...)
		return len(dead) > 0
	})
	var attempts []int
	for _, d := range got {
		if d.Message != m {
			t.Errorf("main queue delivered %+v, want only %+v", d.Message, m)
		}
		attempts = append(attempts, d.Attempt)
	}
	if want := []int{1, 2, 3, 4, 5}; !slices.Equal(attempts, want) {
		t.Errorf("attempts on the main queue: got %v, want %v", attempts, want)
	}
	if len(dead) != 1 || dead[0].Message != m {
		t.Errorf("dead-letter queue: got %+v, want exactly %+v", dead, m)
	}
}

// TestPoisonMessages checks the documented choice: Receive skips a body
// that queue.DecodeMessage refuses without deleting it, counts it in Poisoned,
// and SQS moves it to the dead-letter queue after MaxReceiveCount receipts,
// unchanged. Valid messages in the same batch are delivered.
func TestPoisonMessages(t *testing.T) {
	client := newClient(t)
	q, dlqURL := newQueue(t, client)
	poison := []string{
		"not json",
		"null",
		`{"task":1}`,                     // cursor missing
		`{"cursor":2}`,                   // task missing
		`{"task":1,"cursor":2,"x":3}`,    // unknown field
		`{"Task":1,"cursor":2}`,          // a name in another case
		`{"task":1,"task":1,"cursor":2}`, // a member repeated
		`{"task":1,"cursor":2} {}`,       // trailing data
		`{"task":"1","cursor":2}`,        // wrong type
		`{"task":1,"cursor":null}`,       // null
		`{"task":1.5,"cursor":2}`,        // not an integer
		`{"task":1,"cursor":1e30}`,       // out of range
		`{"task":0,"cursor":0}`,          // no task id
		`{"task":1,"cursor":-1}`,         // a negative cursor
		`[{"task":1,"cursor":2}]`,        // not an object
	}
	for _, body := range poison {
		if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(q.URL()), MessageBody: aws.String(body)}); err != nil {
			t.Fatalf("SendMessage(%q): %v", body, err)
		}
	}
	good := queue.Message{TaskID: 1, Cursor: 2}
	if err := q.Send(t.Context(), good); err != nil {
		t.Fatal(err)
	}

	var dead []string
	got := receiveUntil(t, q, 60*time.Second, true, func() bool {
		for _, m := range rawReceive(t, client, dlqURL) {
			dead = append(dead, aws.ToString(m.Body))
		}
		return len(dead) >= len(poison)
	})
	if len(got) != 1 || got[0].Message != good || got[0].Attempt != 1 {
		t.Errorf("Receive delivered %+v, want %+v once, at attempt 1", got, good)
	}
	slices.Sort(dead)
	want := slices.Sorted(slices.Values(poison))
	if !slices.Equal(dead, want) {
		t.Errorf("dead-letter queue bodies:\n got %q\nwant %q", dead, want)
	}
	if got, want := q.Poisoned(), int64(sqsqueue.MaxReceiveCount*len(poison)); got != want {
		t.Errorf("Poisoned(): got %d, want %d (each poison message skipped on each of its %d receipts)", got, want, sqsqueue.MaxReceiveCount)
	}
}

func TestErrorKinds(t *testing.T) {
	client := newClient(t)
	q, _ := newQueue(t, client)
	ctx := t.Context()
	if err := q.Send(ctx, queue.Message{TaskID: 1}); err != nil {
		t.Fatal(err)
	}
	ds, err := q.Receive(ctx, 1, time.Second, time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("Receive: got %+v, %v", ds, err)
	}
	d := ds[0]
	// SQS may still accept a handle whose visibility expired until the
	// message is received again (fauxqs does); after that it is stale.
	var again []queue.Delivery
	for deadline := time.Now().Add(10 * time.Second); len(again) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the unacked message was not redelivered within 10s")
		}
		if again, err = q.Receive(ctx, 1, time.Second, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if again[0].Handle == d.Handle {
		t.Fatalf("redelivery reused the handle %q", d.Handle)
	}
	if err := q.Extend(ctx, d, time.Minute); !apperr.Is(err, apperr.Conflict) {
		t.Errorf("Extend with the handle of an earlier delivery: got %v, want kind %v", err, apperr.Conflict)
	}
	if err := q.Extend(ctx, again[0], time.Minute); err != nil {
		t.Errorf("Extend with the current handle: got %v, want nil", err)
	}
	if err := q.Extend(ctx, queue.Delivery{Handle: "bogus"}, time.Minute); !apperr.Is(err, apperr.Conflict) {
		t.Errorf("Extend with a bogus handle: got %v, want kind %v", err, apperr.Conflict)
	}
	if err := q.Ack(ctx, queue.Delivery{Handle: "bogus"}); err != nil && !apperr.Is(err, apperr.Conflict) {
		t.Errorf("Ack with a bogus handle: got %v, want nil or kind %v", err, apperr.Conflict)
	}

	// A queue that does not exist (deleted, or a wrong URL).
	missingURL := q.URL() + "-missing"
	missing := sqsqueue.New(client, missingURL)
	name := lastSegment(missingURL)
	calls := map[string]func() error{
		"Send":    func() error { return missing.Send(ctx, queue.Message{TaskID: 1}) },
		"Receive": func() error { _, err := missing.Receive(ctx, 1, 0, time.Second); return err },
		"Ack":     func() error { return missing.Ack(ctx, d) },
		"Extend":  func() error { return missing.Extend(ctx, d, time.Second) },
	}
	for op, call := range calls {
		err := call()
		if !apperr.Is(err, apperr.Unavailable) || !strings.Contains(apperr.Message(err), name) {
			t.Errorf("%s on a missing queue: got %v, want kind %v with a message naming %q", op, err, apperr.Unavailable, name)
		}
	}
}

// TestLongPollCancelled checks that cancelling a long poll returns at once
// with context.Canceled, also for the longest wait SQS allows.
func TestLongPollCancelled(t *testing.T) {
	client := newClient(t)
	q, _ := newQueue(t, client)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := q.Receive(ctx, 1, time.Minute, time.Minute)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Receive: got error %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("cancelled Receive returned after %v", elapsed)
	}
}

// TestRedeliveryTiming checks what queuetest's Redelivery checks. That
// test polls for "nothing yet" with 200 ms waits, which this adapter
// rounds up to a 1 s long poll: the poll is still open when the message
// becomes visible again, so the suite reports the test as inconclusive and
// skips it. Here the quiet check uses wait 0.
func TestRedeliveryTiming(t *testing.T) {
	client := newClient(t)
	q, _ := newQueue(t, client)
	m := queue.Message{TaskID: 3, Cursor: 99}
	if err := q.Send(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	first, err := q.Receive(t.Context(), 1, time.Second, time.Second)
	if err != nil || len(first) != 1 || first[0].Message != m || first[0].Attempt != 1 {
		t.Fatalf("first Receive: got %+v, %v; want %+v at attempt 1", first, err, m)
	}
	if ds, err := q.Receive(t.Context(), 1, 0, time.Minute); err != nil || len(ds) != 0 {
		if time.Since(start) < 900*time.Millisecond {
			t.Fatalf("Receive while the message is in flight: got %+v, %v; want nothing", ds, err)
		}
	}
	var second []queue.Delivery
	for deadline := start.Add(10 * time.Second); len(second) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no redelivery within 10s")
		}
		if second, err = q.Receive(t.Context(), 1, time.Second, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if elapsed := time.Since(start); elapsed < 950*time.Millisecond {
		t.Errorf("redelivery %v after the first Receive started, want no sooner than 1s", elapsed)
	}
	if d := second[0]; d.Message != m || d.Attempt != 2 || d.Handle == first[0].Handle {
		t.Errorf("redelivery: got %+v, want %+v at attempt 2 with a new handle (first %q)", d, m, first[0].Handle)
	}
	if err := q.Ack(t.Context(), second[0]); err != nil {
		t.Fatal(err)
	}
	if err := q.Ack(t.Context(), first[0]); err != nil && !apperr.Is(err, apperr.Conflict) {
		t.Errorf("Ack with the expired first handle: got %v, want nil or kind %v", err, apperr.Conflict)
	}
}
