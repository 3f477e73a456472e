package dynamo

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"tilecache/internal/quota"
)

// importBatch is the most items of one BatchWriteItem.
const importBatch = 25

// pageItemOf is the whole item of page p, as the store's writes leave it.
func (s *Usage) pageItemOf(p quota.Page) map[string]types.AttributeValue {
	item := s.pageKey(p.Key)
	item[aLayer] = str(p.Key.Set.Layer)
	item[aGrid] = str(p.Key.Set.GridSetID)
	item[aFmt] = str(p.Key.Set.FormatID)
	item[aParams] = str(p.Key.Set.ParametersID)
	item[aZ] = num(int64(p.Key.Z))
	item[aX] = num(p.Key.X)
	item[aY] = num(p.Key.Y)
	item[aTiles] = num(p.Tiles)
	item[aBytes] = num(p.Bytes)
	item[aCreated] = num(nanos(p.Created))
	if !p.LastAccess.IsZero() {
		item[aAccess] = num(nanos(p.LastAccess))
	}
	if p.Hits != 0 {
		item[aHits] = num(p.Hits)
	}
	item[aLRU] = str(quota.OrderKey(p, quota.PolicyLRU))
	item[aLFU] = str(quota.OrderKey(p, quota.PolicyLFU))
	return item
}

// ImportPages writes whole page records (new pages, or pages replaced as a
// whole) with BatchWriteItem, 25 items a call, writers calls at once, then
// adds their sums to the layers' totals. It is for loading usage in bulk
// (benchmarks, migrations): unlike ApplyDeltas it is not atomic, and a page
// it replaces is not subtracted from its layer first.
//
// A layer that had no item before (no usage recorded) is marked as having
// its pages in order, since every page the import writes has its order
// keys; any other is ordered by its first read in order.
func (s *Usage) ImportPages(ctx context.Context, pages []quota.Page, writers int) error {
	fresh := map[string]bool{}
	for _, p := range pages {
		l := p.Key.Set.Layer
		if _, seen := fresh[l]; seen {
			continue
		}
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: s.layerKey(l), ConsistentRead: aws.Bool(true)}, s.callOpts...)
		if err != nil {
			return s.fail(ctx, err, "import pages: read layer %s", l)
		}
		fresh[l] = len(out.Item) == 0
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(writers, 1))
	for i := 0; i < len(pages); i += importBatch {
		batch := pages[i:min(i+importBatch, len(pages))]
		g.Go(func() error {
			reqs := make([]types.WriteRequest, len(batch))
			for j, p := range batch {
				reqs[j] = types.WriteRequest{PutRequest: &types.PutRequest{Item: s.pageItemOf(p)}}
			}
			return s.batchWrite(gctx, "import pages", reqs)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	type sum struct{ tiles, bytes int64 }
	sums := map[string]*sum{}
	for _, p := range pages {
		l := p.Key.Set.Layer
		if sums[l] == nil {
			sums[l] = &sum{}
		}
		sums[l].tiles += p.Tiles
		sums[l].bytes += p.Bytes
	}
	for l, sm := range sums {
		if _, err := s.transact(ctx, "import the totals of layer "+l, []types.TransactWriteItem{s.layerChange(l, sm.tiles, sm.bytes)}); err != nil {
			return err
		}
		if fresh[l] {
			if err := s.markOrdered(ctx, l); err != nil {
				return err
			}
		}
	}
	return nil
}
