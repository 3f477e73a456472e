// The table's low-level item API (Items), for the adapters that live in
// packages of their own over the same table (internal/state/dynamo/
// adminstore: accounts, API tokens, the audit trail, schedules), so that
// an assembly links only the adapters it uses. It is the plumbing the
// adapters of this package use, exported as little as they need: keys in
// the store's namespace, single-item reads and writes, one partition's
// Query and write transactions, with the table's name and call options
// filled in, the writes counted (Table.Writes) and errors classified as
// the package's own (see Errors in the package comment).

package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The table's key and TTL attributes (see the package comment).
const (
	// AttrPK is the partition key, prefixed by the namespace.
	AttrPK = attrPK
	// AttrSK is the sort key.
	AttrSK = attrSK
	// AttrExpires is the TTL attribute (epoch seconds).
	AttrExpires = attrExpires
)

// Item is one item's attributes (or key), by name.
type Item = map[string]types.AttributeValue

// Items is the low-level item API over a Table. It is safe for concurrent
// use.
type Items struct{ s *store }

// Items returns the low-level item API over the table.
func (t *Table) Items() *Items { return &Items{t.s} }

// Key is the primary key of item pk/sk, pk in the store's namespace.
func (it *Items) Key(pk, sk string) Item { return it.s.key(pk, sk) }

// MetaKey is the key of the meta item sk (pk=meta: counters and settings).
func (it *Items) MetaKey(sk string) Item { return it.s.metaKey(sk) }

// Partition is the stored value of partition key pk (in the store's
// namespace), for a Query's key condition.
func (it *Items) Partition(pk string) string { return it.s.ns + pk }

// Now is the store's clock.
func (it *Items) Now() time.Time { return it.s.clock() }

// Get reads the item of key: one consistent GetItem. The item is nil when
// there is none; what names the read in errors.
func (it *Items) Get(ctx context.Context, what string, key Item) (Item, error) {
	s := it.s
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table, Key: key, ConsistentRead: aws.Bool(true),
	}, s.callOpts...)
	if err != nil {
		return nil, s.fail(ctx, err, "%s", what)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// Put writes in (its TableName filled in): one PutItem counted as op
// (Table.WritesByOp); what names it in errors. ok is false when its
// condition failed.
func (it *Items) Put(ctx context.Context, op, what string, in *dynamodb.PutItemInput) (ok bool, err error) {
	s := it.s
	in.TableName = &s.table
	s.wrote(op, 1)
	_, err = s.client.PutItem(ctx, in, s.callOpts...)
	return it.written(ctx, what, err)
}

// Update writes in as Put does: one UpdateItem.
func (it *Items) Update(ctx context.Context, op, what string, in *dynamodb.UpdateItemInput) (ok bool, err error) {
	s := it.s
	in.TableName = &s.table
	s.wrote(op, 1)
	_, err = s.client.UpdateItem(ctx, in, s.callOpts...)
	return it.written(ctx, what, err)
}

// Delete writes in as Put does: one DeleteItem.
func (it *Items) Delete(ctx context.Context, op, what string, in *dynamodb.DeleteItemInput) (ok bool, err error) {
	s := it.s
	in.TableName = &s.table
	s.wrote(op, 1)
	_, err = s.client.DeleteItem(ctx, in, s.callOpts...)
	return it.written(ctx, what, err)
}

func (it *Items) written(ctx context.Context, what string, err error) (bool, error) {
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, it.s.fail(ctx, err, "%s", what)
	}
	return true, nil
}

// Query runs in (its TableName filled in) page after page, calling each
// for every item until each returns false; what names it in errors.
func (it *Items) Query(ctx context.Context, what string, in *dynamodb.QueryInput, each func(Item) (bool, error)) error {
	s := it.s
	in.TableName = &s.table
	p := dynamodb.NewQueryPaginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx, s.callOpts...)
		if err != nil {
			return s.fail(ctx, err, "%s", what)
		}
		for _, item := range page.Items {
			more, err := each(item)
			if err != nil || !more {
				return err
			}
		}
	}
	return nil
}

// Transact runs a write transaction of items (their TableName filled in),
// as the package's own do: nil, nil on success; the cancellation reasons
// (one per item, in order) when a condition failed; an error otherwise. A
// transaction cancelled by concurrent ones or by throttling is retried
// with backoff, and is an apperr.Conflict (or Unavailable) when that
// persists.
func (it *Items) Transact(ctx context.Context, what string, items []types.TransactWriteItem) ([]types.CancellationReason, error) {
	s := it.s
	for _, ti := range items {
		switch {
		case ti.Put != nil:
			ti.Put.TableName = &s.table
		case ti.Update != nil:
			ti.Update.TableName = &s.table
		case ti.Delete != nil:
			ti.Delete.TableName = &s.table
		case ti.ConditionCheck != nil:
			ti.ConditionCheck.TableName = &s.table
		}
	}
	return s.transact(ctx, what, items)
}

// Expr collects the placeholder names and values of one request's
// expressions (DynamoDB refuses unused ones: one Expr per expression set
// of a request).
type Expr struct{ e *expr }

// NewExpr returns an empty expression set.
func NewExpr() Expr { return Expr{newExpr()} }

// N returns the placeholder of attribute name a.
func (e Expr) N(a string) string { return e.e.n(a) }

// V returns a placeholder for value av.
func (e Expr) V(av types.AttributeValue) string { return e.e.v(av) }

// Names returns the name placeholders (nil when none).
func (e Expr) Names() map[string]string { return e.e.Names() }

// Values returns the value placeholders (nil when none).
func (e Expr) Values() map[string]types.AttributeValue { return e.e.Values() }
