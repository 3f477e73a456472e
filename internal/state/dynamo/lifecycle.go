// task.Store, second half: the run of a task, from PENDING to finished
// (Running, Promote, Acquire, Checkpoint, Finish, Kill). Creating and
// reading tasks is in tasks.go.

package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/apperr"
	"tilecache/internal/task"
	"tilecache/internal/token"
)

// Running returns the pool count: the number of RUNNING tasks.
func (s *Tasks) Running(ctx context.Context) (int64, error) {
	return s.runningCount(ctx, skPool, "the thread pool")
}

// runningCount reads the RUNNING count of a meta item (the pool's, or a
// layer's lanes), consistently; 0 when the item has none.
func (s *Tasks) runningCount(ctx context.Context, sk, what string) (int64, error) {
	e := newExpr()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                &s.table,
		Key:                      s.metaKey(sk),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String(e.n(aRunning)),
		ExpressionAttributeNames: e.Names(),
	}, s.callOpts...)
	if err != nil {
		return 0, s.fail(ctx, err, "read %s", what)
	}
	n, _ := numAttr(out.Item, aRunning)
	return n, nil
}

// promotePage is how many index entries Promote reads at a time.
const promotePage = 100

// Promote implements task.Store. It reads the pool count, then walks the
// PENDING tasks of the index oldest first, promoting each in its own
// transaction (pool count + 1 if below pool; status PENDING → RUNNING) until
// the pool is full or no pending task is left. A layer with a lane cap has
// its count read first (once a walk): a layer at its cap costs a read, not
// a refused transaction's writes. Promotions are committed one
// by one: if an error stops the walk after some promotions, Promote returns
// those without an error (the next call continues); it returns an error
// only when it promoted nothing. Likewise, when concurrent promoters keep
// conflicting on the pool item, it returns what it has.
func (s *Tasks) Promote(ctx context.Context, pool int, laneCap func(layer string) int, now time.Time) ([]task.Task, error) {
	const what = "promote tasks"
	if pool <= 0 {
		return nil, nil
	}
	running, err := s.Running(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	free := int64(pool) - running
	if free <= 0 {
		return nil, nil
	}
	var promoted []task.Task
	capped := map[string]bool{}     // layers found at their cap in this walk
	layerRuns := map[string]int64{} // their RUNNING counts, read in this walk
	stop := func(err error) ([]task.Task, error) {
		if len(promoted) > 0 || errors.Is(err, errBusy) {
			return promoted, nil
		}
		return nil, err
	}
	vis := s.newVisibility()
	e := newExpr()
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 &s.table,
		IndexName:                 aws.String(indexActive),
		ProjectionExpression:      aws.String(listedProjection(e)),
		KeyConditionExpression:    aws.String(e.n(attrGSIPK) + " = " + e.v(str(s.activePK()))),
		FilterExpression:          aws.String(e.n(aStatus) + " = " + e.v(num(int64(task.Pending)))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ScanIndexForward:          aws.Bool(true),
		Limit:                     aws.Int32(promotePage),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx, s.callOpts...)
		if err != nil {
			return stop(s.fail(ctx, err, "%s", what))
		}
		for _, item := range page.Items {
			it, err := decodeListed(item)
			if err != nil {
				return stop(fmt.Errorf("%s: %w", what, err))
			}
			if ok, err := vis.visible(ctx, it); err != nil {
				return stop(fmt.Errorf("%s: %w", what, err))
			} else if !ok {
				continue
			}
			if capped[it.Layer] {
				continue
			}
			limit := 0
			if laneCap != nil {
				limit = laneCap(it.Layer)
			}
			if limit > 0 {
				// Read the layer's count before trying: a transaction
				// refused by a full cap still costs its writes, and lanes
				// waiting behind the cap are tried on every dispatch.
				n, seen := layerRuns[it.Layer]
				if !seen {
					if n, err = s.runningCount(ctx, skLanes+it.Layer, "the running lanes of layer "+it.Layer); err != nil {
						return stop(fmt.Errorf("%s: %w", what, err))
					}
					layerRuns[it.Layer] = n
				}
				if n >= int64(limit) {
					capped[it.Layer] = true
					continue
				}
			}
			ok, full, layerFull, err := s.promote(ctx, it.ID, it.Layer, pool, limit, now)
			if err != nil {
				return stop(err)
			}
			if full {
				return promoted, nil
			}
			if layerFull {
				capped[it.Layer] = true
				continue
			}
			if !ok {
				continue // promoted, killed or gone since the index was read
			}
			layerRuns[it.Layer]++
			t := it.task()
			t.Status, t.Heartbeat = task.Running, now
			promoted = append(promoted, t)
			if free--; free == 0 {
				return promoted, nil
			}
		}
	}
	return promoted, nil
}

