package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/apperr"
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

var _ quota.UsageStore = (*Store)(nil)

func (s *Store) usageKey(sk string) map[string]types.AttributeValue { return s.key(pkUsage, sk) }
func (s *Store) layerKey(layer string) map[string]types.AttributeValue {
	return s.usageKey(skLayerPre + layer)
}
func (s *Store) pagesPK(layer string) string { return s.ns + pkPagesPre + layer }
func (s *Store) pageKey(k quota.PageKey) map[string]types.AttributeValue {
	return s.key(pkPagesPre+k.Set.Layer, k.ID())
}

// layerChange is the transaction item that adds to a layer's totals and
// bumps its version.
func (s *Store) layerChange(layer string, tiles, bytes int64) types.TransactWriteItem {
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
func (s *Store) pageChange(d quota.PageDelta, now time.Time) types.TransactWriteItem {
	e := newExpr()
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &s.table,
		Key:       s.pageKey(d.Page),
		UpdateExpression: aws.String("SET " + pageSet(e, d.Page, now) +
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
func (s *Store) usageItems(deltas []quota.PageDelta, now time.Time) []types.TransactWriteItem {
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
func (s *Store) ApplyDeltas(ctx context.Context, deltas []quota.PageDelta, now time.Time) error {
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
func (s *Store) MarkDirty(ctx context.Context, layers []string) error {
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

type pageItem struct {
	Layer   string `dynamodbav:"layer"`
	Grid    string `dynamodbav:"grid"`
	Fmt     string `dynamodbav:"fmt"`
	Params  string `dynamodbav:"params"`
	Z       int    `dynamodbav:"z"`
	X       int64  `dynamodbav:"x"`
	Y       int64  `dynamodbav:"y"`
	Tiles   int64  `dynamodbav:"tiles"`
	Bytes   int64  `dynamodbav:"bytes"`
	Created int64  `dynamodbav:"created"`
	Access  int64  `dynamodbav:"access"`
	Hits    int64  `dynamodbav:"hits"`
}

func decodePage(item map[string]types.AttributeValue) (quota.Page, error) {
	var it pageItem
	if err := unmarshal(item, &it); err != nil {
		return quota.Page{}, fmt.Errorf("decode page item: %w", err)
	}
	return quota.Page{
		Key: quota.PageKey{Set: quota.TileSet{Layer: it.Layer, GridSetID: it.Grid, FormatID: it.Fmt, ParametersID: it.Params},
			Z: it.Z, X: it.X, Y: it.Y},
		Tiles: it.Tiles, Bytes: it.Bytes, Created: fromNanos(it.Created), LastAccess: fromNanos(it.Access), Hits: it.Hits,
	}, nil
}

// allPages reads every page item of a layer, empty ones included.
func (s *Store) allPages(ctx context.Context, layer string) ([]quota.Page, error) {
	e := newExpr()
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    aws.String(e.n(attrPK) + " = " + e.v(str(s.pagesPK(layer)))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	var out []quota.Page
	for p.HasMorePages() {
		page, err := p.NextPage(ctx, s.callOpts...)
		if err != nil {
			return nil, s.fail(ctx, err, "read the pages of layer %s", layer)
		}
		for _, item := range page.Items {
			pg, err := decodePage(item)
			if err != nil {
				return nil, fmt.Errorf("read the pages of layer %s: %w", layer, err)
			}
			out = append(out, pg)
		}
	}
	return out, nil
}

// Pages implements quota.PageStore: one paged Query of the layer's pages.
func (s *Store) Pages(ctx context.Context, layer string) ([]quota.Page, error) {
	all, err := s.allPages(ctx, layer)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, p := range all {
		if p.Tiles != 0 || p.Bytes != 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

// pageRemoval is the transaction item that deletes a page if it still
// holds what it held when read.
func (s *Store) pageRemoval(p quota.Page) types.TransactWriteItem {
	e := newExpr()
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName: &s.table,
		Key:       s.pageKey(p.Key),
		ConditionExpression: aws.String(e.n(aTiles) + " = " + e.v(num(p.Tiles)) + " AND " +
			e.n(aBytes) + " = " + e.v(num(p.Bytes))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}}
}

// DeletePage implements quota.PageStore: a consistent read, then one
// transaction deleting the page (if unchanged since) and subtracting it
// from the layer, retried when a concurrent change came between.
func (s *Store) DeletePage(ctx context.Context, key quota.PageKey) (quota.Page, bool, error) {
	what := "remove page " + key.ID()
	for attempt := 0; attempt < transactAttempts; attempt++ {
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: &s.table, Key: s.pageKey(key), ConsistentRead: aws.Bool(true),
		}, s.callOpts...)
		if err != nil {
			return quota.Page{}, false, s.fail(ctx, err, "%s", what)
		}
		if len(out.Item) == 0 {
			return quota.Page{}, false, nil
		}
		p, err := decodePage(out.Item)
		if err != nil {
			return quota.Page{}, false, fmt.Errorf("%s: %w", what, err)
		}
		reasons, err := s.transact(ctx, what, []types.TransactWriteItem{s.pageRemoval(p), s.layerChange(key.Set.Layer, -p.Tiles, -p.Bytes)})
		if err != nil {
			return quota.Page{}, false, err
		}
		if reasons == nil {
			return p, true, nil
		}
	}
	return quota.Page{}, false, apperr.New(apperr.Conflict, "%s: the page kept changing", what)
}

// RemoveLayer implements quota.Accounting: the layer's pages are deleted
// in transactions of up to 99 (each conditional on the page being
// unchanged since it was read, and subtracting what it deletes from the
// layer), then the layer's flag is set. A page that changed meanwhile
// leaves the layer dirty.
func (s *Store) RemoveLayer(ctx context.Context, layer string, dirty bool) error {
	pages, err := s.allPages(ctx, layer)
	if err != nil {
		return err
	}
	what := "remove the usage of layer " + layer
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
	e := newExpr()
	update := "SET " + e.n(aLayer) + " = " + e.v(str(layer))
	if dirty {
		update += ", " + e.n(aDirty) + " = " + e.v(&types.AttributeValueMemberBOOL{Value: true})
	}
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

// RecordAccess implements quota.AccessStore: one conditional UpdateItem per
// page (a second one, without moving the last access, when another process
// recorded a later access first), up to eight at once.
func (s *Store) RecordAccess(ctx context.Context, accesses []quota.Access) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, accessWriter)
	for _, a := range accesses {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := s.recordAccess(ctx, a); err != nil {
				mu.Lock()
				first = cmpErr(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func (s *Store) recordAccess(ctx context.Context, a quota.Access) error {
	e := newExpr()
	s.wrote("recordAccess", 1)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table,
		Key:       s.pageKey(a.Page),
		UpdateExpression: aws.String("SET " + e.n(aAccess) + " = " + e.v(num(nanos(a.Last))) +
			" ADD " + e.n(aHits) + " " + e.v(num(a.Hits))),
		ConditionExpression: aws.String("attribute_exists(" + e.n(attrPK) + ") AND (attribute_not_exists(" + e.n(aAccess) +
			") OR " + e.n(aAccess) + " < " + e.v(num(nanos(a.Last))) + ")"),
		ExpressionAttributeNames:            e.Names(),
		ExpressionAttributeValues:           e.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, s.callOpts...)
	ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
	if !ok {
		if err != nil {
			return s.fail(ctx, err, "record accesses of page %s", a.Page.ID())
		}
		return nil
	}
	if len(ccf.Item) == 0 {
		return nil // no such page
	}
	e = newExpr()
	s.wrote("recordAccess", 1)
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       s.pageKey(a.Page),
		UpdateExpression:          aws.String("ADD " + e.n(aHits) + " " + e.v(num(a.Hits))),
		ConditionExpression:       aws.String("attribute_exists(" + e.n(attrPK) + ")"),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
	if err != nil && !isConditionFailed(err) {
		return s.fail(ctx, err, "record accesses of page %s", a.Page.ID())
	}
	return nil
}

type layerItem struct {
	Layer   string `dynamodbav:"layer"`
	Tiles   int64  `dynamodbav:"tiles"`
	Bytes   int64  `dynamodbav:"bytes"`
	Version int64  `dynamodbav:"version"`
	Dirty   bool   `dynamodbav:"dirty"`
}

// Layers implements quota.PageStore: one Query of the usage partition.
func (s *Store) Layers(ctx context.Context) ([]quota.LayerUsage, error) {
	e := newExpr()
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName: &s.table,
		KeyConditionExpression: aws.String(e.n(attrPK) + " = " + e.v(str(s.ns+pkUsage)) +
			" AND begins_with(" + e.n(attrSK) + ", " + e.v(str(skLayerPre)) + ")"),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	var out []quota.LayerUsage
	for p.HasMorePages() {
		page, err := p.NextPage(ctx, s.callOpts...)
		if err != nil {
			return nil, s.fail(ctx, err, "read layer usage")
		}
		for _, item := range page.Items {
			var it layerItem
			if err := unmarshal(item, &it); err != nil {
				return nil, fmt.Errorf("read layer usage: decode: %w", err)
			}
			out = append(out, quota.LayerUsage{Layer: it.Layer, Tiles: it.Tiles, Bytes: it.Bytes, Dirty: it.Dirty, Version: it.Version})
		}
	}
	return out, nil
}

// ReplaceLayer implements quota.RecountStore: it reads the layer's pages,
// then writes the differences in transactions of up to 99 pages, each
// conditional on the layer's version and bumping it; the last one also sets
// the totals and clears the dirty flag. When a transaction finds the
// version moved, the recount stops there (Conflict) and the layer stays
// dirty.
func (s *Store) ReplaceLayer(ctx context.Context, layer string, version int64, counts []quota.PageDelta, now time.Time) error {
	what := "recount layer " + layer
	cur, err := s.allPages(ctx, layer)
	if err != nil {
		return err
	}
	have := make(map[quota.PageKey]quota.Page, len(cur))
	for _, p := range cur {
		have[p.Key] = p
	}
	var ops []types.TransactWriteItem
	var tiles, bytes int64
	want := make(map[quota.PageKey]bool, len(counts))
	for _, c := range counts {
		if c.Tiles == 0 && c.Bytes == 0 {
			continue
		}
		want[c.Page] = true
		tiles += c.Tiles
		bytes += c.Bytes
		if p, ok := have[c.Page]; ok && p.Tiles == c.Tiles && p.Bytes == c.Bytes {
			continue
		}
		e := newExpr()
		ops = append(ops, types.TransactWriteItem{Update: &types.Update{
			TableName: &s.table,
			Key:       s.pageKey(c.Page),
			UpdateExpression: aws.String("SET " + pageSet(e, c.Page, now) + ", " + e.n(aTiles) + " = " + e.v(num(c.Tiles)) +
				", " + e.n(aBytes) + " = " + e.v(num(c.Bytes))),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
		}})
	}
	for _, p := range cur {
		if !want[p.Key] {
			ops = append(ops, types.TransactWriteItem{Delete: &types.Delete{TableName: &s.table, Key: s.pageKey(p.Key)}})
		}
	}
	v := version
	for first := true; first || len(ops) > 0; first = false {
		n := min(len(ops), maxTxItems-1)
		last := n == len(ops)
		e := newExpr()
		update := "SET " + e.n(aLayer) + " = " + e.v(str(layer)) + ", " + e.n(aVersion) + " = " + e.v(num(v+1))
		if last {
			update += ", " + e.n(aTiles) + " = " + e.v(num(tiles)) + ", " + e.n(aBytes) + " = " + e.v(num(bytes)) +
				", " + e.n(aDirty) + " = " + e.v(&types.AttributeValueMemberBOOL{Value: false})
		}
		cond := e.n(aVersion) + " = " + e.v(num(v))
		if v == 0 {
			cond = "attribute_not_exists(" + e.n(aVersion) + ") OR " + cond
		}
		items := append(ops[:n:n], types.TransactWriteItem{Update: &types.Update{
			TableName:                 &s.table,
			Key:                       s.layerKey(layer),
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
		}})
		reasons, err := s.transact(ctx, what, items)
		if err != nil {
			return err
		}
		if reasons != nil {
			return apperr.New(apperr.Conflict, "usage of layer %s changed during its recount", layer)
		}
		ops = ops[n:]
		v++
	}
	return nil
}

type stateItem struct {
	Counted bool  `dynamodbav:"counted"`
	Block   int64 `dynamodbav:"block"`
	Last    int64 `dynamodbav:"last"`
	Lease   int64 `dynamodbav:"lease"`
}

// UsageState implements quota.StateStore.
func (s *Store) UsageState(ctx context.Context) (quota.State, error) {
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
func (s *Store) Rebase(ctx context.Context, blockSize int64, layers []string) error {
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
func (s *Store) ClaimCleanUp(ctx context.Context, now time.Time, interval, lease time.Duration) (bool, error) {
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
func (s *Store) ReleaseCleanUp(ctx context.Context, claimed time.Time) error {
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

func unmarshal(item map[string]types.AttributeValue, v any) error {
	return attributevalue.UnmarshalMap(item, v)
}
