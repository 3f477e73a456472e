// quota.UsageStore, first half: counting (quota.Accounting), client
// accesses (quota.AccessStore) and the usage state and clean-up schedule
// (quota.StateStore), with the usage items' keys and the transaction items
// a checkpoint shares. Reading and replacing pages and layer totals
// (quota.PageStore, quota.RecountStore) is in usagepages.go.

package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"tilecache/internal/quota"
)

// Usage items (see the package comment for the table):
//
//	pk=usage          sk=state           counted, block, last, lease
//	pk=usage          sk=layer#<name>    layer, tiles, bytes, version, dirty
//	pk=pages#<layer>  sk=<page id>       layer, grid, fmt, params, z, x, y,
//	                                     tiles, bytes, created, access, hits
//
// Listing the layers is one Query of the usage partition; listing a layer's
// pages is one (paged) Query of its pages partition. Page and layer counts
// change with ADD, so concurrent changes never overwrite each other; every
// change of a layer's pages also changes its layer item (ADD version 1) in
// the same transaction, which is what fences a recount.

const (
	pkUsage      = "usage"
	skState      = "state"
	skLayerPre   = "layer#"
	pkPagesPre   = "pages#"
	aTiles       = "tiles"
	aBytes       = "bytes"
	aDirty       = "dirty"
	aLayer       = "layer"
	aGrid        = "grid"
	aFmt         = "fmt"
	aParams      = "params"
	aZ           = "z"
	aX           = "x"
	aY           = "y"
	aCreated     = "created"
	aAccess      = "access"
	aHits        = "hits"
	aCounted     = "counted"
	aBlock       = "block"
	aLast        = "last"
	aLease       = "lease"
	maxTxItems   = 100
	accessWriter = 8 // concurrent UpdateItems of one RecordAccess
)

// Usage is the usage store (quota.UsageStore) over a Table: tile pages,
// layer totals, the usage state and the disk-quota configuration
// (quota.go). It is safe for concurrent use, also by several processes.
type Usage struct{ *store }

var _ quota.UsageStore = (*Usage)(nil)

func (s *Usage) usageKey(sk string) map[string]types.AttributeValue { return s.key(pkUsage, sk) }
func (s *Usage) layerKey(layer string) map[string]types.AttributeValue {
	return s.usageKey(skLayerPre + layer)
}
func (s *Usage) pagesPK(layer string) string { return s.ns + pkPagesPre + layer }
func (s *Usage) pageKey(k quota.PageKey) map[string]types.AttributeValue {
	return s.key(pkPagesPre+k.Set.Layer, k.ID())
}

// layerChange is the transaction item that adds to a layer's totals and
// bumps its version.
func (s *Usage) layerChange(layer string, tiles, bytes int64) types.TransactWriteItem {
	e := newExpr()
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &s.table,
		Key:       s.layerKey(layer),
		UpdateExpression: aws.String("SET " + e.n(aLayer) + " = " + e.v(str(layer)) +
			" ADD " + e.n(aTiles) + " " + e.v(num(tiles)) + ", " + e.n(aBytes) + " " + e.v(num(bytes)) +
			", " + e.n(aVersion) + " " + e.v(num(1))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}}
}

// pageSet writes the page's identity and, for a page not yet recorded, its
// creation time.
func pageSet(e *expr, k quota.PageKey, now time.Time) string {
	return e.n(aLayer) + " = " + e.v(str(k.Set.Layer)) +
		", " + e.n(aGrid) + " = " + e.v(str(k.Set.GridSetID)) +
		", " + e.n(aFmt) + " = " + e.v(str(k.Set.FormatID)) +
		", " + e.n(aParams) + " = " + e.v(str(k.Set.ParametersID)) +
		", " + e.n(aZ) + " = " + e.v(num(int64(k.Z))) +
		", " + e.n(aX) + " = " + e.v(num(k.X)) +
		", " + e.n(aY) + " = " + e.v(num(k.Y)) +
		", " + e.n(aCreated) + " = if_not_exists(" + e.n(aCreated) + ", " + e.v(num(nanos(now))) + ")"
}

// pageChange is the transaction item that adds a delta to a page.
func (s *Usage) pageChange(d quota.PageDelta, now time.Time) types.TransactWriteItem {
	e := newExpr()
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &s.table,
		Key:       s.pageKey(d.Page),
		UpdateExpression: aws.String("SET " + pageSet(e, d.Page, now) + ", " + newPageKeys(e, d.Page, now) +
			" ADD " + e.n(aTiles) + " " + e.v(num(d.Tiles)) + ", " + e.n(aBytes) + " " + e.v(num(d.Bytes))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}}
}

