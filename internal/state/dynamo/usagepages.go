// quota.UsageStore, second half: the pages and layer totals the clean-up
// reads and removes (quota.PageStore) and the recount that replaces them
// (quota.RecountStore). The usage items are described in usage.go.

package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/apperr"
	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// pageItem is a page item (pk=pages#<layer>, sk=<page id>); times are
// Unix nanoseconds.
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
	LRU     string `dynamodbav:"lru"`
	LFU     string `dynamodbav:"lfu"`
}

// decodePage decodes a page item.
func decodePage(item map[string]types.AttributeValue) (quota.Page, error) {
	var it pageItem
	if err := unmarshal(item, &it); err != nil {
		return quota.Page{}, fmt.Errorf("decode page item: %w", err)
	}
	return quota.Page{
		Key: quota.PageKey{Set: tilestore.SetName{Layer: it.Layer, GridSetID: it.Grid, FormatID: it.Fmt, ParametersID: it.Params},
			Z: it.Z, X: it.X, Y: it.Y},
		Tiles: it.Tiles, Bytes: it.Bytes, Created: fromNanos(it.Created), LastAccess: fromNanos(it.Access), Hits: it.Hits,
	}, nil
}

// allPages reads every page item of a layer, empty ones included.
func (s *Usage) allPages(ctx context.Context, layer string) ([]quota.Page, error) {
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
func (s *Usage) Pages(ctx context.Context, layer string) ([]quota.Page, error) {
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

// LevelPages implements quota.PageStore: one Query of the layer's pages
// partition with begins_with on the sort key (the page id, whose prefix
// is the set and level), starting after the page after, Limit limit (at
// most 1000 a call).
func (s *Usage) LevelPages(ctx context.Context, set tilestore.SetName, z int, after string, limit int) ([]quota.Page, string, error) {
	prefix := quota.LevelPrefix(set, z)
	what := "read the pages of level " + strconv.Itoa(z) + " of " + set.ID()
	if after != "" && !strings.HasPrefix(after, prefix) {
		return nil, "", apperr.Invalidf("%s is not a page of level %d of %s", apperr.Show(after), z, set.ID())
	}
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: &s.table,
		KeyConditionExpression: aws.String(e.n(attrPK) + " = " + e.v(str(s.pagesPK(set.Layer))) +
			" AND begins_with(" + e.n(attrSK) + ", " + e.v(str(prefix)) + ")"),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(min(max(limit, 1), maxLevelPagesRead))),
	}
	if after != "" {
		in.ExclusiveStartKey = s.key(pkPagesPre+set.Layer, after)
	}
	out, err := s.client.Query(ctx, in, s.callOpts...)
	if err != nil {
		return nil, "", s.fail(ctx, err, "%s", what)
	}
	pages := make([]quota.Page, 0, len(out.Items))
	for _, item := range out.Items {
		p, err := decodePage(item)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", what, err)
		}
		// A grid set id holding "|" could share the prefix: the item says
		// which set and level the page is of.
		if (p.Tiles != 0 || p.Bytes != 0) && p.Key.Set == set && p.Key.Z == z {
			pages = append(pages, p)
		}
	}
	var next string
	if len(out.LastEvaluatedKey) > 0 {
		next, _ = strAttr(out.LastEvaluatedKey, attrSK)
	}
	return pages, next, nil
}

// maxLevelPagesRead caps the items of one LevelPages Query.
const maxLevelPagesRead = 1000

