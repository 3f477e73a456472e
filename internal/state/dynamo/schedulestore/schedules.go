// Package schedulestore holds the DynamoDB adapter of the schedules of
// saved requests (Schedules: schedule.Store), over the task table of
// package dynamo through its item API (dynamo.Items). It is apart from the
// administration's other items (package adminstore: accounts, API tokens,
// the audit trail) so that the maintenance's assembly (the cleaner
// function, which fires the due schedules) links none of those nor what
// they link (bcrypt).
//
// One item per schedule in one partition, pk=schedules sk=<name>, so that
// listing them is one Query, and their number in pk=meta sk=schedules,
// which the transactions of a create and a delete change with the
// schedule. A claim is one conditional UpdateItem on the schedule's next
// due time. The items are laid out as they were when package dynamo, and
// then package adminstore, held them:
//
//	pk=schedules        sk=<name>       def, next, [last, lastDue, started, failed]
//	pk=meta             sk=schedules    n (the number of schedules)
//
// Errors are package dynamo's: a missing item is apperr.NotFound, an item
// that exists where it must not apperr.Conflict, DynamoDB failing
// apperr.Unavailable.
package schedulestore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/apperr"
	"tilecache/internal/schedule"
	"tilecache/internal/state/dynamo"
)

// Schedules is the schedule store (schedule.Store) over a Table.
type Schedules struct{ it *dynamo.Items }

// New returns the schedule store over table.
func New(table *dynamo.Table) *Schedules { return &Schedules{table.Items()} }

var _ schedule.Store = (*Schedules)(nil)

// The schedule item's attributes (besides pk and sk).
const (
	pkSchedules   = "schedules"
	aSchedDef     = "def"     // the definition (name … created) as JSON
	aSchedNext    = "next"    // the next due time, Unix nanoseconds (0: none)
	aSchedLast    = "last"    // the last run as JSON
	aSchedLastDue = "lastDue" // the last run's due time, for RecordRun's condition
	aSchedStarted = "started" // the last run that started a job, as JSON
	aSchedFailed  = "failed"  // the last run that failed, as JSON
)

// schedDef is the part of a schedule that never changes after it is saved.
type schedDef struct {
	Name     string          `json:"name"`
	Cron     string          `json:"cron"`
	Timezone string          `json:"timezone,omitempty"`
	Layer    string          `json:"layer"`
	Request  json.RawMessage `json:"request"`
	Created  time.Time       `json:"created"`
}

func (s *Schedules) scheduleKey(name string) dynamo.Item {
	return s.it.Key(pkSchedules, name)
}

// runValue encodes a run as a JSON string attribute.
func runValue(r schedule.Run) (types.AttributeValue, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode run due %s: %w", r.Due, err)
	}
	return dynamo.Str(string(b)), nil
}

// decodeSchedule decodes a schedule item.
func decodeSchedule(item dynamo.Item) (schedule.Schedule, error) {
	data, _ := dynamo.StrAttr(item, aSchedDef)
	var d schedDef
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		name, _ := dynamo.StrAttr(item, dynamo.AttrSK)
		return schedule.Schedule{}, fmt.Errorf("schedule %q: %w: %w", name, schedule.ErrUnreadable, err)
	}
	next, _ := dynamo.NumAttr(item, aSchedNext)
	sc := schedule.Schedule{Name: d.Name, Cron: d.Cron, Timezone: d.Timezone, Layer: d.Layer, Request: d.Request,
		Created: d.Created.UTC(), Next: dynamo.FromNanos(next)}
	for attr, dst := range map[string]**schedule.Run{aSchedLast: &sc.Last, aSchedStarted: &sc.LastStarted, aSchedFailed: &sc.LastFailed} {
		v, ok := dynamo.StrAttr(item, attr)
		if !ok {
			continue
		}
		var r schedule.Run
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			return schedule.Schedule{}, fmt.Errorf("schedule %q, attribute %s: %w: %w", d.Name, attr, schedule.ErrUnreadable, err)
		}
		r.Due, r.At = r.Due.UTC(), r.At.UTC()
		*dst = &r
	}
	return sc, nil
}