// promote moves one task to RUNNING if the pool and its layer's lane cap
// (limit; ≤ 0: none) have room, in one transaction of the pool count, the
// layer's count of RUNNING tasks and the task. ok: promoted; full: the
// pool is full; layerFull: the layer is at its cap (nothing changed).
func (s *Tasks) promote(ctx context.Context, id int64, layerName string, pool, limit int, now time.Time) (ok, full, layerFull bool, err error) {
	pe := newExpr()
	le := newExpr()
	te := newExpr()
	tok := token.New()
	layerCount := &types.Update{
		TableName:        &s.table,
		Key:              s.metaKey(skLanes + layerName),
		UpdateExpression: aws.String("ADD " + le.n(aRunning) + " " + le.v(num(1))),
	}
	if limit > 0 {
		layerCount.ConditionExpression = aws.String("attribute_not_exists(" + le.n(aRunning) + ") OR " +
			le.n(aRunning) + " < " + le.v(num(int64(limit))))
	}
	layerCount.ExpressionAttributeNames, layerCount.ExpressionAttributeValues = le.Names(), le.Values()
	reasons, err := s.transact(ctx, fmt.Sprintf("promote task %d", id), []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:        &s.table,
			Key:              s.metaKey(skPool),
			UpdateExpression: aws.String("ADD " + pe.n(aRunning) + " " + pe.v(num(1))),
			ConditionExpression: aws.String("attribute_not_exists(" + pe.n(aRunning) + ") OR " +
				pe.n(aRunning) + " < " + pe.v(num(int64(pool)))),
			ExpressionAttributeNames:  pe.Names(),
			ExpressionAttributeValues: pe.Values(),
		}},
		{Update: layerCount},
		{Update: &types.Update{
			TableName: &s.table,
			Key:       s.taskKey(id),
			UpdateExpression: aws.String("SET " + te.n(aStatus) + " = " + te.v(num(int64(task.Running))) +
				", " + te.n(aHB) + " = " + te.v(num(nanos(now))) + ", " + te.n(aWT) + " = " + te.v(str(tok))),
			ConditionExpression:                 aws.String(te.n(aStatus) + " = " + te.v(num(int64(task.Pending)))),
			ExpressionAttributeNames:            te.Names(),
			ExpressionAttributeValues:           te.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
	})
	if err != nil {
		return false, false, false, err
	}
	switch {
	case reasons == nil || len(reasons) == 3 && appliedBefore(reasons[2], tok):
		return true, false, false, nil
	case code(reasons[0]) == "ConditionalCheckFailed":
		return false, true, false, nil
	case code(reasons[1]) == "ConditionalCheckFailed":
		return false, false, true, nil
	}
	return false, false, false, nil
}

