// The audit trail (audit.Store): one item per record in a partition per
// UTC day, pk=audit#<2006-01-02> sk=<record id> (audit.NewID: the time in
// nanoseconds, then a random suffix, so a day's keys sort by time),
// holding the audit.Record as JSON in data, its layer and account (for
// the listing's filters) and expires = its time + the retention (the
// table's TTL removes it; List never returns a record past the retention
// however late the TTL runs). A partition per day spreads the writes and
// lets a listing read a range of days newest first.

package adminstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/apperr"
	"tilecache/internal/audit"
	"tilecache/internal/state/dynamo"
)

const (
	pkAudit       = "audit#"
	aAuditLayer   = "layer"
	aAuditAccount = "account"
)

// Audit is the audit trail over the table (audit.Store).
type Audit struct {
	it        *dynamo.Items
	retention time.Duration
}

var _ audit.Store = (*Audit)(nil)

func auditDay(at time.Time) string { return pkAudit + at.UTC().Format(time.DateOnly) }

// Append stores r under a new id: one conditional PutItem.
func (a *Audit) Append(ctx context.Context, r audit.Record) error {
	r.ID = audit.NewID(r.At)
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	item := a.it.Key(auditDay(r.At), r.ID)
	item[aData] = dynamo.Str(string(data))
	item[aAuditLayer] = dynamo.Str(r.Layer)
	item[aAuditAccount] = dynamo.Str(r.Account)
	item[dynamo.AttrExpires] = dynamo.Num(r.At.Add(a.retention).Unix())
	e := dynamo.NewExpr()
	what := "append audit record " + r.ID
	ok, err := a.it.Put(ctx, "AppendAudit", what, &dynamodb.PutItemInput{
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(" + e.N(dynamo.AttrPK) + ")"),
		ExpressionAttributeNames: e.Names(),
	})
	if err != nil {
		return err
	}
	if !ok { // the id is taken, which its random suffix makes unheard of
		return apperr.New(apperr.Conflict, "%s: condition not met", what)
	}
	return nil
}

// List returns the records matching q, newest first: a Query per day,
// backwards, from the day of q.After (or today) down to the day of the
// oldest time listed (q.Since, or the retention), filtered by layer and
// account, stopping at the limit.
func (a *Audit) List(ctx context.Context, q audit.Query) (audit.Page, error) {
	limit := q.Capped()
	now := a.it.Now()
	from := now.Add(-a.retention)
	if q.Since.After(from) {
		from = q.Since
	}
	floor := audit.TimeKey(from)
	// A record may come from a process whose clock is slightly ahead.
	start, hi := now.Add(time.Hour), "~" // "~" sorts after every id
	if q.After != "" {
		start, _ = audit.IDTime(q.After)
		hi = q.After
	}
	var page audit.Page
	for day := start.UTC().Truncate(24 * time.Hour); !day.Before(from.UTC().Truncate(24 * time.Hour)); day = day.Add(-24 * time.Hour) {
		e := dynamo.NewExpr()
		in := &dynamodb.QueryInput{
			KeyConditionExpression: aws.String(e.N(dynamo.AttrPK) + " = " + e.V(dynamo.Str(a.it.Partition(auditDay(day)))) + " AND " +
				e.N(dynamo.AttrSK) + " BETWEEN " + e.V(dynamo.Str(floor)) + " AND " + e.V(dynamo.Str(hi))),
			ScanIndexForward: aws.Bool(false),
			ConsistentRead:   aws.Bool(true),
		}
		var filter []string
		if q.Layer != "" {
			filter = append(filter, e.N(aAuditLayer)+" = "+e.V(dynamo.Str(q.Layer)))
		}
		if q.Account != "" {
			filter = append(filter, e.N(aAuditAccount)+" = "+e.V(dynamo.Str(q.Account)))
		}
		if len(filter) > 0 {
			f := filter[0]
			for _, g := range filter[1:] {
				f += " AND " + g
			}
			in.FilterExpression = aws.String(f)
		}
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.Names(), e.Values()
		full := false
		err := a.it.Query(ctx, "list audit records of "+day.Format(time.DateOnly), in, func(item dynamo.Item) (bool, error) {
			if len(page.Records) == limit {
				page.Next = page.Records[limit-1].ID
				full = true
				return false, nil
			}
			r, err := decodeAudit(item)
			if err != nil {
				return false, err
			}
			if r.ID != hi && q.Matches(r) {
				page.Records = append(page.Records, r)
			}
			return true, nil
		})
		if err != nil {
			return audit.Page{}, err
		}
		if full {
			return page, nil
		}
	}
	return page, nil
}

func decodeAudit(item dynamo.Item) (audit.Record, error) {
	var r audit.Record
	data, _ := dynamo.StrAttr(item, aData)
	if err := json.Unmarshal([]byte(data), &r); err != nil {
		sk, _ := dynamo.StrAttr(item, dynamo.AttrSK)
		return r, fmt.Errorf("decode audit record %s: %w", sk, err)
	}
	return r, nil
}
