// Package adminstore holds the DynamoDB adapters of the administration's
// items, over the task table of package dynamo through its item API
// (dynamo.Items): Accounts (account.Store: the accounts added at run
// time), Tokens (apitoken.Store: the API tokens), Audit (audit.Store: the
// audit trail) and Schedules (schedule.Store: the schedules of saved
// requests). They are apart from package dynamo so that an assembly that
// has no administration interface (the tile origin) links neither them
// nor what they link (bcrypt, the cron parser).
//
// Their items are in the same table, in partitions of their own (see
// package dynamo's comment and each file's), laid out as they were when
// package dynamo held them:
//
//	pk=account          sk=<name>       data
//	pk=token            sk=<token id>   data, [revoked], expires
//	pk=audit#<UTC day>  sk=<record id>  data, layer, account, expires
//	pk=schedules        sk=<name>       def, next, [last, lastDue, started, failed]
//	pk=meta             sk=schedules    n (the number of schedules)
//
// Errors are package dynamo's: a missing item is apperr.NotFound, an item
// that exists where it must not apperr.Conflict, DynamoDB failing
// apperr.Unavailable.
package adminstore

import (
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/state/dynamo"
)

// Store is the administration's adapters over one table.
type Store struct{ it *dynamo.Items }

// New returns the administration's adapters over table.
func New(table *dynamo.Table) *Store { return &Store{table.Items()} }

// Accounts returns the stored accounts.
func (s *Store) Accounts() *Accounts { return &Accounts{s.it} }

// Tokens returns the API tokens.
func (s *Store) Tokens() *Tokens { return &Tokens{s.it} }

// Audit returns the audit trail, keeping records for retention.
func (s *Store) Audit(retention time.Duration) *Audit { return &Audit{s.it, retention} }

// Schedules returns the schedule store.
func (s *Store) Schedules() *Schedules { return &Schedules{s.it} }

// aData is the attribute holding an account, a token or an audit record.
const aData = "data"

// str is a string attribute value.
func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// num is a number attribute value.
func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// numAttr reads number attribute name of item; ok is false when it is
// missing or not an integer.
func numAttr(item dynamo.Item, name string) (int64, bool) {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	return v, err == nil
}

// strAttr reads string attribute name of item; ok is false when it is
// missing.
func strAttr(item dynamo.Item, name string) (string, bool) {
	v, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return v.Value, true
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

// code is a transaction's cancellation reason's code.
func code(r types.CancellationReason) string {
	if r.Code == nil {
		return ""
	}
	return *r.Code
}

// reasonCodes lists the codes of rs.
func reasonCodes(rs []types.CancellationReason) string {
	codes := make([]string, len(rs))
	for i, r := range rs {
		codes[i] = code(r)
	}
	return strings.Join(codes, ", ")
}
