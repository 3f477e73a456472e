package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/apperr"
	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// Usage layout: bucket "usage" holds the key "state" and two nested
// buckets, "layers" (layer name -> totals) and "pages" (one nested bucket
// per layer name, page id -> page record). Every operation is one
// transaction, so a recount (ReplaceLayer) is atomic here.
var (
	bucketUsage  = []byte("usage")
	bucketLayers = []byte("layers")
	bucketPages  = []byte("pages")
	keyState     = []byte("state")
)

// Usage is the usage store (quota.UsageStore) in a DB: tile pages,
// layer totals, the usage state and the disk-quota configuration
// (quota.go).
type Usage struct{ *store }

var _ quota.UsageStore = (*Usage)(nil)

type pageRecord struct {
	Grid    string `json:"g"`
	Format  string `json:"f"`
	Params  string `json:"p"`
	Z       int    `json:"z"`
	X       int64  `json:"x"`
	Y       int64  `json:"y"`
	Tiles   int64  `json:"tiles"`
	Bytes   int64  `json:"bytes"`
	Created int64  `json:"created,omitempty"` // Unix nanoseconds
	Access  int64  `json:"access,omitempty"`
	Hits    int64  `json:"hits,omitempty"`
}

type layerRecord struct {
	Tiles   int64 `json:"tiles"`
	Bytes   int64 `json:"bytes"`
	Version int64 `json:"version"`
	Dirty   bool  `json:"dirty,omitempty"`
}

type stateRecord struct {
	Counted   bool  `json:"counted"`
	BlockSize int64 `json:"blockSize"`
	Last      int64 `json:"last,omitempty"`
	Lease     int64 `json:"lease,omitempty"`
}

func initUsage(tx *bbolt.Tx) error {
	u, err := tx.CreateBucketIfNotExists(bucketUsage)
	if err != nil {
		return err
	}
	if _, err := u.CreateBucketIfNotExists(bucketLayers); err != nil {
		return err
	}
	_, err = u.CreateBucketIfNotExists(bucketPages)
	return err
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func layersBucket(tx *bbolt.Tx) *bbolt.Bucket { return tx.Bucket(bucketUsage).Bucket(bucketLayers) }
func pagesBucket(tx *bbolt.Tx) *bbolt.Bucket  { return tx.Bucket(bucketUsage).Bucket(bucketPages) }

func getJSON(b *bbolt.Bucket, key []byte, v any) (bool, error) {
	data := b.Get(key)
	if data == nil {
		return false, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("decode usage record %q: %w", key, err)
	}
	return true, nil
}

func putJSON(b *bbolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode usage record %q: %w", key, err)
	}
	return b.Put(key, data)
}

func getLayer(tx *bbolt.Tx, layer string) (layerRecord, error) {
	var r layerRecord
	_, err := getJSON(layersBucket(tx), []byte(layer), &r)
	return r, err
}

// changeLayer applies fn to a layer's totals and bumps its version.
func changeLayer(tx *bbolt.Tx, layer string, fn func(*layerRecord)) error {
	r, err := getLayer(tx, layer)
	if err != nil {
		return err
	}
	fn(&r)
	r.Version++
	return putJSON(layersBucket(tx), []byte(layer), r)
}

func layerPages(tx *bbolt.Tx, layer string, create bool) (*bbolt.Bucket, error) {
	if create {
		return pagesBucket(tx).CreateBucketIfNotExists([]byte(layer))
	}
	return pagesBucket(tx).Bucket([]byte(layer)), nil
}

func recordPage(layer string, r pageRecord) quota.Page {
	return quota.Page{
		Key: quota.PageKey{Set: tilestore.SetName{Layer: layer, GridSetID: r.Grid, FormatID: r.Format, ParametersID: r.Params},
			Z: r.Z, X: r.X, Y: r.Y},
		Tiles: r.Tiles, Bytes: r.Bytes, Created: fromNanos(r.Created), LastAccess: fromNanos(r.Access), Hits: r.Hits,
	}
}

