package sqsqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"tilecache/internal/apperr"
	"tilecache/internal/queue"
	"tilecache/internal/queue/sqsqueue"
)

// The tests in this file need no server: they run the adapter against a
// fake SQS endpoint (AWS JSON 1.0 protocol) that records the requests and
// answers with canned responses, so they run everywhere, also under -short.

const fakeURL = "http://sqs.us-east-1.localhost.invalid:4566/000000000000/fake-queue"

type call struct {
	Op   string         // the X-Amz-Target operation, e.g. "ReceiveMessage"
	Body map[string]any // the decoded JSON request
}

type fakeSQS struct {
	mu    sync.Mutex
	calls []call
	// respond answers a call with a status and a JSON body.
	respond func(c call) (status int, header map[string]string, body string)
}

func (f *fakeSQS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := call{Op: strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")}
	_ = json.Unmarshal(raw, &c.Body)
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	status, header, body := http.StatusOK, map[string]string(nil), "{}"
	if f.respond != nil {
		status, header, body = f.respond(c)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (f *fakeSQS) lastCall(t *testing.T) call {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		t.Fatal("no request reached the fake SQS")
	}
	return f.calls[len(f.calls)-1]
}

// newFakeClient returns a client for endpoint with static credentials and
// no retries.
func newFakeClient(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "x", SecretAccessKey: "y"}, nil
		}),
		RetryMaxAttempts: 1,
	})
}

