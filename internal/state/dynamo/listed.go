// What the index of tasks holds and what its readers read: the status
// attributes of a task (task.Listed), projected into the index (INCLUDE,
// see CreateTable) and read with a projection expression, so a status call
// reads and decodes about a third of each task item. The same reads work
// on a table whose index projects ALL attributes (a table made before).

package dynamo

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// listedAttrs are the attributes of a task item the index projects besides
// its keys: what List, Promote and their callers use (task.Listed).
var listedAttrs = []string{
	"id", aJob, "layer", "type", aStatus, aCursor, "total", aDone, aHB, aFinished, aKilled, aStaged, aCreated,
}

// listedProjection is the projection expression reading listedAttrs.
func listedProjection(e *expr) string {
	var b strings.Builder
	for i, a := range listedAttrs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.n(a))
	}
	return b.String()
}

// listedNums set the listed number attributes of a task item.
var listedNums = map[string]func(it *taskItem, n int64){
	"id":      func(it *taskItem, n int64) { it.ID = n },
	aJob:      func(it *taskItem, n int64) { it.JobID = n },
	"type":    func(it *taskItem, n int64) { it.Type = int(n) },
	aStatus:   func(it *taskItem, n int64) { it.Status = int(n) },
	aCursor:   func(it *taskItem, n int64) { it.Cursor = n },
	"total":   func(it *taskItem, n int64) { it.Total = n },
	aDone:     func(it *taskItem, n int64) { it.Done = n },
	aHB:       func(it *taskItem, n int64) { it.Heartbeat = n },
	aFinished: func(it *taskItem, n int64) { it.Finished = n },
	aStaged:   func(it *taskItem, n int64) { it.Staged = n },
	aCreated:  func(it *taskItem, n int64) { it.Created = n },
}

// decodeListed decodes the listed attributes of a task item, without
// reflection: a status call decodes a thousand of them.
func decodeListed(item map[string]types.AttributeValue) (taskItem, error) {
	var it taskItem
	for name, av := range item {
		switch name {
		case "layer":
			s, ok := av.(*types.AttributeValueMemberS)
			if !ok {
				return taskItem{}, fmt.Errorf("decode task item: attribute layer is %T, want a string", av)
			}
			it.Layer = s.Value
		case aKilled:
			b, ok := av.(*types.AttributeValueMemberBOOL)
			if !ok {
				return taskItem{}, fmt.Errorf("decode task item: attribute killed is %T, want a boolean", av)
			}
			it.Killed = b.Value
		default:
			set, ok := listedNums[name]
			if !ok {
				continue // a key, or an attribute of a full item
			}
			n, err := listedNum(name, av)
			if err != nil {
				return taskItem{}, err
			}
			set(&it, n)
		}
	}
	if it.ID == 0 {
		return taskItem{}, fmt.Errorf("decode task item: no id")
	}
	return it, nil
}

// listedNum decodes an integer attribute.
func listedNum(name string, av types.AttributeValue) (int64, error) {
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("decode task item: attribute %s is %T, want a number", name, av)
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("decode task item: attribute %s: %w", name, err)
	}
	return v, nil
}

// committedJobs remembers the staged jobs found committed. A committed job
// stays committed (only a staged one is abandoned), so the memory is never
// stale: the tasks of a large job carry their staging mark for life, and
// without it every status call would read each such job again (8 reads
// for 8 running jobs of 128 lanes). Bounded: forgotten whole when full.
type committedJobs struct {
	m sync.Map // job id → struct{}
	n atomic.Int64
}

// committedMax bounds committedJobs.
const committedMax = 1 << 16

func (c *committedJobs) has(id int64) bool {
	_, ok := c.m.Load(id)
	return ok
}

func (c *committedJobs) add(id int64) {
	if _, loaded := c.m.LoadOrStore(id, struct{}{}); loaded {
		return
	}
	if c.n.Add(1) > committedMax {
		c.m.Clear()
		c.n.Store(0)
	}
}