func newPageRecord(k quota.PageKey, now time.Time) pageRecord {
	return pageRecord{Grid: k.Set.GridSetID, Format: k.Set.FormatID, Params: k.Set.ParametersID, Z: k.Z, X: k.X, Y: k.Y, Created: nanos(now)}
}

// applyDeltas adds deltas to pages and layer totals within tx. A page left
// without tiles and bytes is removed.
func applyDeltas(tx *bbolt.Tx, deltas []quota.PageDelta, now time.Time) error {
	sums := map[string]*layerRecord{}
	for _, d := range deltas {
		layer := d.Page.Set.Layer
		b, err := layerPages(tx, layer, true)
		if err != nil {
			return err
		}
		key := []byte(d.Page.ID())
		r := newPageRecord(d.Page, now)
		found, err := getJSON(b, key, &r)
		if err != nil {
			return err
		}
		var old *quota.Page
		if found {
			p := recordPage(layer, r)
			old = &p
		}
		r.Tiles += d.Tiles
		r.Bytes += d.Bytes
		var cur *quota.Page
		if r.Tiles == 0 && r.Bytes == 0 {
			err = b.Delete(key)
		} else {
			err = putJSON(b, key, r)
			p := recordPage(layer, r)
			cur = &p
		}
		if err != nil {
			return err
		}
		if err := reorder(tx, layer, old, cur); err != nil {
			return err
		}
		s := sums[layer]
		if s == nil {
			s = &layerRecord{}
			sums[layer] = s
		}
		s.Tiles += d.Tiles
		s.Bytes += d.Bytes
	}
	for layer, s := range sums {
		if err := changeLayer(tx, layer, func(r *layerRecord) { r.Tiles += s.Tiles; r.Bytes += s.Bytes }); err != nil {
			return err
		}
	}
	return nil
}

// ApplyDeltas implements quota.Accounting.
func (s *Usage) ApplyDeltas(ctx context.Context, deltas []quota.PageDelta, now time.Time) error {
	if len(deltas) == 0 {
		return nil
	}
	return s.update(ctx, "apply usage changes", func(tx *bbolt.Tx) error { return applyDeltas(tx, deltas, now) })
}

// MarkDirty implements quota.Accounting.
func (s *Usage) MarkDirty(ctx context.Context, layers []string) error {
	if len(layers) == 0 {
		return nil
	}
	return s.update(ctx, "mark usage for a recount", func(tx *bbolt.Tx) error {
		for _, l := range layers {
			if err := changeLayer(tx, l, func(r *layerRecord) { r.Dirty = true }); err != nil {
				return err
			}
		}
		return nil
	})
}

// RemoveLayer implements quota.Accounting.
func (s *Usage) RemoveLayer(ctx context.Context, layer string, dirty bool) error {
	return s.update(ctx, "remove the usage of layer "+layer, func(tx *bbolt.Tx) error {
		if pagesBucket(tx).Bucket([]byte(layer)) != nil {
			if err := pagesBucket(tx).DeleteBucket([]byte(layer)); err != nil {
				return err
			}
		}
		if err := dropOrder(tx, layer); err != nil {
			return err
		}
		return changeLayer(tx, layer, func(r *layerRecord) { r.Tiles, r.Bytes, r.Dirty = 0, 0, dirty })
	})
}

// RecordAccess implements quota.AccessStore.
func (s *Usage) RecordAccess(ctx context.Context, accesses []quota.Access) error {
	if len(accesses) == 0 {
		return nil
	}
	return s.update(ctx, "record tile accesses", func(tx *bbolt.Tx) error {
		for _, a := range accesses {
			b, err := layerPages(tx, a.Page.Set.Layer, false)
			if err != nil || b == nil {
				continue
			}
			key := []byte(a.Page.ID())
			var r pageRecord
			if found, err := getJSON(b, key, &r); err != nil {
				return err
			} else if !found {
				continue
			}
			old := recordPage(a.Page.Set.Layer, r)
			r.Hits += a.Hits
			r.Access = max(r.Access, nanos(a.Last))
			if err := putJSON(b, key, r); err != nil {
				return err
			}
			cur := recordPage(a.Page.Set.Layer, r)
			if err := reorder(tx, a.Page.Set.Layer, &old, &cur); err != nil {
				return err
			}
		}
		return nil
	})
}