// pageRemoval is the transaction item that deletes a page if it still
// holds what it held when read.
func (s *Usage) pageRemoval(p quota.Page) types.TransactWriteItem {
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
func (s *Usage) DeletePage(ctx context.Context, key quota.PageKey) (quota.Page, bool, error) {
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

// layerItem is a layer's totals item (pk=usage sk=layer#<name>).
type layerItem struct {
	Layer   string `dynamodbav:"layer"`
	Tiles   int64  `dynamodbav:"tiles"`
	Bytes   int64  `dynamodbav:"bytes"`
	Version int64  `dynamodbav:"version"`
	Dirty   bool   `dynamodbav:"dirty"`
}

// Layers implements quota.PageStore: one Query of the usage partition.
func (s *Usage) Layers(ctx context.Context) ([]quota.LayerUsage, error) {
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

// ReplaceLayer implements quota.RecountStore: it reads the layer's pages a
// page of the Query answer at a time, comparing each with its count, and
// writes the differences in transactions of up to 99 pages as they come,
// each conditional on the layer's version and bumping it; the last one
// also sets the totals, clears the dirty flag and marks the layer's pages
// ordered. When a transaction finds the version moved, the recount stops
// there (Conflict) and the layer stays dirty. Memory holds the counts and
// one transaction, not the layer's pages.
func (s *Usage) ReplaceLayer(ctx context.Context, layer string, version int64, counts []quota.PageDelta, now time.Time) error {
	what := "recount layer " + layer
	var tiles, bytes int64
	want := make(map[quota.PageKey]int, len(counts)) // index in counts
	for i, c := range counts {
		if c.Tiles == 0 && c.Bytes == 0 {
			continue
		}
		want[c.Page] = i
		tiles += c.Tiles
		bytes += c.Bytes
	}
	seen := make(map[quota.PageKey]bool, len(want))
	v := version
	var ops []types.TransactWriteItem
	// flush writes ops, all of them when last (with the totals), else
	// whole transactions only.
	flush := func(last bool) error {
		for first := true; (first && last) || len(ops) >= maxTxItems-1 || (last && len(ops) > 0); first = false {
			n := min(len(ops), maxTxItems-1)
			final := last && n == len(ops)
			e := newExpr()
			update := "SET " + e.n(aLayer) + " = " + e.v(str(layer)) + ", " + e.n(aVersion) + " = " + e.v(num(v+1))
			if final {
				update += ", " + e.n(aTiles) + " = " + e.v(num(tiles)) + ", " + e.n(aBytes) + " = " + e.v(num(bytes)) +
					", " + e.n(aDirty) + " = " + e.v(&types.AttributeValueMemberBOOL{Value: false}) +
					", " + e.n(aOrdered) + " = " + e.v(num(1))
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
			if final {
				return nil
			}
		}
		return nil
	}
	// set is the write of count c to a page: p as stored when found.
	set := func(c quota.PageDelta, p quota.Page, found, keyed bool) {
		e := newExpr()
		var keys string
		switch {
		case !found:
			keys = ", " + newPageKeys(e, c.Page, now)
		case !keyed:
			// A page recorded before the order keys: those of its use as
			// read (the recount keeps its use; a read flushed meanwhile
			// moves it again).
			keys = ", " + orderKeys(e, p)
		}
		ops = append(ops, types.TransactWriteItem{Update: &types.Update{
			TableName: &s.table,
			Key:       s.pageKey(c.Page),
			UpdateExpression: aws.String("SET " + pageSet(e, c.Page, now) + ", " + e.n(aTiles) + " = " + e.v(num(c.Tiles)) +
				", " + e.n(aBytes) + " = " + e.v(num(c.Bytes)) + keys),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
		}})
	}
	err := s.eachPage(ctx, layer, func(items []map[string]types.AttributeValue) error {
		for _, item := range items {
			p, err := decodePage(item)
			if err != nil {
				return err
			}
			i, ok := want[p.Key]
			if !ok {
				ops = append(ops, types.TransactWriteItem{Delete: &types.Delete{TableName: &s.table, Key: s.pageKey(p.Key)}})
				continue
			}
			seen[p.Key] = true
			lru, _ := strAttr(item, aLRU)
			lfu, _ := strAttr(item, aLFU)
			keyed := lru == quota.OrderKey(p, quota.PolicyLRU) && lfu == quota.OrderKey(p, quota.PolicyLFU)
			if c := counts[i]; p.Tiles != c.Tiles || p.Bytes != c.Bytes || !keyed {
				set(c, p, true, keyed)
			}
		}
		return flush(false)
	})
	if err != nil {
		return err
	}
	for _, c := range counts {
		if _, ok := want[c.Page]; ok && !seen[c.Page] {
			set(c, quota.Page{}, false, false)
			seen[c.Page] = true // a page counted twice is written once
		}
	}
	return flush(true)
}
