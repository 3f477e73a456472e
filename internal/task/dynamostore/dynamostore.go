// Package dynamostore is the DynamoDB task store: tasks, jobs, the id
// sequence, the thread pool, the disk-quota configuration and the disk
// usage (tile pages and layer totals) in one table.
//
// # Table
//
// One table (see CreateTable): partition key pk (S), sort key sk (S); a
// global secondary index "active" on gsi1pk (S) and gsi1sk (N) projecting
// ALL attributes; TTL on expires (epoch seconds); on-demand billing. Items:
//
//	pk=meta       sk=seq    n         the id sequence (last id handed out)
//	pk=meta       sk=pool   running   the number of RUNNING tasks
//	pk=meta       sk=quota  data, version   the disk-quota configuration
//	pk=job#<id>   sk=job    data (the task.Job as JSON), open (tasks not yet
//	                        finished), failures, [state], [expires]
//	pk=task#<id>  sk=task   one attribute per task field, plus left (Total −
//	                        Done), gsi1pk=active, gsi1sk=<id>, [finished],
//	                        [expires], [staged]
//	pk=usage      sk=state, sk=layer#<name>     disk usage bookkeeping and
//	                        layer totals (see usage.go)
//	pk=pages#<layer>  sk=<page id>   one tile page of the layer
//
// With WithNamespace, every pk and gsi1pk value is prefixed by the namespace.
//
// # Index
//
// A task is in the sparse index "active" (gsi1pk = "active", gsi1sk = its id)
// from its creation until it has been finished for a while: List and Promote
// only ever Query that one index partition, so no operation scans the table,
// and ids ascending are both List's order and "oldest first" for Promote.
// Finished tasks keep their index entry, with their finish time, so List can
// return recently finished ones; List removes the entry (REMOVE gsi1pk,
// conditional, best-effort) from tasks that finished more than
// DefaultFinishedKeep (one minute; see WithFinishedKeep) ago and before the
// finishedSince it was asked for, so the index holds the active tasks plus
// about a minute of history. All entries share one index partition; every
// write to an indexed task item (checkpoints included) is also a write to
// it, which bounds the table at roughly a thousand such writes per second:
// far above what a pool of lanes checkpointing every few seconds issues.
// Finished task items, and a job item once all its tasks are finished, get
// expires = finish time + 7 days (never less than the store's clock + 7 days,
// so that tests running on fixed past dates do not see their items expire).
//
// The index is eventually consistent on AWS: a task created or changed a few
// milliseconds ago may be missing from, or stale in, List and Promote. Every
// state change is a conditional write on the task item itself, so staleness
// never breaks an invariant; at worst a fresh task is promoted by the next
// Dispatch or sweep instead of the current one.
//
// # Create
//
// Ids come from the sequence item in one UpdateItem (ADD n, UPDATED_NEW). A
// request of up to 99 lanes is then written in one TransactWriteItems (the
// job and its tasks, at most 100 items): all of it is visible or none. A
// larger request (seed.MaxThreads is 128) is staged: the job is written with
// state "staged" and its tasks with a staged attribute, by BatchWriteItem,
// and then one conditional UpdateItem flips the job's state to "committed".
// Readers treat a staged task as nonexistent until its job is committed (one
// extra GetItem of the job per List or Promote call per large job), so the
// single-item flip makes the whole request visible at once. When a write
// fails, Create marks the job "abandoned" (which makes a late flip
// impossible) and deletes what it wrote, best-effort; a List that meets
// staged tasks of a job left uncommitted for DefaultStageTimeout (a crash in
// the middle of a Create) does the same. Ids taken by a Create that failed in
// storage stay unused; a request refused by validation takes none.
//
// # Pool
//
// The pool item counts RUNNING tasks. Promote increments it under the
// condition running < pool in the same transaction that moves a task from
// PENDING to RUNNING (condition status = PENDING); Finish and Kill of a
// RUNNING task decrement it in the transaction that changes the status. The
// count therefore never drifts and never exceeds the pool, however many
// processes promote at once.
//
// # Errors
//
// Failed conditions are apperr.Conflict (a checkpoint out of its lane is
// apperr.Invalid, told apart with ReturnValuesOnConditionCheckFailure), a
// missing task or job is apperr.NotFound, a missing table, throttling and
// network failures are apperr.Unavailable. A cancelled context gives an
// error satisfying errors.Is(err, context.Canceled).
package dynamostore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/apperr"
	"tilecache/internal/task"
)

// Attribute names and fixed key values.
const (
	attrPK       = "pk"
	attrSK       = "sk"
	attrGSIPK    = "gsi1pk"
	attrGSISK    = "gsi1sk"
	attrExpires  = "expires"
	indexActive  = "active"
	skSeq        = "seq"
	skPool       = "pool"
	skLanes      = "lanes#" // + layer name: the layer's RUNNING tasks
	skClaim      = "claim"
	skQuota      = "quota"
	skJob        = "job"
	skTask       = "task"
	jobCommitted = "committed"
	jobStaged    = "staged"
	jobAbandoned = "abandoned"
)

