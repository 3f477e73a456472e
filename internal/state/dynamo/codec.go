// How tasks and times are stored: the task item, its attribute names, and
// the encodings (Unix nanoseconds, TTLs) shared by every item.

package dynamo

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/task"
)

// Task items.

// Attribute names of the task, job, meta and claim items used in
// expressions.
const (
	aStatus   = "status"
	aCursor   = "cursor"
	aEnd      = "end"
	aDone     = "done"
	aLeft     = "left"
	aHB       = "hb"
	aOwner    = "owner"
	aWT       = "wt" // the token of the last write that carried one
	aUntil    = "until"
	aNote     = "note"
	aFinished = "finished"
	aKilled   = "killed"
	aStaged   = "staged"
	aJob      = "job"
	aRunning  = "running"
	aOpen     = "open"
	aFailures = "failures"
	aState    = "state"
	aData     = "data"
	aSeq      = "n"
	aVersion  = "version"
	aAfter    = "after"
)

// taskItem is a task as stored. Times are Unix nanoseconds (0 = zero time).
type taskItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	GSIPK     string `dynamodbav:"gsi1pk,omitempty"`
	GSISK     int64  `dynamodbav:"gsi1sk"`
	ID        int64  `dynamodbav:"id"`
	JobID     int64  `dynamodbav:"job"`
	Layer     string `dynamodbav:"layer"`
	Type      int    `dynamodbav:"type"`
	Status    int    `dynamodbav:"status"`
	Start     int64  `dynamodbav:"start"`
	End       int64  `dynamodbav:"end"`
	Cursor    int64  `dynamodbav:"cursor"`
	Total     int64  `dynamodbav:"total"`
	Done      int64  `dynamodbav:"done"`
	Left      int64  `dynamodbav:"left"` // Total − Done, for the checkpoint condition
	Heartbeat int64  `dynamodbav:"hb"`
	Created   int64  `dynamodbav:"created"`
	Finished  int64  `dynamodbav:"finished,omitempty"`
	Killed    bool   `dynamodbav:"killed,omitempty"`
	Expires   int64  `dynamodbav:"expires,omitempty"`
	Staged    int64  `dynamodbav:"staged,omitempty"` // Unix seconds of staging; see Create
	Owner     string `dynamodbav:"owner,omitempty"`  // the lease holder; see task.Store.Acquire
	// WriteToken names the last write of the item that carried a token: a
	// checkpoint's (task.Checkpoint.Token), or one the store made for a
	// promotion or finish. A write retried after its answer was lost finds
	// its own token here when its condition fails.
	WriteToken string `dynamodbav:"wt,omitempty"`
	// After is the key cursor of a deleted layer's truncation (task.Task.After).
	After string `dynamodbav:"after,omitempty"`
}

// nanos encodes a time as Unix nanoseconds, the zero time as 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos decodes nanos (in UTC).
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// task returns the task the item stores.
func (it taskItem) task() task.Task {
	return task.Task{
		ID: it.ID, JobID: it.JobID, Layer: it.Layer, Type: task.Type(it.Type), Status: task.Status(it.Status),
		Start: it.Start, End: it.End, Cursor: it.Cursor, Total: it.Total, Done: it.Done,
		Heartbeat: fromNanos(it.Heartbeat), Created: fromNanos(it.Created), Finished: fromNanos(it.Finished),
		Killed: it.Killed, Owner: it.Owner, WriteToken: it.WriteToken, After: it.After,
	}
}

// decodeTask decodes a task item.
func decodeTask(item map[string]types.AttributeValue) (taskItem, error) {
	var it taskItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return taskItem{}, fmt.Errorf("decode task item: %w", err)
	}
	return it, nil
}

// expires is the TTL of an item finished at finished.
func (s *store) expires(finished time.Time) int64 {
	t := finished
	if now := s.clock(); now.After(t) {
		t = now
	}
	return t.Add(Retention).Unix()
}

// unmarshal decodes an item into v (the usage items).
func unmarshal(item map[string]types.AttributeValue, v any) error {
	return attributevalue.UnmarshalMap(item, v)
}
