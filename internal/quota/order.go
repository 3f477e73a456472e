package quota

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ErrUnordered is what a store's PagesInOrder returns when it cannot read
// pages in expiration order (a DynamoDB table still without its order
// indexes); the clean-up then reads and sorts every page, as it did before
// stores kept the order.
var ErrUnordered = errors.New("the store keeps no expiration order")

// OrderKey returns page p's place in the expiration order of policy as a
// string: keys compare (byte by byte) as Order orders pages, so a store
// keeps a layer's pages in order by keeping them sorted by key (a DynamoDB
// index's sort key, a bbolt bucket's keys). LRU: the time of last use,
// then the creation, then the page id; LFU: the frequency, then as LRU.
// A key changes only when the page's creation, last access or hits do, so
// stores recompute it where they write those (a flush of reads, a new page).
func OrderKey(p Page, policy string) string {
	b := make([]byte, 0, 16+1+16+1+16+1+len(p.Key.Set.Layer)+40)
	if policy == PolicyLFU {
		// Frequency ≥ 0: the bits of a non-negative float order as it does.
		b = hex16(b, math.Float64bits(max(p.Frequency(), 0)))
		b = append(b, '|')
	}
	b = hex16(b, timeBits(p.Used()))
	b = append(b, '|')
	b = hex16(b, timeBits(p.Created))
	b = append(b, '|')
	b = append(b, p.Key.ID()...)
	return string(b)
}

// timeBits maps times to unsigned integers in their order, the zero time
// (a page never created or read) first.
func timeBits(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano()) ^ 1<<63
}

// hex16 appends v as 16 lower-case hexadecimal digits.
func hex16(b []byte, v uint64) []byte {
	s := strconv.FormatUint(v, 16)
	for i := len(s); i < 16; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// Batches of pages a clean-up reads from one layer: the first small (a
// clean-up that frees little reads little), each next one twice the last,
// up to the largest, so that a clean-up reads at most about twice the
// pages it deletes plus the first batch of each layer.
const (
	firstOrderBatch = 8
	maxOrderBatch   = 512
)

// pageStream reads one layer's pages in expiration order, a batch at a time.
type pageStream struct {
	store  PageStore
	layer  string
	policy string
	buf    []Page
	keys   []string
	cursor string
	batch  int
	done   bool
	read   int64 // pages read so far
}

// fill reads the next batch when the buffer is empty; it reports whether
// a page is at the head.
func (s *pageStream) fill(ctx context.Context) (bool, error) {
	for len(s.buf) == 0 && !s.done {
		ps, next, err := s.store.PagesInOrder(ctx, s.layer, s.policy, s.cursor, s.batch)
		if err != nil {
			return false, err
		}
		s.read += int64(len(ps))
		s.batch = min(s.batch*2, maxOrderBatch)
		s.buf, s.keys = ps, make([]string, len(ps))
		for i, p := range ps {
			s.keys[i] = OrderKey(p, s.policy)
		}
		s.cursor, s.done = next, next == ""
	}
	return len(s.buf) > 0, nil
}

// streams is a heap of page streams by the key of their head page.
type streams []*pageStream

func (h streams) Len() int           { return len(h) }
func (h streams) Less(i, j int) bool { return h[i].keys[0] < h[j].keys[0] }
func (h streams) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *streams) Push(x any)        { *h = append(*h, x.(*pageStream)) }
func (h *streams) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// OrderedPages merges the expiration order of several layers' pages.
type OrderedPages struct {
	h    streams
	all  []*pageStream
	init bool
}

// NewOrderedPages returns the pages of layers in the expiration order of
// policy, read from store a batch at a time.
func NewOrderedPages(store PageStore, layers []string, policy string) *OrderedPages {
	o := &OrderedPages{}
	for _, l := range layers {
		o.all = append(o.all, &pageStream{store: store, layer: l, policy: policy, batch: firstOrderBatch})
	}
	return o
}

// Next returns the next page; ok is false when there are no more.
func (o *OrderedPages) Next(ctx context.Context) (p Page, ok bool, err error) {
	if !o.init {
		o.init = true
		for _, s := range o.all {
			ok, err := s.fill(ctx)
			if err != nil {
				return Page{}, false, fmt.Errorf("read the pages of layer %s in order: %w", s.layer, err)
			}
			if ok {
				o.h = append(o.h, s)
			}
		}
		heap.Init(&o.h)
	}
	if len(o.h) == 0 {
		return Page{}, false, nil
	}
	s := o.h[0]
	p = s.buf[0]
	s.buf, s.keys = s.buf[1:], s.keys[1:]
	more, err := s.fill(ctx)
	if err != nil {
		return Page{}, false, fmt.Errorf("read the pages of layer %s in order: %w", s.layer, err)
	}
	if more {
		heap.Fix(&o.h, 0)
	} else {
		heap.Pop(&o.h)
	}
	return p, true, nil
}

// Read returns the number of pages read from the store so far.
func (o *OrderedPages) Read() int64 {
	var n int64
	for _, s := range o.all {
		n += s.read
	}
	return n
}
