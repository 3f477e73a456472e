// task.Store, first half: creating requests and reading tasks and jobs
// (Create, Job, Get, GetMany, List, AddFailures). The run of a task
// (Promote, Acquire, Checkpoint, Finish, Kill) is in lifecycle.go.

package dynamo

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"tilecache/internal/apperr"
	"tilecache/internal/task"
)

// Tasks is the task store (task.Store) over a Table: tasks, jobs, the id
// sequence and the thread pool. It is safe for concurrent use, also by
// several processes sharing the table.
type Tasks struct{ *store }

var _ task.Store = (*Tasks)(nil)

// Create implements task.Store; see the package comment. It issues 1 + 1 +
// len(lanes) writes (the sequence, then the job and its tasks in one
// transaction), one more for a staged request (the flip).
func (s *Tasks) Create(ctx context.Context, job task.Job, lanes []task.Lane, now time.Time) (task.Job, []task.Task, error) {
	const what = "create tasks"
	if len(lanes) == 0 {
		return task.Job{}, nil, apperr.New(apperr.Invalid, "a job needs at least one lane")
	}
	// Everything that can fail without storage fails before ids are taken.
	if _, err := json.Marshal(job); err != nil {
		return task.Job{}, nil, fmt.Errorf("%s: encode job: %w", what, err)
	}
	if err := ctx.Err(); err != nil {
		return task.Job{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	n := int64(len(lanes))
	e := newExpr()
	s.wrote("Create", 1)
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       s.metaKey(skSeq),
		UpdateExpression:          aws.String("ADD " + e.n(aSeq) + " " + e.v(num(n))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ReturnValues:              types.ReturnValueUpdatedNew,
	}, s.callOpts...)
	if err != nil {
		return task.Job{}, nil, s.fail(ctx, err, "%s: take %d ids", what, n)
	}
	last, ok := numAttr(out.Attributes, aSeq)
	if !ok {
		return task.Job{}, nil, fmt.Errorf("%s: the sequence update returned no value", what)
	}
	job.ID, job.Lanes, job.Created = last-n+1, len(lanes), now
	data, err := json.Marshal(job)
	if err != nil {
		return task.Job{}, nil, fmt.Errorf("%s: encode job: %w", what, err)
	}
	staged := int64(0)
	if len(lanes) > MaxTransactLanes {
		staged = s.clock().Unix()
	}
	jobItem := map[string]types.AttributeValue{
		aData: str(string(data)),
		aOpen: num(n),
	}
	for k, v := range s.jobKey(job.ID) {
		jobItem[k] = v
	}
	if staged != 0 {
		jobItem[aState] = str(jobStaged)
	}
	tasks := make([]task.Task, len(lanes))
	items := []map[string]types.AttributeValue{jobItem}
	for i, l := range lanes {
		t := task.Task{
			ID: job.ID + int64(i), JobID: job.ID, Layer: job.Layer, Type: job.Type,
			Status: task.Pending, Start: l.Start, End: l.End, Cursor: l.Start,
			Total: l.Tiles, Created: now, Heartbeat: now,
		}
		tasks[i] = t
		it, err := s.newTaskItem(t, staged)
		if err != nil {
			return task.Job{}, nil, fmt.Errorf("%s: %w", what, err)
		}
		items = append(items, it)
	}
	if staged == 0 {
		tx := make([]types.TransactWriteItem, len(items))
		for i, it := range items {
			tx[i] = types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: it}}
		}
		reasons, err := s.transact(ctx, what, tx)
		if err == nil && reasons != nil {
			err = apperr.New(apperr.Conflict, "%s: the write of job %d was refused: %s", what, job.ID, reasonCodes(reasons))
		}
		if err != nil {
			return task.Job{}, nil, err
		}
		return job, tasks, nil
	}
	if err := s.createStaged(ctx, job.ID, items); err != nil {
		return task.Job{}, nil, err
	}
	return job, tasks, nil
}

func (s *Tasks) newTaskItem(t task.Task, staged int64) (map[string]types.AttributeValue, error) {
	it := taskItem{
		ID: t.ID, JobID: t.JobID, Layer: t.Layer, Type: int(t.Type), Status: int(t.Status),
		Start: t.Start, End: t.End, Cursor: t.Cursor, Total: t.Total, Done: t.Done, Left: t.Total - t.Done,
		Heartbeat: nanos(t.Heartbeat), Created: nanos(t.Created), Staged: staged,
		GSIPK: s.activePK(), GSISK: t.ID,
	}
	item, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, fmt.Errorf("encode task %d: %w", t.ID, err)
	}
	for k, v := range s.taskKey(t.ID) {
		item[k] = v
	}
	return item, nil
}

