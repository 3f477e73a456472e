package app_test

// A lane message reaches seed.Engine.Worker.Handle two ways: a worker process
// (`tilecache serve` on SQS) receives it with sqsqueue.Queue.Receive in
// Engine.Worker.RunWorkers, and the worker function gets it in an SQS event
// (Program.HandleSQS). Both take the body in with the one strict reader,
// queue.DecodeMessage; these tests check that a malformed body is refused
// the same way on both: never worked, never deleted, so the queue's
// redrive policy dead-letters it after maxReceiveCount receipts.

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"tilecache/internal/app/apptest"
	"tilecache/internal/app/worker"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/testkit/lambdatest"
)

// malformedLanes are bodies no worker may take for a lane message. Those
// that hold task 1 would start working the app's first task if read
// leniently.
var malformedLanes = []struct{ name, body string }{
	{"not JSON", "seed demo:world z0-2, please"},
	{"task missing", `{"cursor":0}`},
	{"cursor missing", `{"task":1}`}, // the worker function once read it as cursor 0
	{"task a string", `{"task":"1","cursor":0}`},
	{"cursor a fraction", `{"task":1,"cursor":0.5}`},
	{"cursor null", `{"task":1,"cursor":null}`},
	{"unknown field", `{"task":1,"cursor":0,"layer":"demo:world"}`},
	{"name in another case", `{"Task":1,"cursor":0}`},
	{"member repeated", `{"task":1,"cursor":0,"cursor":1}`},
	{"data after the object", `{"task":1,"cursor":0} {}`},
	{"task 0", `{"task":0,"cursor":0}`},
	{"negative cursor", `{"task":1,"cursor":-1}`},
	{"not an object", `[1,0]`},
}

// unknownLane is a well-formed lane message of a task that does not exist:
// both paths drop and delete it (the control that shows they work).
const unknownLane = `{"task":999,"cursor":0}`