// Layers implements quota.PageStore.
func (s *Usage) Layers(ctx context.Context) ([]quota.LayerUsage, error) {
	var out []quota.LayerUsage
	err := s.view(ctx, "read layer usage", func(tx *bbolt.Tx) error {
		return layersBucket(tx).ForEach(func(k, v []byte) error {
			var r layerRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode usage of layer %q: %w", k, err)
			}
			out = append(out, quota.LayerUsage{Layer: string(k), Tiles: r.Tiles, Bytes: r.Bytes, Dirty: r.Dirty, Version: r.Version})
			return nil
		})
	})
	return out, err
}

// Pages implements quota.PageStore.
func (s *Usage) Pages(ctx context.Context, layer string) ([]quota.Page, error) {
	var out []quota.Page
	err := s.view(ctx, "read the pages of layer "+layer, func(tx *bbolt.Tx) error {
		b, _ := layerPages(tx, layer, false)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var r pageRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode page %q: %w", k, err)
			}
			if r.Tiles != 0 || r.Bytes != 0 {
				out = append(out, recordPage(layer, r))
			}
			return nil
		})
	})
	return out, err
}

// LevelPages implements quota.PageStore: a cursor Seek to the level's
// prefix (or past after) in the layer's pages bucket, then up to limit
// keys.
func (s *Usage) LevelPages(ctx context.Context, set tilestore.SetName, z int, after string, limit int) ([]quota.Page, string, error) {
	prefix := quota.LevelPrefix(set, z)
	if after != "" && !strings.HasPrefix(after, prefix) {
		return nil, "", apperr.Invalidf("%s is not a page of level %d of %s", apperr.Show(after), z, set.ID())
	}
	var out []quota.Page
	var next string
	err := s.view(ctx, "read the pages of level "+strconv.Itoa(z)+" of "+set.ID(), func(tx *bbolt.Tx) error {
		b, _ := layerPages(tx, set.Layer, false)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		k, v := c.Seek([]byte(prefix))
		if after != "" {
			k, v = c.Seek([]byte(after))
			if k != nil && string(k) == after {
				k, v = c.Next()
			}
		}
		for n := 0; k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
			if n == max(limit, 1) {
				return nil
			}
			n++
			next = string(k)
			var r pageRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode page %q: %w", k, err)
			}
			// A grid set id holding "|" could share the prefix: the
			// record says which set and level the page is of.
			if (r.Tiles != 0 || r.Bytes != 0) && r.Grid == set.GridSetID && r.Format == set.FormatID && r.Params == set.ParametersID && r.Z == z {
				out = append(out, recordPage(set.Layer, r))
			}
		}
		next = "" // the level ended
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// DeletePage implements quota.PageStore.
func (s *Usage) DeletePage(ctx context.Context, key quota.PageKey) (quota.Page, bool, error) {
	var removed quota.Page
	var found bool
	err := s.update(ctx, "remove page "+key.ID(), func(tx *bbolt.Tx) error {
		b, _ := layerPages(tx, key.Set.Layer, false)
		if b == nil {
			return nil
		}
		id := []byte(key.ID())
		var r pageRecord
		ok, err := getJSON(b, id, &r)
		if err != nil || !ok {
			return err
		}
		found, removed = true, recordPage(key.Set.Layer, r)
		if err := b.Delete(id); err != nil {
			return err
		}
		if err := reorder(tx, key.Set.Layer, &removed, nil); err != nil {
			return err
		}
		return changeLayer(tx, key.Set.Layer, func(l *layerRecord) { l.Tiles -= r.Tiles; l.Bytes -= r.Bytes })
	})
	return removed, found, err
}

// ReplaceLayer implements quota.RecountStore, in one transaction.
func (s *Usage) ReplaceLayer(ctx context.Context, layer string, version int64, counts []quota.PageDelta, now time.Time) error {
	return s.update(ctx, "recount layer "+layer, func(tx *bbolt.Tx) error {
		cur, err := getLayer(tx, layer)
		if err != nil {
			return err
		}
		if cur.Version != version {
			return apperr.New(apperr.Conflict, "usage of layer %s changed during its recount (version %d, not %d)", layer, cur.Version, version)
		}
		old, err := layerPages(tx, layer, false)
		if err != nil {
			return err
		}
		keep := map[string]pageRecord{}
		if old != nil {
			if err := old.ForEach(func(k, v []byte) error {
				var r pageRecord
				if err := json.Unmarshal(v, &r); err != nil {
					return fmt.Errorf("decode page %q: %w", k, err)
				}
				keep[string(k)] = r
				return nil
			}); err != nil {
				return err
			}
			if err := pagesBucket(tx).DeleteBucket([]byte(layer)); err != nil {
				return err
			}
		}
		if err := dropOrder(tx, layer); err != nil {
			return err
		}
		b, err := layerPages(tx, layer, true)
		if err != nil {
			return err
		}
		var total layerRecord
		for _, c := range counts {
			if c.Tiles == 0 && c.Bytes == 0 {
				continue
			}
			id := c.Page.ID()
			r, ok := keep[id]
			if !ok {
				r = newPageRecord(c.Page, now)
			}
			r.Tiles, r.Bytes = c.Tiles, c.Bytes
			if err := putJSON(b, []byte(id), r); err != nil {
				return err
			}
			total.Tiles += c.Tiles
			total.Bytes += c.Bytes
		}
		if _, err := ensureOrder(tx, layer); err != nil {
			return err
		}
		return changeLayer(tx, layer, func(l *layerRecord) { l.Tiles, l.Bytes, l.Dirty = total.Tiles, total.Bytes, false })
	})
}

func getState(tx *bbolt.Tx) (stateRecord, error) {
	var r stateRecord
	_, err := getJSON(tx.Bucket(bucketUsage), keyState, &r)
	return r, err
}

// UsageState implements quota.StateStore.
func (s *Usage) UsageState(ctx context.Context) (quota.State, error) {
	var r stateRecord
	err := s.view(ctx, "read usage state", func(tx *bbolt.Tx) (err error) {
		r, err = getState(tx)
		return err
	})
	return quota.State{Counted: r.Counted, BlockSize: r.BlockSize, LastCleanUp: fromNanos(r.Last), LeaseUntil: fromNanos(r.Lease)}, err
}

// Rebase implements quota.StateStore.
func (s *Usage) Rebase(ctx context.Context, blockSize int64, layers []string) error {
	return s.update(ctx, "rebase usage", func(tx *bbolt.Tx) error {
		for _, l := range layers {
			if err := changeLayer(tx, l, func(r *layerRecord) { r.Dirty = true }); err != nil {
				return err
			}
		}
		r, err := getState(tx)
		if err != nil {
			return err
		}
		r.Counted, r.BlockSize = true, blockSize
		return putJSON(tx.Bucket(bucketUsage), keyState, r)
	})
}

// ClaimCleanUp implements quota.StateStore.
func (s *Usage) ClaimCleanUp(ctx context.Context, now time.Time, interval, lease time.Duration) (bool, error) {
	claimed := false
	err := s.update(ctx, "claim a clean-up", func(tx *bbolt.Tx) error {
		r, err := getState(tx)
		if err != nil {
			return err
		}
		if r.Last != 0 && r.Last > now.Add(-interval).UnixNano() || r.Lease > now.UnixNano() {
			return nil
		}
		r.Last, r.Lease = now.UnixNano(), now.Add(lease).UnixNano()
		claimed = true
		return putJSON(tx.Bucket(bucketUsage), keyState, r)
	})
	return claimed, err
}

// ReleaseCleanUp implements quota.StateStore.
func (s *Usage) ReleaseCleanUp(ctx context.Context, claimed time.Time) error {
	return s.update(ctx, "release a clean-up", func(tx *bbolt.Tx) error {
		r, err := getState(tx)
		if err != nil || r.Last != claimed.UnixNano() {
			return err
		}
		r.Lease = 0
		return putJSON(tx.Bucket(bucketUsage), keyState, r)
	})
}