// createStaged writes a large request: items (the job first) by batches,
// then the flip of the job to committed. See the package comment.
func (s *Tasks) createStaged(ctx context.Context, jobID int64, items []map[string]types.AttributeValue) error {
	what := fmt.Sprintf("create job %d", jobID)
	reqs := make([]types.WriteRequest, len(items))
	for i, it := range items {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	err := s.batchWrite(ctx, what, reqs)
	if err == nil && s.testBeforeFlip != nil {
		err = s.testBeforeFlip()
	}
	if err == nil {
		e := newExpr()
		s.wrote("createStaged", 1)
		_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &s.table,
			Key:                       s.jobKey(jobID),
			UpdateExpression:          aws.String("SET " + e.n(aState) + " = " + e.v(str(jobCommitted))),
			ConditionExpression:       aws.String(e.n(aState) + " = " + e.v(str(jobStaged))),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
		}, s.callOpts...)
		if err == nil {
			return nil
		}
		err = s.fail(ctx, err, "%s: commit", what)
	}
	if s.testNoCleanup {
		return err
	}
	// Clean up with a context of our own: ctx may be what failed.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	ids := make([]int64, len(items)-1)
	for i := range ids {
		ids[i] = jobID + int64(i)
	}
	if committed, cerr := s.abandon(cctx, jobID, ids); cerr == nil && committed {
		// The flip did happen; only its answer was lost.
		return nil
	}
	return err
}

// abandon makes a staged job impossible to commit and deletes the given
// tasks of it, unless the job is committed already (then it reports true
// and changes nothing). The job item stays, abandoned, until its TTL.
func (s *Tasks) abandon(ctx context.Context, jobID int64, taskIDs []int64) (committed bool, err error) {
	what := fmt.Sprintf("abandon staged job %d", jobID)
	e := newExpr()
	s.wrote("abandon", 1)
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table,
		Key:       s.jobKey(jobID),
		UpdateExpression: aws.String("SET " + e.n(aState) + " = " + e.v(str(jobAbandoned)) +
			", " + e.n(attrExpires) + " = " + e.v(num(s.expires(s.clock())))),
		ConditionExpression: aws.String("attribute_not_exists(" + e.n(attrPK) + ") OR " +
			e.n(aState) + " IN (" + e.v(str(jobStaged)) + ", " + e.v(str(jobAbandoned)) + ")"),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
	if err != nil {
		if isConditionFailed(err) {
			return true, nil
		}
		return false, s.fail(ctx, err, "%s", what)
	}
	reqs := make([]types.WriteRequest, len(taskIDs))
	for i, id := range taskIDs {
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: s.taskKey(id)}}
	}
	return false, s.batchWrite(ctx, what, reqs)
}

// visibility answers, for one List, Promote or Get, whether the jobs of
// staged tasks are committed, reading each job at most once.
type visibility struct {
	s    *Tasks
	jobs map[int64]string // job id -> state ("" when the job item is missing)
}

func (s *Tasks) newVisibility() *visibility { return &visibility{s: s, jobs: map[int64]string{}} }

// visible reports whether the task exists for readers: a staged task only
// once its job is committed.
func (v *visibility) visible(ctx context.Context, it taskItem) (bool, error) {
	if it.Staged == 0 {
		return true, nil
	}
	if v.s.committed.has(it.JobID) {
		return true, nil
	}
	state, ok := v.jobs[it.JobID]
	if !ok {
		e := newExpr()
		out, err := v.s.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:                &v.s.table,
			Key:                      v.s.jobKey(it.JobID),
			ConsistentRead:           aws.Bool(true),
			ProjectionExpression:     aws.String(e.n(aState) + ", " + e.n(attrPK)),
			ExpressionAttributeNames: e.Names(),
		}, v.s.callOpts...)
		if err != nil {
			return false, v.s.fail(ctx, err, "read job %d", it.JobID)
		}
		if len(out.Item) > 0 {
			state, _ = strAttr(out.Item, aState)
			if state == "" {
				state = jobCommitted
			}
		}
		v.jobs[it.JobID] = state
		if state == jobCommitted {
			v.s.committed.add(it.JobID)
		}
	}
	return state == jobCommitted, nil
}

