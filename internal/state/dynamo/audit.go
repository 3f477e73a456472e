// The audit trail (audit.Store): one item per record in a partition per
// UTC day, pk=audit#<2006-01-02> sk=<record id> (audit.NewID: the time in
// nanoseconds, then a random suffix, so a day's keys sort by time),
// holding the audit.Record as JSON in data, its layer and account (for
// the listing's filters) and expires = its time + the retention (the
// table's TTL removes it; List never returns a record past the retention
// however late the TTL runs). A partition per day spreads the writes and
// lets a listing read a range of days newest first.

package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/audit"
)

const (
	pkAudit       = "audit#"
	aAuditLayer   = "layer"
	aAuditAccount = "account"
)

// Audit is the audit trail over the table (audit.Store).
type Audit struct {
	*store
	retention time.Duration
}

var _ audit.Store = (*Audit)(nil)

// Audit returns the audit trail over the table, keeping records for
// retention.
func (t *Table) Audit(retention time.Duration) *Audit { return &Audit{t.s, retention} }

func auditDay(at time.Time) string { return pkAudit + at.UTC().Format(time.DateOnly) }

// Append stores r under a new id: one conditional PutItem.
func (a *Audit) Append(ctx context.Context, r audit.Record) error {
	r.ID = audit.NewID(r.At)
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	item := a.key(auditDay(r.At), r.ID)
	item[aData] = str(string(data))
	item[aAuditLayer] = str(r.Layer)
	item[aAuditAccount] = str(r.Account)
	item[attrExpires] = num(r.At.Add(a.retention).Unix())
	a.wrote("AppendAudit", 1)
	e := newExpr()
	_, err = a.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &a.table, Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(" + e.n(attrPK) + ")"),
		ExpressionAttributeNames: e.Names(),
	}, a.callOpts...)
	if err != nil {
		return a.fail(ctx, err, "append audit record %s", r.ID)
	}
	return nil
}

// List returns the records matching q, newest first: a Query per day,
// backwards, from the day of q.After (or today) down to the day of the
// oldest time listed (q.Since, or the retention), filtered by layer and
// account, stopping at the limit.
func (a *Audit) List(ctx context.Context, q audit.Query) (audit.Page, error) {
	limit := q.Capped()
	now := a.clock()
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
		e := newExpr()
		in := &dynamodb.QueryInput{
			TableName: &a.table,
			KeyConditionExpression: aws.String(e.n(attrPK) + " = " + e.v(str(a.ns+auditDay(day))) + " AND " +
				e.n(attrSK) + " BETWEEN " + e.v(str(floor)) + " AND " + e.v(str(hi))),
			ScanIndexForward: aws.Bool(false),
			ConsistentRead:   aws.Bool(true),
		}
		var filter []string
		if q.Layer != "" {
			filter = append(filter, e.n(aAuditLayer)+" = "+e.v(str(q.Layer)))
		}
		if q.Account != "" {
			filter = append(filter, e.n(aAuditAccount)+" = "+e.v(str(q.Account)))
		}
		if len(filter) > 0 {
			f := filter[0]
			for _, g := range filter[1:] {
				f += " AND " + g
			}
			in.FilterExpression = aws.String(f)
		}
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.Names(), e.Values()
		p := dynamodb.NewQueryPaginator(a.client, in)
		for p.HasMorePages() {
			out, err := p.NextPage(ctx, a.callOpts...)
			if err != nil {
				return audit.Page{}, a.fail(ctx, err, "list audit records of %s", day.Format(time.DateOnly))
			}
			for _, item := range out.Items {
				if len(page.Records) == limit {
					page.Next = page.Records[limit-1].ID
					return page, nil
				}
				r, err := decodeAudit(item)
				if err != nil {
					return audit.Page{}, err
				}
				if r.ID == hi || !q.Matches(r) {
					continue
				}
				page.Records = append(page.Records, r)
			}
		}
	}
	return page, nil
}

func decodeAudit(item map[string]types.AttributeValue) (audit.Record, error) {
	var r audit.Record
	data, _ := strAttr(item, aData)
	if err := json.Unmarshal([]byte(data), &r); err != nil {
		sk, _ := strAttr(item, attrSK)
		return r, fmt.Errorf("decode audit record %s: %w", sk, err)
	}
	return r, nil
}
