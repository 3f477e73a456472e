// Package dynamo holds the DynamoDB state adapters, one type per port over
// one table (a Table): Tasks (task.Store: tasks, jobs, the id sequence, the
// thread pool), Usage (quota.UsageStore and the disk-quota configuration:
// tile pages and layer totals), Config (layer.ConfigStore: the
// configuration managed at run time), Claims (onmiss.Claims: the claims of
// render on miss) and ReadMarks (quota.Marks: the batches of reads
// recorded). Each port's methods live in the files named after it; the
// plumbing they share is in expr.go, codec.go and errors.go.
//
// The administration's adapters (accounts, API tokens, the audit trail,
// the schedules) are in package adminstore, over the same table through
// the low-level item API of items.go (Table.Items), so that an assembly
// without an administration interface links none of them.
//
// # Table
//
// One table (see CreateTable): partition key pk (S), sort key sk (S); a
// global secondary index "active" on gsi1pk (S) and gsi1sk (N) projecting
// the status attributes of a task (INCLUDE, listed.go; the store reads the
// same from an index projecting ALL, as tables made before did); TTL on
// expires (epoch seconds); on-demand billing. Items:
//
//	pk=meta       sk=seq    n         the id sequence (last id handed out)
//	pk=meta       sk=pool   running   the number of RUNNING tasks
//	pk=meta       sk=quota  data, version   the disk-quota configuration
//	pk=meta       sk=lanes#<layer>  running   the layer's RUNNING tasks
//	pk=meta       sk=schedules  n   the number of schedules (adminstore)
//	pk=job#<id>   sk=job    data (the task.Job as JSON), open (tasks not yet
//	                        finished), failures, [state], [expires]
//	pk=task#<id>  sk=task   one attribute per task field, plus left (Total −
//	                        Done), gsi1pk=active, gsi1sk=<id>, [finished],
//	                        [expires], [staged]
//	pk=usage      sk=state, sk=layer#<name>     disk usage bookkeeping and
//	                        layer totals (see usage.go)
//	pk=pages#<layer>  sk=<page id>   one tile page of the layer
//	pk=claim#<key>    sk=claim       owner or note, until, expires: a claim
//	                        of render on miss (see claims.go)
//	pk=schedules      sk=<name>      def, next, [last, lastDue, started,
//	                        failed]: a schedule of a saved request
//	                        (adminstore)
//	pk=config     sk=version     version, wt: the version of the
//	                        configuration managed at run time (see config.go)
//	pk=config     sk=doc         version, doc, size: its document,
//	                        gzip-compressed
//	pk=audit#<UTC day>  sk=<record id>  data, layer, account, expires: a
//	                        record of the audit trail (adminstore)
//	pk=token      sk=<token id>  data, [revoked], expires: an API token
//	                        (adminstore)
//	pk=account    sk=<name>      data: an account added at run time
//	                        (adminstore)
//
// With WithNamespace, every pk and gsi1pk value is prefixed by the namespace.
//
// # Index
//
// A task is in the sparse index "active" (gsi1pk = "active", gsi1sk = its id)
// from its creation until it finishes: Promote only ever Queries that one
// index partition, so no operation scans the table, and ids ascending are
// "oldest first" for Promote. The transaction that finishes a task moves
// its entry to the partition "finished" of the same index (gsi1pk =
// "finished", gsi1sk = its finish time in nanoseconds, see finished.go):
// List reads the active partition whole and the finished one from the
// finishedSince it was asked for, a key range, so a status call reads the
// active tasks and those finished since, however many finished tasks are
// kept. Tasks finished by an older version kept their active entry; List
// removes it (REMOVE gsi1pk, conditional, best-effort) once they finished
// more than DefaultFinishedKeep (one minute; see WithFinishedKeep) ago and
// before the finishedSince it was asked for. All active entries share one
// index partition; every write to an active task item (checkpoints
// included) is also a write to it, which bounds the table at roughly a
// thousand such writes per second: far above what a pool of lanes
// checkpointing every few seconds issues.
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
package dynamo