// merge sums the deltas of each page (a transaction may touch an item only
// once), keeping the order of first appearance.
func merge(deltas []quota.PageDelta) []quota.PageDelta {
	at := make(map[quota.PageKey]int, len(deltas))
	out := make([]quota.PageDelta, 0, len(deltas))
	for _, d := range deltas {
		if i, ok := at[d.Page]; ok {
			out[i].Tiles += d.Tiles
			out[i].Bytes += d.Bytes
			continue
		}
		at[d.Page] = len(out)
		out = append(out, d)
	}
	return out
}

// usageItems returns the transaction items of deltas (merged per page): one
// change per page and one per layer (its sums).
func (s *Usage) usageItems(deltas []quota.PageDelta, now time.Time) []types.TransactWriteItem {
	deltas = merge(deltas)
	type sum struct{ tiles, bytes int64 }
	sums := map[string]*sum{}
	var order []string
	var items []types.TransactWriteItem
	for _, d := range deltas {
		l := d.Page.Set.Layer
		if sums[l] == nil {
			sums[l] = &sum{}
			order = append(order, l)
		}
		sums[l].tiles += d.Tiles
		sums[l].bytes += d.Bytes
		items = append(items, s.pageChange(d, now))
	}
	for _, l := range order {
		items = append(items, s.layerChange(l, sums[l].tiles, sums[l].bytes))
	}
	return items
}

// ApplyDeltas implements quota.Accounting: per layer, transactions of up
// to 99 pages plus the layer's totals. Each transaction is applied once
// even when the SDK retries it (its client request token).
func (s *Usage) ApplyDeltas(ctx context.Context, deltas []quota.PageDelta, now time.Time) error {
	byLayer := map[string][]quota.PageDelta{}
	var order []string
	for _, d := range merge(deltas) {
		l := d.Page.Set.Layer
		if byLayer[l] == nil {
			order = append(order, l)
		}
		byLayer[l] = append(byLayer[l], d)
	}
	for _, l := range order {
		ds := byLayer[l]
		for len(ds) > 0 {
			n := min(len(ds), maxTxItems-1)
			reasons, err := s.transact(ctx, "apply usage changes of layer "+l, s.usageItems(ds[:n], now))
			if err == nil && reasons != nil {
				err = fmt.Errorf("apply usage changes of layer %s: refused (%s)", l, reasonCodes(reasons))
			}
			if err != nil {
				return err
			}
			ds = ds[n:]
		}
	}
	return nil
}

// MarkDirty implements quota.Accounting: one UpdateItem per layer.
func (s *Usage) MarkDirty(ctx context.Context, layers []string) error {
	for _, l := range layers {
		e := newExpr()
		s.wrote("MarkDirty", 1)
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table,
			Key:       s.layerKey(l),
			UpdateExpression: aws.String("SET " + e.n(aLayer) + " = " + e.v(str(l)) + ", " + e.n(aDirty) + " = " +
				e.v(&types.AttributeValueMemberBOOL{Value: true}) + " ADD " + e.n(aVersion) + " " + e.v(num(1))),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
		}, s.callOpts...)
		if err != nil {
			return s.fail(ctx, err, "mark the usage of layer %s for a recount", l)
		}
	}
	return nil
}

