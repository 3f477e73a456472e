// Package queue defines the queue port that carries lane messages from the
// planner to the workers (SQS in AWS, in-process when embedded).
//
// Delivery is at least once: a received message that is not acked before its
// visibility timeout becomes visible again and is delivered again. Consumers
// must therefore be idempotent; the seed worker is, through checkpoints.
// Every implementation must pass the conformance suite in queuetest.
//
// # Message bodies
//
// A queue that carries bytes (SQS) carries each Message as the body that
// EncodeMessage writes and takes it in with DecodeMessage, the one reader
// of that format, so the same strict rules apply to a worker process that
// receives messages and to the worker function the SQS event source
// invokes. A body DecodeMessage refuses is a poison message: it is neither
// worked nor deleted, and the queue's redrive policy moves it to the
// dead-letter queue. An invalid Message never enters a queue: Send refuses
// it (see Message.Validate).
package queue

import (
	"context"
	"time"
)

// Message is a lane message: "continue task TaskID from metatile Cursor".
// Its body is {"task":TaskID,"cursor":Cursor}, written by EncodeMessage
// and read by DecodeMessage only (no struct tags: encoding/json would
// read it leniently).
type Message struct {
	TaskID int64
	Cursor int64
}

// Delivery is a received message plus the handle needed to ack or extend it.
type Delivery struct {
	Message Message
	Handle  string // opaque receipt handle
	// Attempt counts deliveries of this message, starting at 1.
	Attempt int
	// Sent is when the message was first sent (zero when unknown): its
	// wait in the queue is the lane's lag.
	Sent time.Time
}

// Queue is the queue port.
type Queue interface {
	// Send enqueues msgs (at most 10 per call, as SQS allows). A batch that
	// is too large or holds a message that is not valid (Message.Validate)
	// fails with apperr.Invalid, and none of it is sent.
	Send(ctx context.Context, msgs ...Message) error
	// Receive waits up to wait for at least one message and returns at most
	// max of them, each invisible to other receivers for visibility. It
	// returns an empty slice (not an error) when nothing arrived in time, and
	// ctx's error when ctx ends.
	Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]Delivery, error)
	// Ack removes a delivered message for good. Acking a handle whose
	// visibility already expired may fail with apperr.Conflict or succeed;
	// callers must tolerate both.
	Ack(ctx context.Context, d Delivery) error
	// Extend makes a delivered message stay invisible for visibility from now.
	Extend(ctx context.Context, d Delivery, visibility time.Duration) error
}

// MaxBatch is the most messages Send accepts in one call.
const MaxBatch = 10