func newFake(t *testing.T) (*fakeSQS, *sqsqueue.Queue) {
	t.Helper()
	f := &fakeSQS{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, sqsqueue.New(newFakeClient(srv.URL), fakeURL)
}

func TestReceiveRequest(t *testing.T) {
	tests := []struct {
		max              int
		wait, visibility time.Duration
		wantMax          float64
		wantWait         float64
		wantVisibility   float64
	}{
		{1, 0, time.Second, 1, 0, 1},
		{25, 1500 * time.Millisecond, 200 * time.Millisecond, 10, 1, 1},
		{10, 200 * time.Millisecond, 0, 10, 0, 1},
		{3, time.Second, time.Minute + time.Nanosecond, 3, 1, 61},
		{10, time.Hour, 12 * time.Hour, 10, 20, 43200},
		{10, -time.Second, time.Second, 10, 0, 1},
	}
	for _, tt := range tests {
		f, q := newFake(t)
		if _, err := q.Receive(t.Context(), tt.max, tt.wait, tt.visibility); err != nil {
			t.Fatalf("Receive(%d, %v, %v): %v", tt.max, tt.wait, tt.visibility, err)
		}
		c := f.lastCall(t)
		if c.Op != "ReceiveMessage" || c.Body["QueueUrl"] != fakeURL {
			t.Fatalf("request: got %s %v, want ReceiveMessage on %s", c.Op, c.Body, fakeURL)
		}
		got := func(k string) float64 { v, _ := c.Body[k].(float64); return v }
		// The SDK leaves a zero WaitTimeSeconds out, so that the queue's
		// ReceiveMessageWaitTimeSeconds applies (0 unless configured).
		if _, present := c.Body["WaitTimeSeconds"]; tt.wantWait == 0 && present {
			t.Errorf("Receive(wait %v) sent WaitTimeSeconds %v, want it left out", tt.wait, c.Body["WaitTimeSeconds"])
		}
		if got("MaxNumberOfMessages") != tt.wantMax || got("WaitTimeSeconds") != tt.wantWait || got("VisibilityTimeout") != tt.wantVisibility {
			t.Errorf("Receive(%d, %v, %v) sent %v; want MaxNumberOfMessages %v, WaitTimeSeconds %v, VisibilityTimeout %v",
				tt.max, tt.wait, tt.visibility, c.Body, tt.wantMax, tt.wantWait, tt.wantVisibility)
		}
		if names, _ := c.Body["MessageSystemAttributeNames"].([]any); len(names) != 2 || names[0] != "ApproximateReceiveCount" || names[1] != "SentTimestamp" {
			t.Errorf("MessageSystemAttributeNames: got %v, want [ApproximateReceiveCount SentTimestamp] (the attempt, and the lane lag)", c.Body["MessageSystemAttributeNames"])
		}
	}
}

func TestInvalidArguments(t *testing.T) {
	f, q := newFake(t)
	ctx := t.Context()
	d := queue.Delivery{Handle: "h"}
	tests := []struct {
		name string
		call func() error
	}{
		{"Receive max 0", func() error { _, err := q.Receive(ctx, 0, 0, time.Second); return err }},
		{"Receive negative visibility", func() error { _, err := q.Receive(ctx, 1, 0, -time.Second); return err }},
		{"Receive visibility over 12h", func() error { _, err := q.Receive(ctx, 1, 0, 12*time.Hour+time.Second); return err }},
		{"Extend negative visibility", func() error { return q.Extend(ctx, d, -time.Second) }},
		{"Extend visibility over 12h", func() error { return q.Extend(ctx, d, 13*time.Hour) }},
		{"Send 11", func() error { return q.Send(ctx, make([]queue.Message, 11)...) }},
		{"Send task 0", func() error { return q.Send(ctx, queue.Message{TaskID: 1}, queue.Message{TaskID: 0, Cursor: 1}) }},
		{"Send negative cursor", func() error { return q.Send(ctx, queue.Message{TaskID: 1, Cursor: -1}) }},
	}
	for _, tt := range tests {
		if err := tt.call(); !apperr.Is(err, apperr.Invalid) {
			t.Errorf("%s: got %v, want kind %v", tt.name, err, apperr.Invalid)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("invalid calls reached SQS: %+v", f.calls)
	}
}

func TestExtendRequest(t *testing.T) {
	for _, tt := range []struct {
		visibility time.Duration
		want       float64
	}{{0, 0}, {time.Millisecond, 1}, {90 * time.Second, 90}} {
		f, q := newFake(t)
		if err := q.Extend(t.Context(), queue.Delivery{Handle: "rh"}, tt.visibility); err != nil {
			t.Fatal(err)
		}
		c := f.lastCall(t)
		v, present := c.Body["VisibilityTimeout"]
		if c.Op != "ChangeMessageVisibility" || c.Body["ReceiptHandle"] != "rh" || !present || v != tt.want {
			t.Errorf("Extend(%v) sent %s %v; want ChangeMessageVisibility of rh with VisibilityTimeout %v", tt.visibility, c.Op, c.Body, tt.want)
		}
	}
	f, q := newFake(t)
	if err := q.Ack(t.Context(), queue.Delivery{Handle: "rh2"}); err != nil {
		t.Fatal(err)
	}
	if c := f.lastCall(t); c.Op != "DeleteMessage" || c.Body["ReceiptHandle"] != "rh2" {
		t.Errorf("Ack sent %s %v; want DeleteMessage of rh2", c.Op, c.Body)
	}
}

func TestSendBatch(t *testing.T) {
	f, q := newFake(t)
	msgs := []queue.Message{{TaskID: 1, Cursor: 0}, {TaskID: 1, Cursor: 1}, {TaskID: 9223372036854775807, Cursor: 9223372036854775807}}
	// The SDK checks MD5OfMessageBody only when present: the fake omits it.
	f.respond = func(c call) (int, map[string]string, string) {
		return 200, nil, `{"Successful":[{"Id":"0","MessageId":"m0"}],
			"Failed":[{"Id":"1","Code":"InternalError","Message":"try again","SenderFault":false},
			          {"Id":"2","Code":"InternalError","SenderFault":false}]}`
	}
	err := q.Send(t.Context(), msgs...)
	if !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("Send with failed entries: got %v, want kind %v", err, apperr.Unavailable)
	}
	for _, want := range []string{"2 of 3 messages failed", "entry 1 (task 1 cursor 1): InternalError (try again)", "entry 2 (task 9223372036854775807 cursor 9223372036854775807)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if got := q.Sent(); got != 1 {
		t.Errorf("Sent(): got %d, want 1 (only the successful entry)", got)
	}
	c := f.lastCall(t)
	entries, _ := c.Body["Entries"].([]any)
	if c.Op != "SendMessageBatch" || len(entries) != 3 {
		t.Fatalf("Send sent %s %v; want SendMessageBatch with 3 entries", c.Op, c.Body)
	}
	if e, _ := entries[2].(map[string]any); e["MessageBody"] != `{"task":9223372036854775807,"cursor":9223372036854775807}` || e["Id"] != "2" {
		t.Errorf("entry 2: got %v, want the exact JSON body with id 2", e)
	}

	f.respond = func(c call) (int, map[string]string, string) {
		return 200, nil, `{"Successful":[],"Failed":[{"Id":"0","Code":"InvalidMessageContents","SenderFault":true}]}`
	}
	if err := q.Send(t.Context(), msgs[0]); err == nil || apperr.KindOf(err) != apperr.Internal {
		t.Errorf("Send with a sender-fault entry: got %v, want an internal error", err)
	}
}

func TestReceiveDecoding(t *testing.T) {
	f, q := newFake(t)
	f.respond = func(c call) (int, map[string]string, string) {
		return 200, nil, `{"Messages":[
			{"MessageId":"1","ReceiptHandle":"h1","Body":"{\"task\":1,\"cursor\":9007199254740993}","Attributes":{"ApproximateReceiveCount":"3","SentTimestamp":"1763806502120"}},
			{"MessageId":"2","ReceiptHandle":"h2","Body":"garbage","Attributes":{"ApproximateReceiveCount":"1"}},
			{"MessageId":"3","ReceiptHandle":"h3","Body":"{\"task\":2,\"cursor\":0}"},
			{"MessageId":"4","Body":"{\"task\":3,\"cursor\":0}"},
			{"MessageId":"5","ReceiptHandle":"h5","Body":"{\"task\":5}"},
			{"MessageId":"6","ReceiptHandle":"h6","Body":"{\"task\":0,\"cursor\":0}"}]}`
	}
	ds, err := q.Receive(t.Context(), 10, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []queue.Delivery{
		{Message: queue.Message{TaskID: 1, Cursor: 9007199254740993}, Handle: "h1", Attempt: 3, Sent: time.UnixMilli(1763806502120)},
		{Message: queue.Message{TaskID: 2, Cursor: 0}, Handle: "h3", Attempt: 1}, // no count: first delivery
	}
	if len(ds) != len(want) || !ds[0].Sent.Equal(want[0].Sent) || ds[1] != want[1] {
		t.Errorf("Receive: got %+v, want %+v", ds, want)
	}
	if got := q.Poisoned(); got != 4 {
		t.Errorf("Poisoned(): got %d, want 4 (three bodies queue.DecodeMessage refuses and a missing receipt handle)", got)
	}
}

// TestParseDelivery: the reading of one SQS message that Receive and the
// worker function share.
func TestParseDelivery(t *testing.T) {
	sent := time.UnixMilli(1763806502120)
	tests := []struct {
		name  string
		body  string
		attrs map[string]string
		want  queue.Delivery
	}{
		{"as received", `{"task":2,"cursor":2}`, map[string]string{"ApproximateReceiveCount": "3", "SentTimestamp": "1763806502120", "SenderId": "x"},
			queue.Delivery{Message: queue.Message{TaskID: 2, Cursor: 2}, Handle: "rh", Attempt: 3, Sent: sent}},
		{"no attributes", `{"task":2,"cursor":2}`, nil,
			queue.Delivery{Message: queue.Message{TaskID: 2, Cursor: 2}, Handle: "rh", Attempt: 1}},
		{"unreadable attributes", `{"cursor":0,"task":7}`, map[string]string{"ApproximateReceiveCount": "zero", "SentTimestamp": "-5"},
			queue.Delivery{Message: queue.Message{TaskID: 7, Cursor: 0}, Handle: "rh", Attempt: 1}},
		{"count 0", `{"task":7,"cursor":0}`, map[string]string{"ApproximateReceiveCount": "0", "SentTimestamp": "yesterday"},
			queue.Delivery{Message: queue.Message{TaskID: 7, Cursor: 0}, Handle: "rh", Attempt: 1}},
	}
	for _, tt := range tests {
		got, err := sqsqueue.ParseDelivery(tt.body, "rh", tt.attrs)
		if err != nil || got.Message != tt.want.Message || got.Handle != tt.want.Handle || got.Attempt != tt.want.Attempt || !got.Sent.Equal(tt.want.Sent) {
			t.Errorf("%s: ParseDelivery(%s): got %+v, %v; want %+v", tt.name, tt.body, got, err, tt.want)
		}
	}
	for _, body := range []string{"", "garbage", `{"task":5}`, `{"task":0,"cursor":0}`, `{"task":1,"cursor":2,"x":3}`} {
		if d, err := sqsqueue.ParseDelivery(body, "rh", map[string]string{"ApproximateReceiveCount": "1"}); !apperr.Is(err, apperr.Invalid) {
			t.Errorf("ParseDelivery(%q): got %+v, %v; want kind %v (the error of queue.DecodeMessage)", body, d, err, apperr.Invalid)
		}
	}
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   apperr.Kind
		substr string // in the client-safe message
	}{
		{"queue does not exist", 400, map[string]string{"x-amzn-query-error": "AWS.SimpleQueueService.NonExistentQueue;Sender"},
			`{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}`, apperr.Unavailable, "queue fake-queue does not exist"},
		{"queue does not exist, JSON only", 400, nil,
			`{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}`, apperr.Unavailable, "queue fake-queue does not exist"},
		{"receipt handle invalid", 400, nil,
			`{"__type":"com.amazonaws.sqs#ReceiptHandleIsInvalid","message":"The input receipt handle is invalid."}`, apperr.Conflict, "receipt handle"},
		{"message not in flight", 400, nil,
			`{"__type":"com.amazonaws.sqs#MessageNotInflight","message":"Message does not exist or is not available for visibility timeout change."}`, apperr.Conflict, "receipt handle"},
		{"receipt handle expired", 400, map[string]string{"x-amzn-query-error": "InvalidParameterValue;Sender"},
			`{"__type":"com.amazonaws.sqs#InvalidParameterValue","message":"Value abc for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."}`, apperr.Conflict, "receipt handle"},
		{"throttled", 400, map[string]string{"x-amzn-query-error": "RequestThrottled;Sender"},
			`{"__type":"com.amazonaws.sqs#RequestThrottled","message":"Rate exceeded"}`, apperr.Unavailable, "throttling"},
		{"throttling exception", 400, nil,
			`{"__type":"ThrottlingException","message":"Rate exceeded"}`, apperr.Unavailable, "throttling"},
		{"server error", 500, nil, `{"__type":"InternalFailure","message":"boom"}`, apperr.Unavailable, "unavailable"},
		{"service unavailable", 503, nil, `{"__type":"ServiceUnavailable","message":"later"}`, apperr.Unavailable, "unavailable"},
		{"other client error", 400, nil, `{"__type":"com.amazonaws.sqs#InvalidAddress","message":"bad"}`, apperr.Internal, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, q := newFake(t)
			f.respond = func(call) (int, map[string]string, string) { return tt.status, tt.header, tt.body }
			d := queue.Delivery{Handle: "abc"}
			calls := map[string]func() error{
				"Send":    func() error { return q.Send(t.Context(), queue.Message{TaskID: 1}) },
				"Receive": func() error { _, err := q.Receive(t.Context(), 1, 0, time.Second); return err },
				"Ack":     func() error { return q.Ack(t.Context(), d) },
				"Extend":  func() error { return q.Extend(t.Context(), d, time.Second) },
			}
			for op, call := range calls {
				err := call()
				if err == nil || apperr.KindOf(err) != tt.want {
					t.Errorf("%s: got %v (kind %v), want kind %v", op, err, apperr.KindOf(err), tt.want)
					continue
				}
				if tt.substr != "" && !strings.Contains(apperr.Message(err), tt.substr) {
					t.Errorf("%s: message %q does not contain %q", op, apperr.Message(err), tt.substr)
				}
			}
		})
	}
}

func TestNetworkErrorIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	q := sqsqueue.New(newFakeClient("http://"+addr), fakeURL)
	_, err = q.Receive(t.Context(), 1, 0, time.Second)
	if !apperr.Is(err, apperr.Unavailable) {
		t.Errorf("Receive from a closed port: got %v, want kind %v", err, apperr.Unavailable)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("Receive from a closed port: got %v, which claims the context was cancelled", err)
	}
}

func TestCancelledContext(t *testing.T) {
	f, q := newFake(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := map[string]func() error{
		"Send":    func() error { return q.Send(ctx, queue.Message{TaskID: 1}) },
		"Receive": func() error { _, err := q.Receive(ctx, 1, time.Second, time.Second); return err },
		"Ack":     func() error { return q.Ack(ctx, queue.Delivery{Handle: "h"}) },
		"Extend":  func() error { return q.Extend(ctx, queue.Delivery{Handle: "h"}, time.Second) },
	}
	for op, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: got %v, want context.Canceled", op, err)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("cancelled calls reached SQS: %+v", f.calls)
	}

	// A long poll that is cancelled while the server holds it: the server
	// answers only when the test is done.
	release := make(chan struct{})
	defer close(release)
	f.respond = func(call) (int, map[string]string, string) {
		<-release
		return 200, nil, "{}"
	}
	ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := q.Receive(ctx, 1, 5*time.Second, time.Second)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Errorf("Receive past its deadline: got %v after %v, want context.DeadlineExceeded promptly", err, time.Since(start))
	}
}