// RemoveLayer implements quota.Accounting: the layer's pages are read a
// page of the Query answer at a time and deleted in transactions of up to
// 99 (each conditional on the page being unchanged since it was read, and
// subtracting what it deletes from the layer), then the layer's flag is
// set. A page that changed meanwhile leaves the layer dirty. Memory holds
// one page of the answer (1 MB of items), not the layer.
func (s *Usage) RemoveLayer(ctx context.Context, layer string, dirty bool) error {
	what := "remove the usage of layer " + layer
	err := s.eachPage(ctx, layer, func(items []map[string]types.AttributeValue) error {
		pages := make([]quota.Page, 0, len(items))
		for _, item := range items {
			p, err := decodePage(item)
			if err != nil {
				return err
			}
			pages = append(pages, p)
		}
		for len(pages) > 0 {
			n := min(len(pages), maxTxItems-1)
			var items []types.TransactWriteItem
			var tiles, bytes int64
			for _, p := range pages[:n] {
				items = append(items, s.pageRemoval(p))
				tiles += p.Tiles
				bytes += p.Bytes
			}
			items = append(items, s.layerChange(layer, -tiles, -bytes))
			reasons, err := s.transact(ctx, what, items)
			if err != nil {
				return err
			}
			if reasons != nil {
				dirty = true
			}
			pages = pages[n:]
		}
		return nil
	})
	if err != nil {
		return err
	}
	e := newExpr()
	update := "SET " + e.n(aLayer) + " = " + e.v(str(layer)) + ", " + e.n(aDirty) + " = " + e.v(&types.AttributeValueMemberBOOL{Value: dirty})
	s.wrote("RemoveLayer", 1)
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       s.layerKey(layer),
		UpdateExpression:          aws.String(update + " ADD " + e.n(aVersion) + " " + e.v(num(1))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
	if err != nil {
		return s.fail(ctx, err, "%s", what)
	}
	return nil
}

// RecordAccess implements quota.AccessStore: per page, a read and one
// conditional UpdateItem of its access, hits and order keys (see
// usageorder.go), up to eight pages at once. Every page's write
// runs (a plain group: one failure cancels none of the others) and the
// first failure is the one reported.
func (s *Usage) RecordAccess(ctx context.Context, accesses []quota.Access) error {
	var g errgroup.Group
	g.SetLimit(accessWriter)
	for _, a := range accesses {
		g.Go(func() error { return s.recordAccess(ctx, a) })
	}
	return g.Wait()
}

// stateItem is the usage state item (pk=usage sk=state); times are Unix
// nanoseconds.
type stateItem struct {
	Counted bool  `dynamodbav:"counted"`
	Block   int64 `dynamodbav:"block"`
	Last    int64 `dynamodbav:"last"`
	Lease   int64 `dynamodbav:"lease"`
}

// UsageState implements quota.StateStore.
func (s *Usage) UsageState(ctx context.Context) (quota.State, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table, Key: s.usageKey(skState), ConsistentRead: aws.Bool(true),
	}, s.callOpts...)
	if err != nil {
		return quota.State{}, s.fail(ctx, err, "read usage state")
	}
	var it stateItem
	if err := unmarshal(out.Item, &it); err != nil {
		return quota.State{}, fmt.Errorf("read usage state: decode: %w", err)
	}
	return quota.State{Counted: it.Counted, BlockSize: it.Block, LastCleanUp: fromNanos(it.Last), LeaseUntil: fromNanos(it.Lease)}, nil
}

// Rebase implements quota.StateStore: the layers are marked first, so a
// crash in between leaves usage still uncounted (and Rebase is redone).
func (s *Usage) Rebase(ctx context.Context, blockSize int64, layers []string) error {
	if err := s.MarkDirty(ctx, layers); err != nil {
		return err
	}
	e := newExpr()
	s.wrote("Rebase", 1)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table,
		Key:       s.usageKey(skState),
		UpdateExpression: aws.String("SET " + e.n(aCounted) + " = " + e.v(&types.AttributeValueMemberBOOL{Value: true}) +
			", " + e.n(aBlock) + " = " + e.v(num(blockSize))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
	if err != nil {
		return s.fail(ctx, err, "rebase usage")
	}
	return nil
}

// ClaimCleanUp implements quota.StateStore: one conditional UpdateItem.
func (s *Usage) ClaimCleanUp(ctx context.Context, now time.Time, interval, lease time.Duration) (bool, error) {
	e := newExpr()
	s.wrote("ClaimCleanUp", 1)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table,
		Key:       s.usageKey(skState),
		UpdateExpression: aws.String("SET " + e.n(aLast) + " = " + e.v(num(now.UnixNano())) +
			", " + e.n(aLease) + " = " + e.v(num(now.Add(lease).UnixNano()))),
		ConditionExpression: aws.String("(attribute_not_exists(" + e.n(aLast) + ") OR " + e.n(aLast) + " <= " +
			e.v(num(now.Add(-interval).UnixNano())) + ") AND (attribute_not_exists(" + e.n(aLease) + ") OR " +
			e.n(aLease) + " <= " + e.v(num(now.UnixNano())) + ")"),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, s.fail(ctx, err, "claim a clean-up")
	}
	return true, nil
}

// ReleaseCleanUp implements quota.StateStore.
func (s *Usage) ReleaseCleanUp(ctx context.Context, claimed time.Time) error {
	e := newExpr()
	s.wrote("ReleaseCleanUp", 1)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       s.usageKey(skState),
		UpdateExpression:          aws.String("SET " + e.n(aLease) + " = " + e.v(num(0))),
		ConditionExpression:       aws.String(e.n(aLast) + " = " + e.v(num(claimed.UnixNano()))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
	if err != nil && !isConditionFailed(err) {
		return s.fail(ctx, err, "release a clean-up")
	}
	return nil
}
