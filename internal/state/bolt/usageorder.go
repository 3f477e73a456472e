package bolt

import (
	"context"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/quota"
)

// Expiration order: bucket "usage" holds a bucket "order" with one bucket
// per layer, which holds one bucket per policy (LRU, LFU) mapping each
// page's quota.OrderKey to its page id, so that a clean-up reads the next
// pages in order instead of all of them. Every change of a page in the
// pages bucket changes its keys in the same transaction; a layer's order
// bucket missing (usage recorded before the store kept the order) is built
// from its pages by the first transaction that needs it.
var (
	bucketOrder = []byte("order")
	policies    = []string{quota.PolicyLRU, quota.PolicyLFU}
)

func orderRoot(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	return tx.Bucket(bucketUsage).CreateBucketIfNotExists(bucketOrder)
}

// ensureOrder returns the layer's order bucket, built from its pages if
// missing.
func ensureOrder(tx *bbolt.Tx, layer string) (*bbolt.Bucket, error) {
	root, err := orderRoot(tx)
	if err != nil {
		return nil, err
	}
	if ob := root.Bucket([]byte(layer)); ob != nil {
		return ob, nil
	}
	ob, err := root.CreateBucket([]byte(layer))
	if err != nil {
		return nil, err
	}
	for _, pol := range policies {
		if _, err := ob.CreateBucket([]byte(pol)); err != nil {
			return nil, err
		}
	}
	pages, _ := layerPages(tx, layer, false)
	if pages == nil {
		return ob, nil
	}
	err = pages.ForEach(func(k, v []byte) error {
		var r pageRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode page %q: %w", k, err)
		}
		return putOrder(ob, recordPage(layer, r))
	})
	return ob, err
}

// putOrder adds page p's keys, if it holds tiles or bytes.
func putOrder(ob *bbolt.Bucket, p quota.Page) error {
	if p.Tiles == 0 && p.Bytes == 0 {
		return nil
	}
	id := []byte(p.Key.ID())
	for _, pol := range policies {
		if err := ob.Bucket([]byte(pol)).Put([]byte(quota.OrderKey(p, pol)), id); err != nil {
			return err
		}
	}
	return nil
}

// reorder moves a page in the layer's order: it removes the keys of the
// page as it was (old, nil for a new page) and adds those of the page as
// it is (cur, nil for a removed one).
func reorder(tx *bbolt.Tx, layer string, old, cur *quota.Page) error {
	ob, err := ensureOrder(tx, layer)
	if err != nil {
		return err
	}
	if old != nil {
		for _, pol := range policies {
			if err := ob.Bucket([]byte(pol)).Delete([]byte(quota.OrderKey(*old, pol))); err != nil {
				return err
			}
		}
	}
	if cur != nil {
		return putOrder(ob, *cur)
	}
	return nil
}

// dropOrder forgets the layer's order (its pages are all gone or are
// being replaced).
func dropOrder(tx *bbolt.Tx, layer string) error {
	root, err := orderRoot(tx)
	if err != nil {
		return err
	}
	if root.Bucket([]byte(layer)) == nil {
		return nil
	}
	return root.DeleteBucket([]byte(layer))
}

// PagesInOrder implements quota.PageStore: a cursor over the layer's
// order bucket of policy, each key's page read from the pages bucket.
func (s *Usage) PagesInOrder(ctx context.Context, layer, policy, cursor string, limit int) ([]quota.Page, string, error) {
	if policy != quota.PolicyLFU {
		policy = quota.PolicyLRU
	}
	what := "read the pages of layer " + layer + " in order"
	var built bool
	if err := s.view(ctx, what, func(tx *bbolt.Tx) error {
		root := tx.Bucket(bucketUsage).Bucket(bucketOrder)
		built = root != nil && root.Bucket([]byte(layer)) != nil
		return nil
	}); err != nil {
		return nil, "", err
	}
	if !built {
		if err := s.update(ctx, what, func(tx *bbolt.Tx) error { _, err := ensureOrder(tx, layer); return err }); err != nil {
			return nil, "", err
		}
	}
	var out []quota.Page
	var next string
	err := s.view(ctx, what, func(tx *bbolt.Tx) error {
		root := tx.Bucket(bucketUsage).Bucket(bucketOrder)
		if root == nil || root.Bucket([]byte(layer)) == nil {
			return nil // removed meanwhile
		}
		pages, _ := layerPages(tx, layer, false)
		if pages == nil {
			return nil
		}
		c := root.Bucket([]byte(layer)).Bucket([]byte(policy)).Cursor()
		k, v := c.First()
		if cursor != "" {
			k, v = c.Seek([]byte(cursor))
			if k != nil && string(k) == cursor {
				k, v = c.Next()
			}
		}
		for ; k != nil && len(out) < max(limit, 1); k, v = c.Next() {
			var r pageRecord
			found, err := getJSON(pages, v, &r)
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("order key %q names page %q, which is missing", k, v)
			}
			out = append(out, recordPage(layer, r))
			next = string(k)
		}
		if k == nil {
			next = ""
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// DeletePageAsRead implements quota.PageStore: DeletePage (a read here is
// free).
func (s *Usage) DeletePageAsRead(ctx context.Context, p quota.Page) (quota.Page, bool, error) {
	return s.DeletePage(ctx, p.Key)
}