// getTask reads a task item with a consistent read; NotFound when missing
// or staged and not committed.
func (s *Tasks) getTask(ctx context.Context, id int64) (taskItem, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            s.taskKey(id),
		ConsistentRead: aws.Bool(true),
	}, s.callOpts...)
	if err != nil {
		return taskItem{}, s.fail(ctx, err, "read task %d", id)
	}
	if len(out.Item) == 0 {
		return taskItem{}, apperr.New(apperr.NotFound, "task %d not found", id)
	}
	it, err := decodeTask(out.Item)
	if err != nil {
		return taskItem{}, fmt.Errorf("read task %d: %w", id, err)
	}
	if ok, err := s.newVisibility().visible(ctx, it); err != nil {
		return taskItem{}, err
	} else if !ok {
		return taskItem{}, apperr.New(apperr.NotFound, "task %d not found", id)
	}
	return it, nil
}

// Job implements task.Store.
func (s *Tasks) Job(ctx context.Context, id int64) (task.Job, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            s.jobKey(id),
		ConsistentRead: aws.Bool(true),
	}, s.callOpts...)
	if err != nil {
		return task.Job{}, s.fail(ctx, err, "read job %d", id)
	}
	data, ok := strAttr(out.Item, aData)
	if state, _ := strAttr(out.Item, aState); !ok || (state != "" && state != jobCommitted) {
		// Missing, only a failure count, or a staged request not committed.
		return task.Job{}, apperr.New(apperr.NotFound, "job %d not found", id)
	}
	var job task.Job
	if err := json.Unmarshal([]byte(data), &job); err != nil {
		return task.Job{}, fmt.Errorf("read job %d: decode: %w", id, err)
	}
	return job, nil
}

// Get implements task.Store.
func (s *Tasks) Get(ctx context.Context, id int64) (task.Task, error) {
	it, err := s.getTask(ctx, id)
	if err != nil {
		return task.Task{}, err
	}
	return it.task(), nil
}

// batchGetMax is the most keys one BatchGetItem request reads.
const batchGetMax = 100

// GetMany reads the tasks ids with strongly consistent reads, 100 to a
// BatchGetItem request, and returns those that exist by id (missing and
// not yet visible tasks are left out). Working lanes read their tasks this
// way to notice a kill: one request a second for all of a process's lanes
// instead of one each.
func (s *Tasks) GetMany(ctx context.Context, ids []int64) (map[int64]task.Task, error) {
	out := make(map[int64]task.Task, len(ids))
	seen := make(map[int64]bool, len(ids))
	var keys []map[string]types.AttributeValue
	for _, id := range ids {
		if !seen[id] { // BatchGetItem refuses a key given twice
			seen[id] = true
			keys = append(keys, s.taskKey(id))
		}
	}
	vis := s.newVisibility()
	for len(keys) > 0 {
		batch := keys[:min(len(keys), batchGetMax)]
		keys = keys[len(batch):]
		// Keys DynamoDB leaves unprocessed (throttling) are asked again
		// with backoff, as batchWrite resubmits writes.
		for attempt := 0; len(batch) > 0; attempt++ {
			if attempt == batchAttempts {
				return nil, apperr.New(apperr.Unavailable, "read %d tasks: DynamoDB left %d keys unprocessed", len(ids), len(batch))
			}
			if attempt > 0 {
				if err := backoff(ctx, attempt); err != nil {
					return nil, fmt.Errorf("read %d tasks: %w", len(ids), err)
				}
			}
			res, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
				RequestItems: map[string]types.KeysAndAttributes{s.table: {Keys: batch, ConsistentRead: aws.Bool(true)}},
			}, s.callOpts...)
			if err != nil {
				return nil, s.fail(ctx, err, "read %d tasks", len(ids))
			}
			for _, item := range res.Responses[s.table] {
				it, err := decodeTask(item)
				if err != nil {
					return nil, fmt.Errorf("read %d tasks: %w", len(ids), err)
				}
				if ok, err := vis.visible(ctx, it); err != nil {
					return nil, err
				} else if ok {
					out[it.ID] = it.task()
				}
			}
			batch = res.UnprocessedKeys[s.table].Keys
		}
	}
	return out, nil
}

