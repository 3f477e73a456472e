// Package memqueue is the in-process queue.Queue used by the embedded
// deployment: the same at-least-once semantics as SQS, with real visibility
// timeouts and redelivery, and no goroutines of its own.
//
// A message is either ready (in a FIFO list) or in flight (in a min-heap by
// visibility deadline, and in a map by its current receipt handle). Expired
// in-flight messages go back to the end of the ready list lazily, whenever
// any method takes the lock; a Receive that is waiting sleeps until a Send
// wakes it, the earliest in-flight deadline passes, its wait ends or its
// context ends, whichever comes first.
//
// Every delivery gets a new handle, so a handle from an earlier delivery can
// neither ack nor extend a message that has since been redelivered: Ack and
// Extend of a handle that is not currently in flight (expired, redelivered,
// already acked or unknown) return apperr.Conflict. Messages live in memory
// only and are lost when the process ends.
package memqueue

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/queue"
)

var _ queue.Queue = (*Queue)(nil)

// Queue is an in-process queue.Queue. It is safe for concurrent use. The
// zero value is not usable; call New.
type Queue struct {
	tag string // prefixes handles, so a handle from another Queue never matches

	mu       sync.Mutex
	ready    []*message // FIFO from head
	head     int
	inFlight deadlineHeap
	handles  map[string]*message // current handle → in-flight message
	lastID   uint64
	waiters  int           // Receives sleeping on wake
	wake     chan struct{} // closed (and replaced) to wake sleeping Receives
}

type message struct {
	id       uint64
	msg      queue.Message
	attempt  int       // deliveries so far
	handle   string    // current delivery's handle; "" when ready
	deadline time.Time // when in flight: end of the visibility timeout
	index    int       // position in the in-flight heap
	sent     time.Time
}

// New returns an empty queue.
func New() *Queue {
	return &Queue{
		tag:     strconv.FormatUint(rand.Uint64()&0xffffffff, 36),
		handles: make(map[string]*message),
		wake:    make(chan struct{}),
	}
}

// Send enqueues msgs, at most queue.MaxBatch of them, all valid
// (queue.Message.Validate): the messages SQS carries as bodies that
// queue.DecodeMessage reads back.
func (q *Queue) Send(ctx context.Context, msgs ...queue.Message) error {
	if len(msgs) > queue.MaxBatch {
		return apperr.Invalidf("send %d messages: at most %d per call", len(msgs), queue.MaxBatch)
	}
	for i, m := range msgs {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("send %d messages: entry %d: %w", len(msgs), i, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send %d messages: %w", len(msgs), err)
	}
	if len(msgs) == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	for _, m := range msgs {
		q.lastID++
		q.ready = append(q.ready, &message{id: q.lastID, msg: m, sent: now})
	}
	q.wakeLocked()
	return nil
}

// Receive waits up to wait for a message and returns at most max of them,
// each invisible to other receivers for visibility. It returns an empty
// slice when nothing arrived in time, and an error wrapping ctx.Err() when
// ctx ends first.
func (q *Queue) Receive(ctx context.Context, max int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	if max < 1 {
		return nil, apperr.Invalidf("receive: max must be at least 1, got %d", max)
	}
	if visibility < 0 {
		return nil, apperr.Invalidf("receive: negative visibility timeout %v", visibility)
	}
	end := time.Now().Add(wait)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	sleeping := false
	for {
		q.mu.Lock()
		if sleeping {
			q.waiters--
			sleeping = false
		}
		if err := ctx.Err(); err != nil {
			q.mu.Unlock()
			return nil, fmt.Errorf("receive: %w", err)
		}
		now := time.Now()
		q.requeueExpiredLocked(now)
		if q.head < len(q.ready) {
			ds := q.deliverLocked(now, max, visibility)
			q.mu.Unlock()
			return ds, nil
		}
		sleep := end.Sub(now)
		if sleep <= 0 {
			q.mu.Unlock()
			return []queue.Delivery{}, nil
		}
		if len(q.inFlight) > 0 {
			sleep = min(sleep, q.inFlight[0].deadline.Sub(now))
		}
		wake := q.wake
		q.waiters++
		sleeping = true
		q.mu.Unlock()

		if timer == nil {
			timer = time.NewTimer(sleep)
		} else {
			timer.Reset(sleep) // no drain needed since Go 1.23
		}
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
		}
	}
}