// Checkpoint implements task.Store: one conditional UpdateItem. When the
// condition fails, the item as it was tells a conflict (not RUNNING, or
// another cursor) from a checkpoint out of the lane (Invalid).
func (s *Tasks) Checkpoint(ctx context.Context, cp task.Checkpoint, now time.Time) (task.Task, error) {
	if cp.To < cp.From || cp.Tiles < 0 {
		return task.Task{}, apperr.New(apperr.Invalid, "checkpoint of task %d out of its lane", cp.ID)
	}
	if len(cp.Usage) > task.MaxCheckpointPages {
		return task.Task{}, apperr.New(apperr.Invalid, "checkpoint of task %d carries %d page deltas, more than %d", cp.ID, len(cp.Usage), task.MaxCheckpointPages)
	}
	if len(cp.Usage) > 0 {
		return s.checkpointWithUsage(ctx, cp, now)
	}
	e := newExpr()
	update, cond := checkpointExpr(e, cp, now)
	return s.updateTask(ctx, fmt.Sprintf("checkpoint task %d", cp.ID), cp.ID, &dynamodb.UpdateItemInput{
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, func(old taskItem) (task.Task, error) {
		if replayed(cp, old) {
			return old.task(), nil
		}
		if err := checkpointRefused(cp, old); err != nil {
			return task.Task{}, err
		}
		return task.Task{}, apperr.New(apperr.Conflict, "checkpoint of task %d: the task changed meanwhile", cp.ID)
	})
}

// replayed reports whether checkpoint cp was applied already to the task
// as it is (old): it carries a token, and the task's last token is it.
func replayed(cp task.Checkpoint, old taskItem) bool {
	return cp.Token != "" && old.WriteToken == cp.Token
}

// updateTask runs a conditional UpdateItem of task id (in's table, key and
// return values are set here) and returns the task after it. When the
// condition fails, refused answers from the item as it is (an error, or
// the task when the write turns out to have been applied already); a
// missing task is NotFound.
func (s *Tasks) updateTask(ctx context.Context, what string, id int64, in *dynamodb.UpdateItemInput, refused func(old taskItem) (task.Task, error)) (task.Task, error) {
	in.TableName, in.Key = &s.table, s.taskKey(id)
	in.ReturnValues = types.ReturnValueAllNew
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	s.wrote(opName(what), 1)
	out, err := s.client.UpdateItem(ctx, in, s.callOpts...)
	if err != nil {
		ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
		if !ok {
			return task.Task{}, s.fail(ctx, err, "%s", what)
		}
		if len(ccf.Item) == 0 {
			return task.Task{}, apperr.New(apperr.NotFound, "task %d not found", id)
		}
		old, derr := decodeTask(ccf.Item)
		if derr != nil {
			return task.Task{}, fmt.Errorf("%s: %w", what, derr)
		}
		return refused(old)
	}
	it, err := decodeTask(out.Attributes)
	if err != nil {
		return task.Task{}, fmt.Errorf("%s: %w", what, err)
	}
	return it.task(), nil
}

// Acquire implements task.Store: one conditional UpdateItem.
func (s *Tasks) Acquire(ctx context.Context, id int64, owner string, ttl time.Duration, now time.Time) (task.Task, error) {
	e := newExpr()
	return s.updateTask(ctx, fmt.Sprintf("acquire task %d", id), id, &dynamodb.UpdateItemInput{
		UpdateExpression: aws.String("SET " + e.n(aOwner) + " = " + e.v(str(owner)) + ", " + e.n(aHB) + " = " + e.v(num(nanos(now)))),
		ConditionExpression: aws.String(e.n(aStatus) + " = " + e.v(num(int64(task.Running))) +
			" AND (attribute_not_exists(" + e.n(aOwner) + ") OR " + e.n(aOwner) + " = " + e.v(str(owner)) +
			" OR " + e.n(aHB) + " <= " + e.v(num(nanos(now.Add(-ttl)))) + ")"),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, func(old taskItem) (task.Task, error) {
		if st := task.Status(old.Status); st != task.Running {
			return task.Task{}, apperr.New(apperr.Conflict, "task %d is %s, not RUNNING", id, st)
		}
		return task.Task{}, apperr.New(apperr.Conflict, "task %d: its lane is leased by a live worker", id)
	})
}

// checkpointExpr returns the update and condition expressions of a
// checkpoint: cursor, counts and heartbeat, and the lease (kept, given up,
// or revoked by a checkpoint without owner).
func checkpointExpr(e *expr, cp task.Checkpoint, now time.Time) (update, cond string) {
	update = "SET " + e.n(aCursor) + " = " + e.v(num(cp.To)) +
		", " + e.n(aDone) + " = " + e.n(aDone) + " + " + e.v(num(cp.Tiles)) +
		", " + e.n(aLeft) + " = " + e.n(aLeft) + " - " + e.v(num(cp.Tiles)) +
		", " + e.n(aHB) + " = " + e.v(num(nanos(now)))
	if cp.Token != "" {
		update += ", " + e.n(aWT) + " = " + e.v(str(cp.Token))
	}
	if cp.After != "" {
		update += ", " + e.n(aAfter) + " = " + e.v(str(cp.After))
	}
	if cp.Owner == "" || cp.Release {
		update += " REMOVE " + e.n(aOwner)
	}
	cond = e.n(aStatus) + " = " + e.v(num(int64(task.Running))) +
		" AND " + e.n(aCursor) + " = " + e.v(num(cp.From)) +
		" AND " + e.n(aEnd) + " >= " + e.v(num(cp.To)) +
		" AND " + e.n(aLeft) + " >= " + e.v(num(cp.Tiles))
	if cp.Owner != "" {
		cond += " AND " + e.n(aOwner) + " = " + e.v(str(cp.Owner))
	}
	return update, cond
}

// checkpointRefused explains why a checkpoint's condition failed on old.
func checkpointRefused(cp task.Checkpoint, old taskItem) error {
	switch {
	case task.Status(old.Status) != task.Running || old.Cursor != cp.From:
		return apperr.New(apperr.Conflict, "task %d is %s at metatile %d, not RUNNING at %d",
			cp.ID, task.Status(old.Status), old.Cursor, cp.From)
	case cp.Owner != "" && old.Owner != cp.Owner:
		return apperr.New(apperr.Conflict, "task %d: the lease of its lane is no longer held by this worker", cp.ID)
	case old.End < cp.To || old.Left < cp.Tiles:
		return apperr.New(apperr.Invalid, "checkpoint of task %d out of its lane", cp.ID)
	}
	return nil
}

// checkpointUpdate returns the conditional update of a checkpoint.
func (s *Tasks) checkpointUpdate(cp task.Checkpoint, now time.Time) *types.Update {
	e := newExpr()
	update, cond := checkpointExpr(e, cp, now)
	return &types.Update{
		TableName:                           &s.table,
		Key:                                 s.taskKey(cp.ID),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            e.Names(),
		ExpressionAttributeValues:           e.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// checkpointWithUsage is a checkpoint carrying usage deltas: one
// TransactWriteItems of the conditional task update, the page changes and
// the layer totals (at most 1 + MaxCheckpointPages + 1 items for one
// layer). A consistent read of the task before it answers Conflict and
// Invalid without writing and gives the task to return (a transaction
// returns no values); the transaction's condition still decides.
func (s *Tasks) checkpointWithUsage(ctx context.Context, cp task.Checkpoint, now time.Time) (task.Task, error) {
	it, err := s.getTask(ctx, cp.ID)
	if err != nil {
		return task.Task{}, err
	}
	if replayed(cp, it) {
		return it.task(), nil
	}
	if err := checkpointRefused(cp, it); err != nil {
		return task.Task{}, err
	}
	items := append([]types.TransactWriteItem{{Update: s.checkpointUpdate(cp, now)}}, s.usage().usageItems(cp.Usage, now)...)
	reasons, err := s.transact(ctx, fmt.Sprintf("checkpoint task %d", cp.ID), items)
	if err != nil {
		return task.Task{}, err
	}
	if reasons != nil {
		if len(reasons[0].Item) == 0 {
			if code(reasons[0]) == "ConditionalCheckFailed" {
				return task.Task{}, apperr.New(apperr.NotFound, "task %d not found", cp.ID)
			}
			return task.Task{}, fmt.Errorf("checkpoint task %d: refused (%s)", cp.ID, reasonCodes(reasons))
		}
		old, derr := decodeTask(reasons[0].Item)
		if derr != nil {
			return task.Task{}, fmt.Errorf("checkpoint task %d: %w", cp.ID, derr)
		}
		if replayed(cp, old) {
			// The transaction was applied; the SDK sent it again after
			// its answer was lost.
			return old.task(), nil
		}
		if err := checkpointRefused(cp, old); err != nil {
			return task.Task{}, err
		}
		return task.Task{}, apperr.New(apperr.Conflict, "checkpoint of task %d: the task changed meanwhile", cp.ID)
	}
	it.Cursor, it.Done, it.Left, it.Heartbeat = cp.To, it.Done+cp.Tiles, it.Left-cp.Tiles, nanos(now)
	if cp.After != "" {
		it.After = cp.After
	}
	if cp.Token != "" {
		it.WriteToken = cp.Token
	}
	if cp.Owner == "" || cp.Release {
		it.Owner = ""
	}
	return it.task(), nil
}

// Finish implements task.Store. It reads the task (to answer NotFound or
// Conflict without spending writes, and to return the task), then changes
// the status, frees the thread and counts the job's open tasks down in one
// transaction conditional on the status (and on the cursor for DONE).
func (s *Tasks) Finish(ctx context.Context, id int64, status task.Status, now time.Time) (task.Task, error) {
	what := fmt.Sprintf("finish task %d", id)
	it, err := s.getTask(ctx, id)
	if err != nil {
		return task.Task{}, err
	}
	t := it.task()
	if t.Status != task.Running {
		return task.Task{}, apperr.New(apperr.Conflict, "task %d is %s, not RUNNING", id, t.Status)
	}
	switch status {
	case task.Done:
		if t.Cursor != t.End {
			return task.Task{}, apperr.New(apperr.Conflict, "task %d is at metatile %d of %d", id, t.Cursor, t.End)
		}
	case task.Aborted:
	default:
		return task.Task{}, apperr.New(apperr.Invalid, "cannot finish task %d as %s", id, status)
	}
	if err := s.finish(ctx, what, t, status, false, now); err != nil {
		return task.Task{}, err
	}
	t.Status, t.Finished = status, now
	return t, nil
}

// Kill implements task.Store, like Finish.
func (s *Tasks) Kill(ctx context.Context, id int64, expect task.Status, now time.Time) (task.Task, error) {
	what := fmt.Sprintf("kill task %d", id)
	it, err := s.getTask(ctx, id)
	if err != nil {
		return task.Task{}, err
	}
	before := it.task()
	if !expect.Active() || before.Status != expect {
		return task.Task{}, apperr.New(apperr.Conflict, "task %d is %s, not %s", id, before.Status, expect)
	}
	if err := s.finish(ctx, what, before, task.Aborted, true, now); err != nil {
		return task.Task{}, err
	}
	return before, nil
}

// finish moves t from its status (PENDING or RUNNING, as read) to status.
func (s *Tasks) finish(ctx context.Context, what string, t task.Task, status task.Status, killed bool, now time.Time) error {
	te := newExpr()
	tok := token.New()
	update := "SET " + te.n(aStatus) + " = " + te.v(num(int64(status))) +
		", " + te.n(aFinished) + " = " + te.v(num(nanos(now))) +
		", " + te.n(attrExpires) + " = " + te.v(num(s.expires(now))) +
		", " + te.n(aWT) + " = " + te.v(str(tok)) +
		", " + s.finishedIndexSet(te, nanos(now))
	if killed {
		update += ", " + te.n(aKilled) + " = " + te.v(&types.AttributeValueMemberBOOL{Value: true})
	}
	cond := te.n(aStatus) + " = " + te.v(num(int64(t.Status)))
	if status == task.Done {
		cond += " AND " + te.n(aCursor) + " = " + te.n(aEnd)
	}
	items := []types.TransactWriteItem{{Update: &types.Update{
		TableName:                           &s.table,
		Key:                                 s.taskKey(t.ID),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            te.Names(),
		ExpressionAttributeValues:           te.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}}
	je := newExpr()
	items = append(items, types.TransactWriteItem{Update: &types.Update{
		TableName:                 &s.table,
		Key:                       s.jobKey(t.JobID),
		UpdateExpression:          aws.String("ADD " + je.n(aOpen) + " " + je.v(num(-1))),
		ExpressionAttributeNames:  je.Names(),
		ExpressionAttributeValues: je.Values(),
	}})
	if t.Status == task.Running {
		for _, sk := range []string{skPool, skLanes + t.Layer} {
			pe := newExpr()
			items = append(items, types.TransactWriteItem{Update: &types.Update{
				TableName:                 &s.table,
				Key:                       s.metaKey(sk),
				UpdateExpression:          aws.String("ADD " + pe.n(aRunning) + " " + pe.v(num(-1))),
				ExpressionAttributeNames:  pe.Names(),
				ExpressionAttributeValues: pe.Values(),
			}})
		}
	}
	reasons, err := s.transact(ctx, what, items)
	if err != nil {
		return err
	}
	if reasons != nil && !appliedBefore(reasons[0], tok) {
		// The task changed since it was read.
		if len(reasons[0].Item) == 0 {
			return apperr.New(apperr.NotFound, "task %d not found", t.ID)
		}
		if old, err := decodeTask(reasons[0].Item); err == nil {
			return apperr.New(apperr.Conflict, "task %d is %s at metatile %d, no longer %s",
				t.ID, task.Status(old.Status), old.Cursor, t.Status)
		}
		return apperr.New(apperr.Conflict, "task %d is no longer %s", t.ID, t.Status)
	}
	s.expireJob(ctx, t.JobID, now)
	return nil
}

// expireJob gives a job whose tasks are all finished its TTL, best-effort:
// the finish that counted the job's last open task down sees open = 0 here
// (each finisher reads after its own transaction).
func (s *Tasks) expireJob(ctx context.Context, jobID int64, now time.Time) {
	e := newExpr()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                &s.table,
		Key:                      s.jobKey(jobID),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String(e.n(aOpen) + ", " + e.n(attrExpires)),
		ExpressionAttributeNames: e.Names(),
	}, s.callOpts...)
	if err != nil {
		return
	}
	if open, ok := numAttr(out.Item, aOpen); !ok || open > 0 {
		return
	}
	if _, ok := out.Item[attrExpires]; ok {
		return
	}
	e = newExpr()
	s.wrote("expireJob", 1)
	s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       s.jobKey(jobID),
		UpdateExpression:          aws.String("SET " + e.n(attrExpires) + " = " + e.v(num(s.expires(now)))),
		ConditionExpression:       aws.String(e.n(aOpen) + " <= " + e.v(num(0)) + " AND attribute_not_exists(" + e.n(attrExpires) + ")"),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
}

// appliedBefore reports whether a transaction cancelled on the condition
// of a task item (r, with the item as it is) was applied earlier with
// token tok: the retry of a transaction whose answer was lost. A write of
// a task item that the store makes on its own (a promotion, a finish)
// carries a new token.New: the SDK sends a write again when its answer is
// lost, and the retry, failing its condition, finds the token in the item.
func appliedBefore(r types.CancellationReason, tok string) bool {
	if code(r) != "ConditionalCheckFailed" || len(r.Item) == 0 {
		return false
	}
	it, err := decodeTask(r.Item)
	return err == nil && it.WriteToken == tok
}

// usage is the usage's items over the same table: a checkpoint carries
// the usage of the tiles it counts in its own transaction.
func (s *Tasks) usage() *Usage { return &Usage{s.store} }
