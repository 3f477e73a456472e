package worker

import (
	"context"
	"io"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/queue/sqsqueue"
)

// HandleSQS is the worker function's handler: it takes each lane message
// of the batch in turn in as `tilecache serve`'s workers do (the body read
// by sqsqueue.ParseDelivery, the message handled by seed.Engine.Worker.Handle) and
// reports the messages to deliver again as batch item failures, so SQS
// redelivers just those. A body that is not a lane message
// (queue.DecodeMessage refuses it) is reported too, never worked nor
// acked: after the queue's maxReceiveCount it moves to the dead-letter
// queue, where it can be inspected — as it does when a worker process's
// Receive skips it.
func (p *Program) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	ctx = p.MetricsContext(ctx)
	defer p.FlushMetrics()
	defer p.FlushCDN(ctx)
	p.RefreshLayers(ctx)
	var resp events.SQSEventResponse
	fail := func(id string) {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	for _, rec := range ev.Records {
		if d, ok := ctx.Deadline(); ok && time.Until(d) < p.Engine.Options().SafetyMargin {
			fail(rec.MessageId) // no time left: let SQS hand it to the next invocation
			continue
		}
		d, err := sqsqueue.ParseDelivery(rec.Body, rec.ReceiptHandle, rec.Attributes)
		if err != nil {
			p.log.Error("poison lane message", "message_id", rec.MessageId, "err", err)
			fail(rec.MessageId)
			continue
		}
		if err := p.Engine.Worker.Handle(ctx, d); err != nil { // logged by Handle
			fail(rec.MessageId)
		}
	}
	return resp, nil
}

// EnableEMF makes the program record its metrics during each invocation
// and write them to w (the function's log: stdout) as CloudWatch Embedded
// Metric Format lines when the invocation ends, in namespace "tilecache"
// with the dimension Function.
func (p *Program) EnableEMF(w io.Writer, function string) { p.emf.Enable(p.Metrics, w, function) }

// FlushMetrics writes the invocation's metrics (EnableEMF).
func (p *Program) FlushMetrics() { p.emf.Flush(p.log) }

// FlushCDN sends the invalidations an invocation caused before it returns
// (a frozen function sends nothing in the background), within the
// invocation's time minus a margin, at most FlushBudget; what cannot be
// sent stays pending for the next invocation.
func (p *Program) FlushCDN(ctx context.Context) {
	budget := FlushBudget
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(d)-time.Second)
	}
	if budget <= 0 {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	p.Purger.Flush(fctx)
}

// FlushBudget bounds the time an invocation spends sending invalidations.
const FlushBudget = 10 * time.Second
