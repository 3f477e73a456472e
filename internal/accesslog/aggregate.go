package accesslog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PageHits is the reads of one page in a batch: how many, and the latest.
type PageHits struct {
	Page Page
	Hits int64
	Last time.Time
}

// FlushFunc receives a batch of pages. The batch is sorted by page (so
// that the same log gives the same batches, in the same order) and is
// reused once the call returns: a FlushFunc must not keep it.
type FlushFunc func(ctx context.Context, batch []PageHits) error

// DefaultMaxPages is the default size of a batch: the most pages one
// batch of the quota's read log may carry (quota.MaxReadBatch).
const DefaultMaxPages = 5_000

// Aggregator counts reads per page and hands them on in batches of at
// most its maximum number of pages, so its memory is bounded whatever the
// number of reads. It is not safe for concurrent use.
type Aggregator struct {
	max     int
	flush   FlushFunc
	index   map[Page]int // page → position in batch
	batch   []PageHits
	batches int64
	pages   int64
}

// NewAggregator returns an aggregator that passes batches of at most
// maxPages pages (DefaultMaxPages when maxPages ≤ 0) to flush.
func NewAggregator(maxPages int, flush FlushFunc) *Aggregator {
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	return &Aggregator{max: maxPages, flush: flush, index: map[Page]int{}}
}

// Add counts one read of page p at time at. When p is a new page and the
// aggregator holds its maximum already, it flushes first; the error is
// the flush's.
func (a *Aggregator) Add(ctx context.Context, p Page, at time.Time) error {
	if i, ok := a.index[p]; ok {
		h := &a.batch[i]
		h.Hits++
		if at.After(h.Last) {
			h.Last = at
		}
		return nil
	}
	if len(a.batch) >= a.max {
		if err := a.Flush(ctx); err != nil {
			return err
		}
	}
	a.index[p] = len(a.batch)
	a.batch = append(a.batch, PageHits{Page: p, Hits: 1, Last: at})
	return nil
}

// Len returns the number of pages held, not flushed yet.
func (a *Aggregator) Len() int { return len(a.batch) }

// Flush passes the pages held to the flush callback, if there are any,
// and starts a new batch (also when the callback fails: the batch is then
// dropped).
func (a *Aggregator) Flush(ctx context.Context) error {
	n := len(a.batch)
	if n == 0 {
		return nil
	}
	slices.SortFunc(a.batch, func(x, y PageHits) int { return comparePages(x.Page, y.Page) })
	err := a.flush(ctx, a.batch)
	a.batches++
	a.pages += int64(n)
	clear(a.index)
	clear(a.batch) // drop the strings for the collector
	a.batch = a.batch[:0]
	if err != nil {
		return fmt.Errorf("flush batch %d of %d pages: %w", a.batches, n, err)
	}
	return nil
}

// Batches returns the number of batches flushed and the pages they held.
func (a *Aggregator) Batches() (batches, pages int64) { return a.batches, a.pages }

func comparePages(a, b Page) int {
	if c := strings.Compare(a.Layer, b.Layer); c != 0 {
		return c
	}
	if c := strings.Compare(a.GridSetID, b.GridSetID); c != 0 {
		return c
	}
	if c := strings.Compare(a.FormatID, b.FormatID); c != 0 {
		return c
	}
	if c := strings.Compare(a.ParametersID, b.ParametersID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Z, b.Z); c != 0 {
		return c
	}
	if c := cmp.Compare(a.X, b.X); c != 0 {
		return c
	}
	return cmp.Compare(a.Y, b.Y)
}