// TestHandleSQSRefusesMalformedLaneMessages: the worker function reports
// every malformed body as a batch item failure (SQS keeps it and, after
// maxReceiveCount, dead-letters it) and works nothing; the well-formed
// message of the same batch is finished with (not reported: deleted).
func TestHandleSQSRefusesMalformedLaneMessages(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "the intake of lane messages (its programs are on the local AWS stack in every pass)")
	var log apptest.LogBuffer
	a := apptest.Start(t, apptest.Options{Log: &log})
	// Task 1 RUNNING, so that a lenient read of {"task":1} would work it.
	a.Do(t, "POST", "/rest/seed/slow:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":0}}`)

	var ev events.SQSEvent
	var want []string
	for i, m := range malformedLanes {
		id := "poison-" + strconv.Itoa(i)
		ev.Records = append(ev.Records, sqsRecord(id, m.body))
		want = append(want, id)
	}
	ev.Records = append(ev.Records, sqsRecord("control", unknownLane))

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // the function's timeout
	defer cancel()
	res, err := a.Local.HandleSQS(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range res.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	if !slices.Equal(got, want) {
		for i, m := range malformedLanes {
			if !slices.Contains(got, want[i]) {
				t.Errorf("%s (%s): not reported as a batch item failure", m.name, m.body)
			}
		}
		if slices.Contains(got, "control") {
			t.Errorf("the well-formed message of an unknown task was reported, want it finished with")
		}
		t.Errorf("batch item failures: got %q, want %q", got, want)
	}
	logs := log.String()
	if n := strings.Count(logs, "poison lane message"); n != len(malformedLanes) {
		t.Errorf("%d poison lane messages logged, want %d:\n%.3000s", n, len(malformedLanes), logs)
	}
	if !strings.Contains(logs, "lane message for an unknown task dropped") {
		t.Errorf("the control message was not worked (dropped as a message of an unknown task):\n%.3000s", logs)
	}
}

func sqsRecord(id, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: body, EventSource: "aws:sqs",
		Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10)}}
}

// TestMalformedLaneMessagesDeadLetteredOnBothPaths sends the malformed
// bodies and a well-formed control to a real (local) lane queue with its
// redrive policy and lets each path take them in: every malformed body
// ends in the dead-letter queue unchanged, the control is deleted, and
// nothing else is left.
func TestMalformedLaneMessagesDeadLetteredOnBothPaths(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "the intake of lane messages (its programs are on the local AWS stack in every pass)")
	paths := []struct {
		name string
		// run takes lane messages in until ctx ends.
		run func(ctx context.Context, t *testing.T, p *worker.Program, r lambdatest.Resources)
	}{
		{"worker process", func(ctx context.Context, t *testing.T, p *worker.Program, r lambdatest.Resources) {
			p.Engine.Worker.RunWorkers(ctx, 2)
		}},
		{"worker function", func(ctx context.Context, t *testing.T, p *worker.Program, r lambdatest.Resources) {
			eventSource(ctx, t, p, r)
		}},
	}
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			r := lambdatest.NewResources(t)
			p := lambdatest.Worker(t, lambdatest.Env(t, r, map[string]string{"TILECACHE_LANE_VISIBILITY": "1s"}))
			client := lambdatest.SQS(t)
			dlq, err := client.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(r.Queue + sqsqueue.DLQSuffix)})
			if err != nil {
				t.Fatal(err)
			}
			var poison []string
			for _, m := range malformedLanes {
				poison = append(poison, m.body)
			}
			for _, body := range append(slices.Clone(poison), unknownLane) {
				if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(r.QueueURL), MessageBody: aws.String(body)}); err != nil {
					t.Fatal(err)
				}
			}

			ctx, stop := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { defer close(done); path.run(ctx, t, p, r) }()
			var dead []string
			for deadline := time.Now().Add(90 * time.Second); len(dead) < len(poison) && time.Now().Before(deadline); {
				out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
					QueueUrl: dlq.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 600,
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range out.Messages {
					dead = append(dead, aws.ToString(m.Body))
				}
			}
			stop()
			<-done

			slices.Sort(dead)
			if want := slices.Sorted(slices.Values(poison)); !slices.Equal(dead, want) {
				t.Errorf("dead-letter queue:\n got %q\nwant %q (every malformed body, unchanged, and nothing else)", dead, want)
			}
			if left := lambdatest.Drain(t, client, r.QueueURL); len(left) != 0 {
				t.Errorf("left in the lane queue: %q, want nothing (the control deleted, the rest dead-lettered)", left)
			}
			if q, ok := p.Queue.(*sqsqueue.Queue); ok && path.name == "worker process" {
				if got, want := q.Poisoned(), int64(sqsqueue.MaxReceiveCount*len(poison)); got != want {
					t.Errorf("Poisoned(): got %d, want %d (each malformed body skipped on each of its receipts)", got, want)
				}
			}
		})
	}
}

// eventSource stands in for the SQS event source mapping of WorkerFunction
// (ReportBatchItemFailures) with a visibility timeout of one second, so
// that a reported message comes back quickly: it invokes HandleSQS with
// each batch and deletes the messages not reported. It fails the test if a
// malformed body is not reported.
func eventSource(ctx context.Context, t *testing.T, p *worker.Program, r lambdatest.Resources) {
	client := lambdatest.SQS(t)
	for ctx.Err() == nil {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(r.QueueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 1,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("receive lane messages: %v", err)
			}
			return
		}
		if len(out.Messages) == 0 {
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, time.Minute) // the function's timeout
		res, err := p.HandleSQS(ictx, lambdatest.SQSEvent(r.QueueArn(), out.Messages...))
		cancel()
		if err != nil {
			t.Errorf("HandleSQS: %v", err)
			return
		}
		for _, m := range out.Messages {
			body := aws.ToString(m.Body)
			reported := slices.ContainsFunc(res.BatchItemFailures, func(f events.SQSBatchItemFailure) bool { return f.ItemIdentifier == aws.ToString(m.MessageId) })
			if reported != (body != unknownLane) {
				t.Errorf("HandleSQS of %q: reported as a batch item failure: %v, want %v", body, reported, body != unknownLane)
			}
			if reported {
				continue
			}
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.QueueURL), ReceiptHandle: m.ReceiptHandle}); err != nil && ctx.Err() == nil {
				t.Errorf("delete lane message: %v", err)
			}
		}
	}
}