// Ack removes a delivered message for good. It returns apperr.Conflict when
// d's handle is not in flight any more (its visibility expired, it was
// redelivered or already acked).
func (q *Queue) Ack(ctx context.Context, d queue.Delivery) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.requeueExpiredLocked(time.Now())
	m, ok := q.handles[d.Handle]
	if !ok {
		return notInFlight("ack", d)
	}
	heap.Remove(&q.inFlight, m.index)
	delete(q.handles, d.Handle)
	return nil
}

// Extend makes a delivered message stay invisible for visibility from now.
// It returns apperr.Conflict when d's handle is not in flight any more.
func (q *Queue) Extend(ctx context.Context, d queue.Delivery, visibility time.Duration) error {
	if visibility < 0 {
		return apperr.Invalidf("extend: negative visibility timeout %v", visibility)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("extend: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	q.requeueExpiredLocked(now)
	m, ok := q.handles[d.Handle]
	if !ok {
		return notInFlight("extend", d)
	}
	m.deadline = now.Add(visibility)
	heap.Fix(&q.inFlight, m.index)
	// A shorter timeout may make the message visible before sleeping
	// receivers planned to look again.
	q.wakeLocked()
	return nil
}

// Len reports how many messages are ready and how many are in flight.
func (q *Queue) Len() (ready, inFlight int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.requeueExpiredLocked(time.Now())
	return len(q.ready) - q.head, len(q.inFlight)
}

func notInFlight(op string, d queue.Delivery) error {
	return apperr.New(apperr.Conflict,
		"%s task %d cursor %d: receipt handle %q is not in flight (visibility expired, redelivered or already acked)",
		op, d.Message.TaskID, d.Message.Cursor, d.Handle)
}

// wakeLocked wakes every sleeping Receive; they recheck the queue.
func (q *Queue) wakeLocked() {
	if q.waiters > 0 {
		close(q.wake)
		q.wake = make(chan struct{})
	}
}

// requeueExpiredLocked moves in-flight messages whose visibility timeout
// has passed to the end of the ready list, earliest deadline first.
func (q *Queue) requeueExpiredLocked(now time.Time) {
	for len(q.inFlight) > 0 && !q.inFlight[0].deadline.After(now) {
		m := heap.Pop(&q.inFlight).(*message)
		delete(q.handles, m.handle)
		m.handle = ""
		q.ready = append(q.ready, m)
	}
}

// deliverLocked takes up to max ready messages and puts them in flight.
func (q *Queue) deliverLocked(now time.Time, max int, visibility time.Duration) []queue.Delivery {
	n := min(max, len(q.ready)-q.head)
	ds := make([]queue.Delivery, n)
	deadline := now.Add(visibility)
	for i := range ds {
		m := q.ready[q.head]
		q.ready[q.head] = nil
		q.head++
		m.attempt++
		m.handle = q.tag + "." + strconv.FormatUint(m.id, 36) + "." + strconv.Itoa(m.attempt)
		m.deadline = deadline
		heap.Push(&q.inFlight, m)
		q.handles[m.handle] = m
		ds[i] = queue.Delivery{Message: m.msg, Handle: m.handle, Attempt: m.attempt, Sent: m.sent}
	}
	// Reuse the ready list's array rather than letting it creep forward.
	if q.head == len(q.ready) {
		q.ready, q.head = q.ready[:0], 0
	} else if q.head >= 1024 && q.head*2 >= len(q.ready) {
		n := copy(q.ready, q.ready[q.head:])
		clear(q.ready[n:])
		q.ready, q.head = q.ready[:n], 0
	}
	return ds
}

// deadlineHeap orders in-flight messages by visibility deadline.
type deadlineHeap []*message

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *deadlineHeap) Push(x any) {
	m := x.(*message)
	m.index = len(*h)
	*h = append(*h, m)
}
func (h *deadlineHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	m.index = -1
	return m
}