// List implements task.Store. It reads the index partition of active
// tasks (in id order, with eventually consistent reads), then the tasks
// finished since finishedSince from the finished partition (finished.go).
// Tasks finished by an older version are still in the active partition:
// it removes them from the index, at most maxPrune per call (pruneWorkers
// at a time), once finished before both finishedSince and now − the
// finished-keep duration.
func (s *Tasks) List(ctx context.Context, finishedSince time.Time) ([]task.Task, error) {
	const what = "list tasks"
	since := nanos(finishedSince)
	pruneBefore := min(since, s.clock().Add(-s.finishedKeep).UnixNano())
	vis := s.newVisibility()
	var out []task.Task
	var prune []taskItem
	stale := map[int64][]int64{} // staged, uncommitted jobs past StageTimeout -> their task ids
	e := newExpr()
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 &s.table,
		IndexName:                 aws.String(indexActive),
		ProjectionExpression:      aws.String(listedProjection(e)),
		KeyConditionExpression:    aws.String(e.n(attrGSIPK) + " = " + e.v(str(s.activePK()))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ScanIndexForward:          aws.Bool(true),
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
			ok, err := vis.visible(ctx, it)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			if !ok {
				if s.clock().Sub(time.Unix(it.Staged, 0)) > s.stageTimeout {
					stale[it.JobID] = append(stale[it.JobID], it.ID)
				}
				continue
			}
			switch {
			case task.Status(it.Status).Active() || it.Finished >= since:
				out = append(out, it.task())
			case it.Finished < pruneBefore && len(prune) < maxPrune:
				prune = append(prune, it)
			}
		}
	}
	// Housekeeping is best-effort: the listing is right without it.
	var g errgroup.Group
	g.SetLimit(pruneWorkers)
	for _, it := range prune {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			e := newExpr()
			s.wrote("List", 1)
			s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 &s.table,
				Key:                       s.taskKey(it.ID),
				UpdateExpression:          aws.String("REMOVE " + e.n(attrGSIPK)),
				ConditionExpression:       aws.String("attribute_exists(" + e.n(aFinished) + ") AND " + e.n(attrGSIPK) + " = " + e.v(str(s.activePK()))),
				ExpressionAttributeNames:  e.Names(),
				ExpressionAttributeValues: e.Values(),
			}, s.callOpts...)
			return nil
		})
	}
	g.Wait()
	for jobID, ids := range stale {
		if ctx.Err() != nil {
			break
		}
		s.abandon(ctx, jobID, ids)
	}
	// Finished tasks left the active partition when they finished (all
	// but those finished before it did so): the finished partition holds
	// them by finish time. It is read after the active one, so a task
	// finishing in between is listed, as finished.
	fin, err := s.listFinished(ctx, since, vis)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out = mergeFinished(out, fin)
	slices.SortFunc(out, func(a, b task.Task) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// A status call removes from the active index up to maxPrune tasks
// finished long enough ago, pruneWorkers at a time: after a job of 1,024
// lanes ends, 4 status calls instead of 41 read them all again, each
// adding about maxPrune/pruneWorkers request round trips.
const (
	maxPrune     = 256
	pruneWorkers = 16
)

// KilledAt implements task.Store: one conditional UpdateItem raising done
// (never above the lane's total) of a task ABORTED by a kill.
func (s *Tasks) KilledAt(ctx context.Context, id int64, done int64) error {
	it, err := s.getTask(ctx, id)
	if err != nil {
		return err
	}
	if it.Status != int(task.Aborted) || !it.Killed {
		return apperr.New(apperr.Conflict, "task %d is %s, not killed", id, task.Status(it.Status))
	}
	if done = min(done, it.Total); done <= it.Done {
		return nil
	}
	e := newExpr()
	s.wrote("KilledAt", 1)
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        &s.table,
		Key:              s.taskKey(id),
		UpdateExpression: aws.String("SET " + e.n(aDone) + " = " + e.v(num(done))),
		ConditionExpression: aws.String(e.n(aStatus) + " = " + e.v(num(int64(task.Aborted))) + " AND " +
			e.n(aKilled) + " = " + e.v(&types.AttributeValueMemberBOOL{Value: true}) + " AND " + e.n(aDone) + " < " + e.v(num(done))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
	if isConditionFailed(err) {
		return nil // a larger count was recorded meanwhile
	}
	if err != nil {
		return s.fail(ctx, err, "record the progress of killed task %d", id)
	}
	return nil
}

// AddFailures implements task.Store. The count lives on the job item; a job
// id without a job gets an item holding only the count (Job still reports
// it missing).
func (s *Tasks) AddFailures(ctx context.Context, jobID int64, n int64) (int64, error) {
	e := newExpr()
	s.wrote("AddFailures", 1)
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       s.jobKey(jobID),
		UpdateExpression:          aws.String("ADD " + e.n(aFailures) + " " + e.v(num(n))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ReturnValues:              types.ReturnValueUpdatedNew,
	}, s.callOpts...)
	if err != nil {
		return 0, s.fail(ctx, err, "count tile failures of job %d", jobID)
	}
	total, ok := numAttr(out.Attributes, aFailures)
	if !ok {
		return 0, fmt.Errorf("count tile failures of job %d: the update returned no value", jobID)
	}
	return total, nil
}