import (
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

// store is what the adapters over one table share: the client, the
// table's name and namespace, the clock, the write counters. It is safe
// for concurrent use, also by several processes sharing the table.
type store struct {
	client       *dynamodb.Client
	table        string
	ns           string
	finishedKeep time.Duration
	stageTimeout time.Duration
	clock        func() time.Time
	callOpts     []func(*dynamodb.Options)
	writes       atomic.Int64
	byOp         sync.Map // op → *atomic.Int64
	ordered      sync.Map // layer → true: its pages have their order keys (usageorder.go)
	committed    committedJobs

	// testBeforeFlip, when set, runs before a staged Create's flip; an
	// error fails the Create there. testNoCleanup skips Create's clean-up.
	testBeforeFlip func() error
	testNoCleanup  bool
}

// Table is one DynamoDB table and its client, from which the adapters of
// the ports are taken; they share its client and write counters.
type Table struct{ s *store }

// Tasks returns the task store (task.Store) over the table.
func (t *Table) Tasks() *Tasks { return &Tasks{t.s} }

// Usage returns the usage store (quota.UsageStore, with the disk-quota
// configuration) over the table.
func (t *Table) Usage() *Usage { return &Usage{t.s} }

// Config returns the store of the configuration managed at run time
// (layer.ConfigStore) over the table.
func (t *Table) Config() *Config { return &Config{t.s} }

// Claims returns the claims of render on miss (onmiss.Claims) over the table.
func (t *Table) Claims() *Claims { return &Claims{t.s} }

// ReadMarks returns the marks of recorded read batches (quota.Marks) over
// the table.
func (t *Table) ReadMarks() *ReadMarks { return &ReadMarks{t.s} }

// Option configures a Table.
type Option func(*store)

// WithNamespace prefixes every partition key (pk and gsi1pk) with ns, so that
// several independent stores share one table: tests use it to get a fresh,
// empty store without creating a table, and deployments may use it to keep
// two environments in one table. Give each store a distinct ns that is not a
// prefix of another's followed by "meta", "job#", "task#", "active",
// "finished", "usage", "pages#", "claim#", "schedules", "config",
// "audit#", "token" or "account"; a trailing separator such as "t1/"
// guarantees that.
func WithNamespace(ns string) Option { return func(s *store) { s.ns = ns } }

// WithFinishedKeep sets how long tasks finished by an older version, which
// kept their entry in the active partition, stay there (default one
// minute). List(finishedSince) misses such tasks that finished before both
// finishedSince and now − keep, so keep must exceed the longest look-back
// callers use (the engine's retention, 3 s by default). Tasks finished
// since are listed from the finished partition for as long as their items
// live.
func WithFinishedKeep(d time.Duration) Option { return func(s *store) { s.finishedKeep = d } }

// New returns the client of table, which must exist (see CreateTable).
//
// When the client talks to an endpoint other than AWS's own (DynamoDB Local,
// say: AWS_ENDPOINT_URL_DYNAMODB), the store disables the validation of
// response CRC32 checksums on its calls, which such servers get wrong on
// error responses. It also retries TransactionConflictException, which the
// SDK's default retryer does not.
func New(client *dynamodb.Client, table string, opts ...Option) *Table {
	s := &store{
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
	return &Table{s}
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
func (t *Table) Writes() int64 { return t.s.writes.Load() }

// WritesByOp returns Writes by operation ("checkpoint task", "Claim",
// "finish task", …), for benchmarks to show where writes go.
func (t *Table) WritesByOp() map[string]int64 {
	out := map[string]int64{}
	t.s.byOp.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// wrote counts n write units of operation op.
func (s *store) wrote(op string, n int64) {
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

// Name returns the table name.
func (t *Table) Name() string { return t.s.table }
