// Expiration order of the pages (quota.PageStore.PagesInOrder).

package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"tilecache/internal/apperr"
	"tilecache/internal/quota"
)

// Every page item carries its quota.OrderKey for each policy, lru and lfu,
// and the global secondary indexes "lru" (pk, lru) and "lfu" (pk, lfu),
// projecting ALL, keep each layer's pages partition sorted by them: a
// clean-up Queries the next pages of a layer in order (a batch at a time)
// instead of all of them. The keys change only where a page's creation,
// last access or hits do: a new page gets the keys of its creation
// (pageChange, ReplaceLayer), and a flush of reads (RecordAccess) reads
// the page and writes its access, hits and both keys in one conditional
// UpdateItem (retried from a fresh read when another write came between),
// so the keys are exact, not estimates: the LFU frequency, hits per minute
// from creation to last access, changes only with them.
//
// The layer item's ordered attribute says every page of the layer has its
// keys. A layer without it (usage recorded before the keys existed, or a
// layer first counted since) gets them on its first read in order: one
// streamed pass over its pages, writing the keys of those that lack them
// or have others (conditional on the page being unchanged since read).
const (
	aLRU       = "lru"
	aLFU       = "lfu"
	aOrdered   = "ordered"
	indexLRU   = "lru"
	indexLFU   = "lfu"
	accessTrys = 8 // reads and conditional writes of one page's access update
)

// orderKeys returns the SET clause of a page's keys.
func orderKeys(e *expr, p quota.Page) string {
	return e.n(aLRU) + " = " + e.v(str(quota.OrderKey(p, quota.PolicyLRU))) + ", " +
		e.n(aLFU) + " = " + e.v(str(quota.OrderKey(p, quota.PolicyLFU)))
}

// newPageKeys returns the SET clause that gives a page recorded for the
// first time at now its keys, leaving an existing page's alone.
func newPageKeys(e *expr, k quota.PageKey, now time.Time) string {
	p := quota.Page{Key: k, Created: now}
	return e.n(aLRU) + " = if_not_exists(" + e.n(aLRU) + ", " + e.v(str(quota.OrderKey(p, quota.PolicyLRU))) + "), " +
		e.n(aLFU) + " = if_not_exists(" + e.n(aLFU) + ", " + e.v(str(quota.OrderKey(p, quota.PolicyLFU))) + ")"
}

// sameUse is the condition that a page's creation, last access and hits
// are still those of p.
func sameUse(e *expr, p quota.Page) string {
	eq := func(a string, v int64) string {
		if v == 0 {
			return "(attribute_not_exists(" + e.n(a) + ") OR " + e.n(a) + " = " + e.v(num(0)) + ")"
		}
		return e.n(a) + " = " + e.v(num(v))
	}
	return "attribute_exists(" + e.n(attrPK) + ") AND " + eq(aCreated, nanos(p.Created)) + " AND " +
		eq(aAccess, nanos(p.LastAccess)) + " AND " + eq(aHits, p.Hits)
}

// recordAccess adds one page's reads: a consistent read of the page, then
// one UpdateItem of its access, hits and order keys, conditional on its
// use being unchanged since the read.
func (s *Usage) recordAccess(ctx context.Context, a quota.Access) error {
	what := "record accesses of page " + a.Page.ID()
	for attempt := 0; attempt < accessTrys; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: &s.table, Key: s.pageKey(a.Page), ConsistentRead: aws.Bool(true),
		}, s.callOpts...)
		if err != nil {
			return s.fail(ctx, err, "%s", what)
		}
		if len(out.Item) == 0 {
			return nil // no such page
		}
		old, err := decodePage(out.Item)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		cur := old
		cur.Hits += a.Hits
		if a.Last.After(cur.LastAccess) {
			cur.LastAccess = a.Last
		}
		e := newExpr()
		s.wrote("recordAccess", 1)
		_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table,
			Key:       s.pageKey(a.Page),
			UpdateExpression: aws.String("SET " + e.n(aAccess) + " = " + e.v(num(nanos(cur.LastAccess))) +
				", " + e.n(aHits) + " = " + e.v(num(cur.Hits)) + ", " + orderKeys(e, cur)),
			ConditionExpression:       aws.String(sameUse(e, old)),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
		}, s.callOpts...)
		if err == nil {
			return nil
		}
		if !isConditionFailed(err) {
			return s.fail(ctx, err, "%s", what)
		}
	}
	return apperr.New(apperr.Conflict, "%s: the page kept changing", what)
}

