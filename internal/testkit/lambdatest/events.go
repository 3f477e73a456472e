package lambdatest

import (
	"context"
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// BasicAuth is the Authorization header value of the test account.
func BasicAuth() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(User+":"+Password))
}

// V2Request returns the API Gateway HTTP API (payload 2.0) event of a
// request as the $default stage delivers it to a route of ApiFunction.
// path may carry a query string. headers are name, value pairs (lower-case
// names, as API Gateway sends them); the body is base64-encoded when
// base64Body is set, as API Gateway does for binary media.
func V2Request(method, path, body string, base64Body bool, headers ...string) events.APIGatewayV2HTTPRequest {
	rawPath, query, _ := strings.Cut(path, "?")
	h := map[string]string{
		"host":              "abcdef1234.execute-api.us-east-1.amazonaws.com",
		"user-agent":        "curl/8.5.0",
		"x-forwarded-proto": "https",
		"x-forwarded-port":  "443",
		"x-forwarded-for":   "198.51.100.7",
		"content-length":    strconv.Itoa(len(body)),
	}
	for i := 0; i+1 < len(headers); i += 2 {
		h[strings.ToLower(headers[i])] = headers[i+1]
	}
	route := "ANY /rest/{proxy+}"
	if rawPath == "/rest" {
		route = "ANY /rest"
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: route, RawPath: rawPath, RawQueryString: query, Headers: h,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: route, AccountID: "123456789012", Stage: "$default", RequestID: "test-request",
			APIID: "abcdef1234", DomainName: "abcdef1234.execute-api.us-east-1.amazonaws.com", DomainPrefix: "abcdef1234",
			Time: "22/Nov/2025:10:00:00 +0000", TimeEpoch: 1763805600000,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: method, Path: rawPath, Protocol: "HTTP/1.1", SourceIP: "198.51.100.7", UserAgent: "curl/8.5.0",
			},
		},
		Body: body, IsBase64Encoded: base64Body,
	}
	if base64Body {
		ev.Body = base64.StdEncoding.EncodeToString([]byte(body))
	}
	if rawPath != "/rest" && strings.HasPrefix(rawPath, "/rest/") {
		ev.PathParameters = map[string]string{"proxy": strings.TrimPrefix(rawPath, "/rest/")}
	}
	return ev
}

// Invoke hands ev to h through httpadapter.NewV2, as ApiFunction does.
func Invoke(t testing.TB, h http.Handler, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	res, err := httpadapter.NewV2(h).ProxyWithContext(t.Context(), ev)
	if err != nil {
		t.Fatalf("%s %s: %v", ev.RequestContext.HTTP.Method, ev.RawPath, err)
	}
	return res
}

// Do is Invoke of a request with the test account's credentials.
func Do(t testing.TB, h http.Handler, method, path, body string, headers ...string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return Invoke(t, h, V2Request(method, path, body, false, append([]string{"authorization", BasicAuth()}, headers...)...))
}

// SQSEvent is the event the SQS event source hands the worker for msgs.
func SQSEvent(queueArn string, msgs ...types.Message) events.SQSEvent {
	var ev events.SQSEvent
	for _, m := range msgs {
		attrs := map[string]string{}
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
			Body: aws.ToString(m.Body), Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: attrs,
			EventSource: "aws:sqs", EventSourceARN: queueArn, AWSRegion: Region,
		})
	}
	return ev
}

// Handler is WorkerFunction's handler (worker.Program.HandleSQS).
type Handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// EventSource stands in for the Lambda SQS event source mapping of
// template.yaml (BatchSize 1, ReportBatchItemFailures): it receives lane
// messages from the real (local) queue, invokes the handler with a
// deadline of Timeout, and deletes each message that is not reported as a
// batch item failure.
type EventSource struct {
	Client   *sqs.Client
	QueueURL string
	QueueArn string
	// Timeout is the function timeout: the invocation's context deadline.
	Timeout time.Duration
	// Visibility is the receive's visibility timeout (the queue's in AWS).
	Visibility time.Duration

	Invocations int // handler invocations so far
	Messages    int // messages handed to the handler
	Failures    int // batch item failures reported
}

// Poll receives one batch (waiting up to a second) and invokes h with it.
// It returns the number of messages received.
func (s *EventSource) Poll(t testing.TB, h Handler) int {
	t.Helper()
	vis := int32(max(s.Visibility, 6*s.Timeout) / time.Second)
	out, err := s.Client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(s.QueueURL), MaxNumberOfMessages: 1, WaitTimeSeconds: 1, VisibilityTimeout: min(vis, 43200),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("receive lane messages: %v", err)
	}
	if len(out.Messages) == 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(t.Context(), s.Timeout)
	defer cancel()
	res, err := h(ctx, SQSEvent(s.QueueArn, out.Messages...))
	if err != nil {
		t.Fatalf("worker handler: %v", err)
	}
	s.Invocations++
	s.Messages += len(out.Messages)
	s.Failures += len(res.BatchItemFailures)
	for _, m := range out.Messages {
		if slices.ContainsFunc(res.BatchItemFailures, func(f events.SQSBatchItemFailure) bool { return f.ItemIdentifier == aws.ToString(m.MessageId) }) {
			continue
		}
		if _, err := s.Client.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(s.QueueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatalf("delete lane message: %v", err)
		}
	}
	return len(out.Messages)
}

// RunUntil polls and invokes h until done reports true, failing the test
// after timeout.
func (s *EventSource) RunUntil(t testing.TB, h Handler, timeout time.Duration, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("not done after %v (%d invocations, %d messages, %d failures)", timeout, s.Invocations, s.Messages, s.Failures)
		}
		s.Poll(t, h)
	}
}

// Drain receives and deletes every visible message of the queue without
// handing it to a function (a lost lane), returning their bodies.
func Drain(t testing.TB, client *sqs.Client, queueURL string) []string {
	t.Helper()
	var bodies []string
	for {
		out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, VisibilityTimeout: 60})
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
		if len(out.Messages) == 0 {
			return bodies
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			if _, err := client.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("drain: %v", err)
			}
		}
	}
}
