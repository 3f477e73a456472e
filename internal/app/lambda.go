package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/queue"
)

// HandleSQS is the worker function's handler: it works each lane message
// of the batch in turn and reports the messages to deliver again as batch
// item failures, so SQS redelivers just those. A body that is not a lane
// message is reported too: after the queue's maxReceiveCount it moves to
// the dead-letter queue, where it can be inspected.
func (p *Program) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	fail := func(id string) {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	for _, rec := range ev.Records {
		if d, ok := ctx.Deadline(); ok && time.Until(d) < p.Engine.Options().SafetyMargin {
			fail(rec.MessageId) // no time left: let SQS hand it to the next invocation
			continue
		}
		msg, err := decodeLane(rec.Body)
		if err != nil {
			p.log.Error("poison lane message", "message_id", rec.MessageId, "err", err)
			fail(rec.MessageId)
			continue
		}
		if err := p.Engine.Work(ctx, msg); err != nil {
			p.log.Error("lane work failed; message will be redelivered", "message_id", rec.MessageId, "task", msg.TaskID, "err", err)
			fail(rec.MessageId)
		}
	}
	return resp, nil
}

func decodeLane(body string) (queue.Message, error) {
	var m queue.Message
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return m, fmt.Errorf("decode lane message: %w", err)
	}
	if m.TaskID < 1 || m.Cursor < 0 {
		return m, fmt.Errorf("lane message %q has no valid task and cursor", body)
	}
	return m, nil
}

// HandleSchedule is the cleaner function's handler, run every minute by an
// EventBridge schedule: it re-enqueues lanes whose heartbeat is stale and
// starts pending tasks whose threads freed.
func (p *Program) HandleSchedule(ctx context.Context, ev events.EventBridgeEvent) error {
	if err := p.Engine.Sweep(ctx); err != nil {
		return fmt.Errorf("scheduled sweep: %w", err)
	}
	return nil
}
