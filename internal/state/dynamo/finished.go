// Finished tasks in the index: a task leaves the partition of active tasks
// when it finishes, in the finish's own transaction, and enters the
// partition of finished tasks of the same index, sorted by its finish
// time. A status call then reads the active tasks plus only the tasks
// finished since the time it asks for (a key range), whatever the number
// of finished tasks kept.

package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/task"
)

// indexFinished is the index partition of finished tasks (gsi1pk, in the
// store's namespace); their gsi1sk is the finish time in nanoseconds.
const indexFinished = "finished"

// finishedPK is the index partition of finished tasks.
func (s *Tasks) finishedPK() string { return s.ns + indexFinished }

// finishedIndexSet is the SET clause, without "SET", that moves a task
// item finishing at nanos from the active partition to the finished one.
func (s *Tasks) finishedIndexSet(e *expr, nanos int64) string {
	return e.n(attrGSIPK) + " = " + e.v(str(s.finishedPK())) + ", " + e.n(attrGSISK) + " = " + e.v(num(nanos))
}

// listFinished reads the tasks finished at or after since (nanoseconds)
// from the finished partition: a key range, so its cost is the number of
// tasks it returns.
func (s *Tasks) listFinished(ctx context.Context, since int64, vis *visibility) ([]taskItem, error) {
	const what = "list finished tasks"
	var out []taskItem
	e := newExpr()
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 &s.table,
		IndexName:                 aws.String(indexActive),
		ProjectionExpression:      aws.String(listedProjection(e)),
		KeyConditionExpression:    aws.String(e.n(attrGSIPK) + " = " + e.v(str(s.finishedPK())) + " AND " + e.n(attrGSISK) + " >= " + e.v(num(since))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx, s.callOpts...)
		if err != nil {
			return nil, s.fail(ctx, err, "%s", what)
		}
		for _, item := range page.Items {
			it, err := decodeListed(item)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			if task.Status(it.Status).Active() {
				continue // not possible once finished; a stale index entry
			}
			if ok, err := vis.visible(ctx, it); err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			} else if ok {
				out = append(out, it)
			}
		}
	}
	return out, nil
}

// mergeFinished adds the finished tasks fin to the tasks listed from the
// active partition, a task found in both once, as finished.
func mergeFinished(active []task.Task, fin []taskItem) []task.Task {
	at := make(map[int64]int, len(active))
	for i, t := range active {
		at[t.ID] = i
	}
	for _, it := range fin {
		if i, ok := at[it.ID]; ok {
			active[i] = it.task()
			continue
		}
		active = append(active, it.task())
	}
	return active
}