// Limits and defaults.
const (
	// DefaultFinishedKeep is how long a finished task stays in the index.
	DefaultFinishedKeep = time.Minute
	// DefaultStageTimeout is how long a staged (large) Create may take
	// before a List considers it crashed and removes its items.
	DefaultStageTimeout = 10 * time.Minute
	// Retention is the TTL of finished task and job items.
	Retention = 7 * 24 * time.Hour
	// MaxTransactLanes is the largest request written in one transaction
	// (its job and tasks make at most 100 items, DynamoDB's limit).
	MaxTransactLanes = 99
)

// Store is the DynamoDB task store. It is safe for concurrent use, also by
// several processes sharing the table.
type Store struct {
	client       *dynamodb.Client
	table        string
	ns           string
	finishedKeep time.Duration
	stageTimeout time.Duration
	clock        func() time.Time
	callOpts     []func(*dynamodb.Options)
	writes       atomic.Int64
	byOp         sync.Map // op → *atomic.Int64

	// testBeforeFlip, when set, runs before a staged Create's flip; an
	// error fails the Create there. testNoCleanup skips Create's clean-up.
	testBeforeFlip func() error
	testNoCleanup  bool
}

var _ task.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithNamespace prefixes every partition key (pk and gsi1pk) with ns, so that
// several independent stores share one table: tests use it to get a fresh,
// empty store without creating a table, and deployments may use it to keep
// two environments in one table. Give each store a distinct ns that is not a
// prefix of another's followed by "meta", "job#", "task#", "active", "usage"
// or "pages#"; a trailing separator such as "t1/" guarantees that.
func WithNamespace(ns string) Option { return func(s *Store) { s.ns = ns } }

// WithFinishedKeep sets how long finished tasks stay in the index (default
// one minute). List(finishedSince) misses tasks that finished before both
// finishedSince and now − keep, so keep must exceed the longest look-back
// callers use (the engine's retention, 3 s by default).
func WithFinishedKeep(d time.Duration) Option { return func(s *Store) { s.finishedKeep = d } }

// New returns a store on table, which must exist (see CreateTable).
//
// When the client talks to an endpoint other than AWS's own (DynamoDB Local,
// say: AWS_ENDPOINT_URL_DYNAMODB), the store disables the validation of
// response CRC32 checksums on its calls, which such servers get wrong on
// error responses. It also retries TransactionConflictException, which the
// SDK's default retryer does not.
func New(client *dynamodb.Client, table string, opts ...Option) *Store {
	s := &Store{
		client:       client,
		table:        table,
		finishedKeep: DefaultFinishedKeep,
		stageTimeout: DefaultStageTimeout,
		clock:        time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	if !awsEndpoint(client.Options().BaseEndpoint) {
		s.callOpts = append(s.callOpts, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	}
	s.callOpts = append(s.callOpts, func(o *dynamodb.Options) {
		o.Retryer = retry.AddWithErrorCodes(o.Retryer, (&types.TransactionConflictException{}).ErrorCode())
	})
	return s
}

// awsEndpoint reports whether the client talks to AWS itself: no base
// endpoint, or one on an amazonaws host.
func awsEndpoint(base *string) bool {
	if base == nil || *base == "" {
		return true
	}
	u, err := url.Parse(*base)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return strings.HasSuffix(h, ".amazonaws.com") || strings.HasSuffix(h, ".amazonaws.com.cn")
}

// Writes returns the number of write request units issued so far: one per
// UpdateItem, PutItem or DeleteItem, one per item of a TransactWriteItems or
// BatchWriteItem (retries included, the SDK's own retries not).
func (s *Store) Writes() int64 { return s.writes.Load() }

// WritesByOp returns Writes by operation ("checkpoint task", "Claim",
// "finish task", …), for benchmarks to show where writes go.
func (s *Store) WritesByOp() map[string]int64 {
	out := map[string]int64{}
	s.byOp.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// wrote counts n write units of operation op.
func (s *Store) wrote(op string, n int64) {
	s.writes.Add(n)
	c, ok := s.byOp.Load(op)
	if !ok {
		c, _ = s.byOp.LoadOrStore(op, new(atomic.Int64))
	}
	c.(*atomic.Int64).Add(n)
}

// opName is what without its numbers: "checkpoint task 12" → "checkpoint task".
func opName(what string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, what))
}

// Table returns the table name.
func (s *Store) Table() string { return s.table }

// Keys and attribute values.

func (s *Store) key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(s.ns + pk), attrSK: str(sk)}
}
func (s *Store) metaKey(sk string) map[string]types.AttributeValue { return s.key("meta", sk) }
func (s *Store) jobKey(id int64) map[string]types.AttributeValue {
	return s.key("job#"+strconv.FormatInt(id, 10), skJob)
}
func (s *Store) taskKey(id int64) map[string]types.AttributeValue {
	return s.key("task#"+strconv.FormatInt(id, 10), skTask)
}
func (s *Store) activePK() string { return s.ns + indexActive }

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func numAttr(item map[string]types.AttributeValue, name string) (int64, bool) {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	return v, err == nil
}