// CreateSchedule implements schedule.Store: one TransactWriteItems of the
// schedule's PutItem (conditional on the name being free) and an ADD of 1
// to the schedules' count (conditional on it being under
// schedule.MaxSchedules), so that creates racing each other cannot pass
// the cap together: DynamoDB applies the count's updates one after the
// other. A table whose schedules were saved before the count existed gets
// its count first (initScheduleCount).
func (s *Schedules) CreateSchedule(ctx context.Context, sc schedule.Schedule) error {
	def, err := json.Marshal(schedDef{Name: sc.Name, Cron: sc.Cron, Timezone: sc.Timezone, Layer: sc.Layer, Request: sc.Request, Created: sc.Created})
	if err != nil {
		return fmt.Errorf("encode schedule %q: %w", sc.Name, err)
	}
	item := s.scheduleKey(sc.Name)
	item[aSchedDef] = dynamo.Str(string(def))
	item[aSchedNext] = dynamo.Num(dynamo.Nanos(sc.Next))
	what := fmt.Sprintf("create schedule %q", sc.Name)
	for counted := false; ; counted = true {
		e := dynamo.NewExpr()
		count := e.N(aSchedCount)
		add := types.TransactWriteItem{Update: &types.Update{
			Key:                                 s.it.MetaKey(skSchedules),
			UpdateExpression:                    aws.String("ADD " + count + " " + e.V(dynamo.Num(1))),
			ConditionExpression:                 aws.String("attribute_exists(" + count + ") AND " + count + " < " + e.V(dynamo.Num(schedule.MaxSchedules))),
			ExpressionAttributeNames:            e.Names(),
			ExpressionAttributeValues:           e.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}
		p := dynamo.NewExpr()
		put := types.TransactWriteItem{Put: &types.Put{
			Item:                     item,
			ConditionExpression:      aws.String("attribute_not_exists(" + p.N(dynamo.AttrPK) + ")"),
			ExpressionAttributeNames: p.Names(),
		}}
		reasons, err := s.it.Transact(ctx, "CreateSchedule", []types.TransactWriteItem{add, put})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if reasons == nil {
			return nil
		}
		if len(reasons) == 2 && dynamo.ReasonCode(reasons[1]) == "ConditionalCheckFailed" {
			return apperr.New(apperr.Conflict, "Schedule %s exists", apperr.Show(sc.Name))
		}
		if dynamo.ReasonCode(reasons[0]) != "ConditionalCheckFailed" {
			return fmt.Errorf("%s: refused (%s)", what, dynamo.ReasonCodes(reasons))
		}
		if _, ok := dynamo.NumAttr(reasons[0].Item, aSchedCount); ok {
			return schedule.TooMany()
		}
		if counted {
			return fmt.Errorf("%s: the schedules' count is missing after it was made", what)
		}
		if err := s.initScheduleCount(ctx); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}

// The schedules' count: pk=meta sk=schedules, attribute n, changed only in
// the transactions that create or delete a schedule.
const (
	skSchedules = "schedules"
	aSchedCount = "n"
)

// initScheduleCount makes the schedules' count of a table that has none
// (its schedules were saved by an earlier version, or there are none
// yet): a consistent count of the schedules' keys, put unless the count
// exists. No schedule can be created or deleted between the count and the
// put: each create and delete is conditional on the count existing, and
// the put on it not existing (nothing removes it).
func (s *Schedules) initScheduleCount(ctx context.Context) error {
	n := 0
	err := s.querySchedules(ctx, "count schedules", true, []string{dynamo.AttrSK}, func(dynamo.Item) bool {
		n++
		return true
	})
	if err != nil {
		return err
	}
	item := s.it.MetaKey(skSchedules)
	item[aSchedCount] = dynamo.Num(int64(n))
	e := dynamo.NewExpr()
	_, err = s.it.Put(ctx, "count schedules", fmt.Sprintf("save the schedules' count (%d)", n), &dynamodb.PutItemInput{
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(" + e.N(dynamo.AttrPK) + ")"),
		ExpressionAttributeNames: e.Names(),
	})
	return err // a condition failed (not ok): another process made it
}

// Schedule implements schedule.Store: one consistent GetItem.
func (s *Schedules) Schedule(ctx context.Context, name string) (schedule.Schedule, error) {
	item, err := s.it.Get(ctx, fmt.Sprintf("read schedule %q", name), s.scheduleKey(name))
	if err != nil {
		return schedule.Schedule{}, err
	}
	if item == nil {
		return schedule.Schedule{}, apperr.New(apperr.NotFound, "Schedule %s not found", apperr.Show(name))
	}
	return decodeSchedule(item)
}

// querySchedules calls each for every item of the schedules' partition,
// in name order, until each returns false, with the attributes of
// projection only (all when empty).
func (s *Schedules) querySchedules(ctx context.Context, what string, consistent bool, projection []string, each func(item dynamo.Item) bool) error {
	e := dynamo.NewExpr()
	in := &dynamodb.QueryInput{
		KeyConditionExpression: aws.String(e.N(dynamo.AttrPK) + " = " + e.V(dynamo.Str(s.it.Partition(pkSchedules)))),
		ConsistentRead:         aws.Bool(consistent),
	}
	if len(projection) > 0 {
		names := make([]string, len(projection))
		for i, a := range projection {
			names[i] = e.N(a)
		}
		in.ProjectionExpression = aws.String(strings.Join(names, ", "))
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.Names(), e.Values()
	return s.it.Query(ctx, what, in, func(item dynamo.Item) (bool, error) { return each(item), nil })
}

// Schedules implements schedule.Store: a consistent Query of the
// schedules' partition, whose sort key is the name (a listing shows a
// schedule just created).
func (s *Schedules) Schedules(ctx context.Context) ([]schedule.Schedule, []schedule.Unreadable, error) {
	out := []schedule.Schedule{}
	var bad []schedule.Unreadable
	err := s.querySchedules(ctx, "list schedules", true, nil, func(item dynamo.Item) bool {
		sc, err := decodeSchedule(item)
		if err != nil {
			name, _ := dynamo.StrAttr(item, dynamo.AttrSK)
			bad = append(bad, schedule.Unreadable{Name: name, Err: err})
			return true
		}
		out = append(out, sc)
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	return out, bad, nil
}

// NextRuns implements schedule.Store: a Query of the schedules'
// partition projected on the name (the sort key) and the next due time,
// eventually consistent (half the read capacity of a consistent one; a
// claim is conditional on the due time it read). DynamoDB charges a Query
// by the size of the items it reads, projected or not: the projection
// saves the transfer and the decoding of the requests.
func (s *Schedules) NextRuns(ctx context.Context) ([]schedule.NextRun, []schedule.Unreadable, error) {
	var out []schedule.NextRun
	var bad []schedule.Unreadable
	err := s.querySchedules(ctx, "list schedules' next runs", false, []string{dynamo.AttrSK, aSchedNext}, func(item dynamo.Item) bool {
		name, _ := dynamo.StrAttr(item, dynamo.AttrSK)
		next, ok := dynamo.NumAttr(item, aSchedNext)
		if !ok {
			bad = append(bad, schedule.Unreadable{Name: name, Err: fmt.Errorf("schedule %q: %w: no numeric %s attribute", name, schedule.ErrUnreadable, aSchedNext)})
			return true
		}
		out = append(out, schedule.NextRun{Name: name, Next: dynamo.FromNanos(next)})
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	return out, bad, nil
}

// DeleteSchedule implements schedule.Store: one TransactWriteItems of the
// schedule's DeleteItem (conditional on it existing) and an ADD of −1 to
// the schedules' count (conditional on the count existing: a table
// without one gets it first, as in CreateSchedule).
func (s *Schedules) DeleteSchedule(ctx context.Context, name string) error {
	what := fmt.Sprintf("delete schedule %q", name)
	for counted := false; ; counted = true {
		e := dynamo.NewExpr()
		count := e.N(aSchedCount)
		sub := types.TransactWriteItem{Update: &types.Update{
			Key:                       s.it.MetaKey(skSchedules),
			UpdateExpression:          aws.String("ADD " + count + " " + e.V(dynamo.Num(-1))),
			ConditionExpression:       aws.String("attribute_exists(" + count + ")"),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
		}}
		d := dynamo.NewExpr()
		del := types.TransactWriteItem{Delete: &types.Delete{
			Key:                      s.scheduleKey(name),
			ConditionExpression:      aws.String("attribute_exists(" + d.N(dynamo.AttrPK) + ")"),
			ExpressionAttributeNames: d.Names(),
		}}
		reasons, err := s.it.Transact(ctx, "DeleteSchedule", []types.TransactWriteItem{sub, del})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if reasons == nil {
			return nil
		}
		if len(reasons) == 2 && dynamo.ReasonCode(reasons[1]) == "ConditionalCheckFailed" {
			return apperr.New(apperr.NotFound, "Schedule %s not found", apperr.Show(name))
		}
		if dynamo.ReasonCode(reasons[0]) != "ConditionalCheckFailed" || counted {
			return fmt.Errorf("%s: refused (%s)", what, dynamo.ReasonCodes(reasons))
		}
		if err := s.initScheduleCount(ctx); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}

// ClaimRun implements schedule.Store: one UpdateItem of next, last and
// lastDue, conditional on next being due. The condition also fails on a
// deleted schedule (no next attribute), which it does not recreate.
func (s *Schedules) ClaimRun(ctx context.Context, name string, due, next time.Time, run schedule.Run) (bool, error) {
	run.Due = due
	rv, err := runValue(run)
	if err != nil {
		return false, err
	}
	e := dynamo.NewExpr()
	ok, err := s.it.Update(ctx, "ClaimRun", fmt.Sprintf("claim run of schedule %q due %s", name, due.Format(time.RFC3339)), &dynamodb.UpdateItemInput{
		Key: s.scheduleKey(name),
		UpdateExpression: aws.String("SET " + e.N(aSchedNext) + " = " + e.V(dynamo.Num(dynamo.Nanos(next))) + ", " +
			e.N(aSchedLast) + " = " + e.V(rv) + ", " + e.N(aSchedLastDue) + " = " + e.V(dynamo.Num(dynamo.Nanos(due)))),
		ConditionExpression:       aws.String(e.N(aSchedNext) + " = " + e.V(dynamo.Num(dynamo.Nanos(due)))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	})
	return ok, err
}

// RecordRun implements schedule.Store: one UpdateItem of last (and started
// or failed), conditional on lastDue being the run's.
func (s *Schedules) RecordRun(ctx context.Context, name string, run schedule.Run) (bool, error) {
	rv, err := runValue(run)
	if err != nil {
		return false, err
	}
	e := dynamo.NewExpr()
	v := e.V(rv)
	set := "SET " + e.N(aSchedLast) + " = " + v
	switch run.Outcome {
	case schedule.Started:
		set += ", " + e.N(aSchedStarted) + " = " + v
	case schedule.Failed:
		set += ", " + e.N(aSchedFailed) + " = " + v
	}
	ok, err := s.it.Update(ctx, "RecordRun", fmt.Sprintf("record run of schedule %q due %s", name, run.Due.Format(time.RFC3339)), &dynamodb.UpdateItemInput{
		Key:                       s.scheduleKey(name),
		UpdateExpression:          aws.String(set),
		ConditionExpression:       aws.String(e.N(aSchedLastDue) + " = " + e.V(dynamo.Num(dynamo.Nanos(run.Due)))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	})
	return ok, err
}
