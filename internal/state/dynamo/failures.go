// Task failures (task.FailureStore): one item per task in a partition of
// their own, pk=failures sk=<task id, 20 digits>, holding the
// task.Failure as JSON in data and its time in at; an item leaves the
// table by its TTL an hour after task.FailureKeep.

package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/task"
)

const (
	pkFailures   = "failures"
	aFailureData = "data"
	aFailureAt   = "at"
)

var _ task.FailureStore = (*Tasks)(nil)

// RecordFailure stores f, trimming its reason, unless the task has a
// failure already: one conditional PutItem.
func (s *Tasks) RecordFailure(ctx context.Context, f task.Failure) error {
	f.Reason = task.TrimReason(f.Reason)
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode failure of task %d: %w", f.ID, err)
	}
	item := s.key(pkFailures, fmt.Sprintf("%020d", f.ID))
	item[aFailureData] = str(string(data))
	item[aFailureAt] = num(nanos(f.At))
	item[attrExpires] = num(f.At.Add(task.FailureKeep + time.Hour).Unix())
	s.wrote("RecordFailure", 1)
	e := newExpr()
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(" + e.n(attrPK) + ")"),
		ExpressionAttributeNames: e.Names(),
	}, s.callOpts...)
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return nil // the first cause stays
	}
	if err != nil {
		return s.fail(ctx, err, "record failure of task %d", f.ID)
	}
	return nil
}

// Failures returns the failures at or after since, newest task id first:
// one Query of their partition, backwards, a page at a time.
func (s *Tasks) Failures(ctx context.Context, since time.Time, limit int) ([]task.Failure, error) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String(e.n(attrPK) + " = " + e.v(str(s.ns+pkFailures))),
		FilterExpression:       aws.String(e.n(aFailureAt) + " >= " + e.v(num(nanos(since)))),
		ScanIndexForward:       aws.Bool(false),
		ConsistentRead:         aws.Bool(true),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.Names(), e.Values()
	var out []task.Failure
	p := dynamodb.NewQueryPaginator(s.client, in)
	for p.HasMorePages() && (limit <= 0 || len(out) < limit) {
		page, err := p.NextPage(ctx, s.callOpts...)
		if err != nil {
			return nil, s.fail(ctx, err, "list task failures")
		}
		for _, item := range page.Items {
			if limit > 0 && len(out) == limit {
				break
			}
			out = append(out, decodeFailure(item))
		}
	}
	return out, nil
}

func decodeFailure(item map[string]types.AttributeValue) task.Failure {
	var f task.Failure
	data, _ := strAttr(item, aFailureData)
	if err := json.Unmarshal([]byte(data), &f); err != nil {
		sk, _ := strAttr(item, attrSK)
		f.Reason = fmt.Sprintf("(unreadable failure record %s: %v)", sk, err)
	}
	return f
}