func strAttr(item map[string]types.AttributeValue, name string) (string, bool) {
	v, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return v.Value, true
}

// expr collects the placeholder names and values of one request's
// expressions; DynamoDB refuses unused ones, so each request has its own.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// n returns the placeholder of attribute name a (every name is a
// placeholder, so reserved words never matter).
func (e *expr) n(a string) string {
	e.names["#"+a] = a
	return "#" + a
}

// v returns a placeholder for value av.
func (e *expr) v(av types.AttributeValue) string {
	k := ":v" + strconv.Itoa(len(e.values))
	e.values[k] = av
	return k
}

func (e *expr) Names() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	return e.names
}

func (e *expr) Values() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

// Task items.

// Task attribute names used in expressions.
const (
	aStatus   = "status"
	aCursor   = "cursor"
	aEnd      = "end"
	aDone     = "done"
	aLeft     = "left"
	aHB       = "hb"
	aOwner    = "owner"
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
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func (it taskItem) task() task.Task {
	return task.Task{
		ID: it.ID, JobID: it.JobID, Layer: it.Layer, Type: task.Type(it.Type), Status: task.Status(it.Status),
		Start: it.Start, End: it.End, Cursor: it.Cursor, Total: it.Total, Done: it.Done,
		Heartbeat: fromNanos(it.Heartbeat), Created: fromNanos(it.Created), Finished: fromNanos(it.Finished),
		Killed: it.Killed, Owner: it.Owner,
	}
}

func decodeTask(item map[string]types.AttributeValue) (taskItem, error) {
	var it taskItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return taskItem{}, fmt.Errorf("decode task item: %w", err)
	}
	return it, nil
}

// expires is the TTL of an item finished at finished.
func (s *Store) expires(finished time.Time) int64 {
	t := finished
	if now := s.clock(); now.After(t) {
		t = now
	}
	return t.Add(Retention).Unix()
}

// Create implements task.Store; see the package comment. It issues 1 + 1 +
// len(lanes) writes (the sequence, then the job and its tasks in one
// transaction), one more for a staged request (the flip).
func (s *Store) Create(ctx context.Context, job task.Job, lanes []task.Lane, now time.Time) (task.Job, []task.Task, error) {
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

func (s *Store) newTaskItem(t task.Task, staged int64) (map[string]types.AttributeValue, error) {
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
func (s *Store) createStaged(ctx context.Context, jobID int64, items []map[string]types.AttributeValue) error {
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
func (s *Store) abandon(ctx context.Context, jobID int64, taskIDs []int64) (committed bool, err error) {
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
	s    *Store
	jobs map[int64]string // job id -> state ("" when the job item is missing)
}

func (s *Store) newVisibility() *visibility { return &visibility{s: s, jobs: map[int64]string{}} }

// visible reports whether the task exists for readers: a staged task only
// once its job is committed.
func (v *visibility) visible(ctx context.Context, it taskItem) (bool, error) {
	if it.Staged == 0 {
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
	}
	return state == jobCommitted, nil
}

// getTask reads a task item with a consistent read; NotFound when missing
// or staged and not committed.
func (s *Store) getTask(ctx context.Context, id int64) (taskItem, error) {
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
func (s *Store) Job(ctx context.Context, id int64) (task.Job, error) {
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
func (s *Store) Get(ctx context.Context, id int64) (task.Task, error) {
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
func (s *Store) GetMany(ctx context.Context, ids []int64) (map[int64]task.Task, error) {
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

// List implements task.Store. It reads the index partition of active and
// recently finished tasks (in id order, with eventually consistent reads),
// and removes from the index, at most 25 per call, tasks finished before
// both finishedSince and now − the finished-keep duration.
func (s *Store) List(ctx context.Context, finishedSince time.Time) ([]task.Task, error) {
	const what = "list tasks"
	const maxPrune = 25
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
			it, err := decodeTask(item)
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
	for _, it := range prune {
		if ctx.Err() != nil {
			break
		}
		e := newExpr()
		s.wrote("List", 1)
		s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &s.table,
			Key:                       s.taskKey(it.ID),
			UpdateExpression:          aws.String("REMOVE " + e.n(attrGSIPK)),
			ConditionExpression:       aws.String("attribute_exists(" + e.n(aFinished) + ")"),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
		}, s.callOpts...)
	}
	for jobID, ids := range stale {
		if ctx.Err() != nil {
			break
		}
		s.abandon(ctx, jobID, ids)
	}
	slices.SortFunc(out, func(a, b task.Task) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// AddFailures implements task.Store. The count lives on the job item; a job
// id without a job gets an item holding only the count (Job still reports
// it missing).
func (s *Store) AddFailures(ctx context.Context, jobID int64, n int64) (int64, error) {
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