// PagesInOrder implements quota.PageStore: one Query of the layer's
// partition of index "lru" or "lfu", after the cursor, of limit items.
func (s *Usage) PagesInOrder(ctx context.Context, layer, policy, cursor string, limit int) ([]quota.Page, string, error) {
	index, attr := indexLRU, aLRU
	if policy == quota.PolicyLFU {
		index, attr = indexLFU, aLFU
	}
	what := "read the pages of layer " + layer + " in order"
	if cursor == "" {
		if err := s.ensureOrdered(ctx, layer); err != nil {
			return nil, "", err
		}
	}
	e := newExpr()
	cond := e.n(attrPK) + " = " + e.v(str(s.pagesPK(layer)))
	if cursor != "" {
		cond += " AND " + e.n(attr) + " > " + e.v(str(cursor))
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 &s.table,
		IndexName:                 aws.String(index),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		Limit:                     aws.Int32(int32(min(max(limit, 1), 1000))),
	}, s.callOpts...)
	if err != nil {
		if missingIndex(err) {
			return nil, "", fmt.Errorf("%s: %w (%v)", what, quota.ErrUnordered, err)
		}
		return nil, "", s.fail(ctx, err, "%s", what)
	}
	pages := make([]quota.Page, 0, len(out.Items))
	for _, item := range out.Items {
		p, err := decodePage(item)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", what, err)
		}
		if p.Tiles != 0 || p.Bytes != 0 {
			pages = append(pages, p)
		}
	}
	var next string
	if len(out.LastEvaluatedKey) > 0 {
		next, _ = strAttr(out.LastEvaluatedKey, attr)
	}
	return pages, next, nil
}

// missingIndex reports whether err says the table has no such index (a
// table created before the order indexes, or while they are built).
func missingIndex(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" {
		return false
	}
	m := strings.ToLower(ae.ErrorMessage())
	return strings.Contains(m, "index")
}

// ensureOrdered gives every page of the layer its order keys unless the
// layer item says they have them, then says so (see the top of the file).
func (s *Usage) ensureOrdered(ctx context.Context, layer string) error {
	if _, ok := s.ordered.Load(layer); ok {
		return nil
	}
	what := "order the pages of layer " + layer
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table, Key: s.layerKey(layer), ConsistentRead: aws.Bool(true),
	}, s.callOpts...)
	if err != nil {
		return s.fail(ctx, err, "%s", what)
	}
	if _, ok := out.Item[aOrdered]; ok {
		s.ordered.Store(layer, true)
		return nil
	}
	err = s.eachPage(ctx, layer, func(items []map[string]types.AttributeValue) error {
		for _, item := range items {
			p, err := decodePage(item)
			if err != nil {
				return err
			}
			lru, _ := strAttr(item, aLRU)
			lfu, _ := strAttr(item, aLFU)
			if lru == quota.OrderKey(p, quota.PolicyLRU) && lfu == quota.OrderKey(p, quota.PolicyLFU) {
				continue
			}
			e := newExpr()
			s.wrote("order pages", 1)
			_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 &s.table,
				Key:                       s.pageKey(p.Key),
				UpdateExpression:          aws.String("SET " + orderKeys(e, p)),
				ConditionExpression:       aws.String(sameUse(e, p)),
				ExpressionAttributeNames:  e.Names(),
				ExpressionAttributeValues: e.Values(),
			}, s.callOpts...)
			if err != nil && !isConditionFailed(err) { // a page changed meanwhile got its keys from that change
				return s.fail(ctx, err, "%s", what)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.markOrdered(ctx, layer); err != nil {
		return err
	}
	s.ordered.Store(layer, true)
	return nil
}

// markOrdered sets the layer item's ordered attribute.
func (s *Usage) markOrdered(ctx context.Context, layer string) error {
	e := newExpr()
	s.wrote("order pages", 1)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table,
		Key:       s.layerKey(layer),
		UpdateExpression: aws.String("SET " + e.n(aLayer) + " = " + e.v(str(layer)) + ", " +
			e.n(aOrdered) + " = " + e.v(num(1))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
	if err != nil {
		return s.fail(ctx, err, "mark the pages of layer %s ordered", layer)
	}
	return nil
}

// eachPage calls fn with each page of a Query of the layer's pages
// partition (up to 1 MB of items each): memory bounded by one page of the
// answer, not by the layer.
func (s *Usage) eachPage(ctx context.Context, layer string, fn func([]map[string]types.AttributeValue) error) error {
	e := newExpr()
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    aws.String(e.n(attrPK) + " = " + e.v(str(s.pagesPK(layer)))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx, s.callOpts...)
		if err != nil {
			return s.fail(ctx, err, "read the pages of layer %s", layer)
		}
		if err := fn(page.Items); err != nil {
			return fmt.Errorf("read the pages of layer %s: %w", layer, err)
		}
	}
	return nil
}

// DeletePageAsRead implements quota.PageStore: one transaction deleting
// the page if it still holds p's tiles and bytes and subtracting them from
// the layer; when it does not (or p was read from an index not yet
// current), DeletePage.
func (s *Usage) DeletePageAsRead(ctx context.Context, p quota.Page) (quota.Page, bool, error) {
	reasons, err := s.transact(ctx, "remove page "+p.Key.ID(),
		[]types.TransactWriteItem{s.pageRemoval(p), s.layerChange(p.Key.Set.Layer, -p.Tiles, -p.Bytes)})
	if err != nil {
		return quota.Page{}, false, err
	}
	if reasons == nil {
		return p, true, nil
	}
	return s.DeletePage(ctx, p.Key)
}
