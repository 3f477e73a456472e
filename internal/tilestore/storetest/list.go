package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"tilecache/internal/tilestore"
)

// listKeys are chosen so that a naive directory walk gets the order wrong
// ('-' < '.' < '/' < '0'), prefixes end mid-segment, and GeoWebCache keys
// with ':' and '.' appear.
var listKeys = []string{
	"a.png",
	"a/b.png",
	"a/b/1.png",
	"a/b/2.png",
	"a/bc/1.png",
	"ab/1.png",
	"topp:states/EPSG:4326/png/default/3/5/10.png",
	"topp:states/EPSG:4326/png/default/3/5/2.png",
	"topp:states/EPSG:900913/jpeg/default/0/0/0.jpeg",
	"topp:states/metadata.properties",
	"topp:states2/EPSG:4326/png/default/0/0/0.png",
	"x-y/z",
	"x.y/z",
	"x/y",
	"x0/y",
}

func testList(t *testing.T, newStore func(t *testing.T) tilestore.Store) {
	t.Run("empty store", func(t *testing.T) {
		s := newStore(t)
		if got := mustList(t, s, ""); len(got) != 0 {
			t.Errorf("List(\"\") on an empty store: got %v, want none", keysOf(got))
		}
	})

	s := newStore(t)
	size := make(map[string]int64)
	for i, k := range slices.Backward(listKeys) { // not in order
		size[k] = int64(i + 1)
		mustPut(t, s, k, randomBytes(i+1, uint64(i)), tilestore.Meta{ContentType: "image/png"})
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", listKeys},
		{"a", listKeys[:6]},
		{"a/", []string{"a/b.png", "a/b/1.png", "a/b/2.png", "a/bc/1.png"}},
		{"a/b", []string{"a/b.png", "a/b/1.png", "a/b/2.png", "a/bc/1.png"}},
		{"a/b/", []string{"a/b/1.png", "a/b/2.png"}},
		{"a/bc", []string{"a/bc/1.png"}},
		{"a/b/2.png", []string{"a/b/2.png"}},
		{"a/b/2.png/", nil},
		{"topp:states/", listKeys[6:10]},
		{"topp:states", listKeys[6:11]},
		{"topp:states/EPSG:4326/png/default/3/5/", listKeys[6:8]},
		{"topp:states/EPSG:4326/png/default/3/5/1", listKeys[6:7]},
		{"topp:states/EPSG:4326/png/default/3/5/2.png", listKeys[7:8]},
		{"x", listKeys[11:15]},
		{"x/", []string{"x/y"}},
		{"x.", []string{"x.y/z"}},
		{"b", nil},
		{"zzz/", nil},
		{"/", nil},
		{"../", nil},
		{"a/../", nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("prefix %q", tt.prefix), func(t *testing.T) {
			objs := mustList(t, s, tt.prefix)
			if got := keysOf(objs); !slices.Equal(got, tt.want) {
				t.Errorf("List(%q): got %q, want %q", tt.prefix, got, tt.want)
			}
			for _, o := range objs {
				if o.Size != size[o.Key] {
					t.Errorf("List(%q): %q: got size %d, want %d", tt.prefix, o.Key, o.Size, size[o.Key])
				}
				if o.Modified.IsZero() {
					t.Errorf("List(%q): %q: got zero Modified", tt.prefix, o.Key)
				}
			}
		})
	}
}

func testListStops(t *testing.T, newStore func(t *testing.T) tilestore.Store) {
	s := newStore(t)
	keys := []string{"s/1/a.png", "s/2/b.png", "s/2/c.png", "s/3/d.png", "s/e.png"}
	for _, k := range keys {
		mustPut(t, s, k, []byte(k), tilestore.Meta{ContentType: "image/png"})
	}
	errStop := errors.New("stop here")
	for stopAt := 1; stopAt <= len(keys); stopAt++ {
		t.Run(strconv.Itoa(stopAt), func(t *testing.T) {
			var got []string
			err := s.List(t.Context(), "s/", func(o tilestore.Object) error {
				got = append(got, o.Key)
				if len(got) == stopAt {
					return fmt.Errorf("callback: %w", errStop)
				}
				return nil
			})
			if !errors.Is(err, errStop) {
				t.Errorf("List: got error %v, want one wrapping %v", err, errStop)
			}
			if want := keys[:stopAt]; !slices.Equal(got, want) {
				t.Errorf("List stopping at call %d: got calls for %q, want %q", stopAt, got, want)
			}
		})
	}
}

// testListAfter: a store that lists from a key on (tilestore.AfterLister)
// lists exactly the keys of List after it, in the same order.
func testListAfter(t *testing.T, newStore func(t *testing.T) tilestore.Store) {
	s := newStore(t)
	al, ok := s.(tilestore.AfterLister)
	if !ok {
		t.Skip("the store does not list from a key on")
	}
	for i, k := range listKeys {
		mustPut(t, s, k, randomBytes(i+1, uint64(i)), tilestore.Meta{ContentType: "image/png"})
	}
	for _, prefix := range []string{"", "a", "a/", "topp:states/", "x"} {
		all := keysOf(mustList(t, s, prefix))
		afters := append([]string{"", "a/b", "a/b/", "a/b/1.png", "a/bc/1.png", "topp:states/EPSG:4326/png/default/3/5/10.png", "zz", "0"}, all...)
		for _, after := range afters {
			var want []string
			for _, k := range all {
				if after == "" || k > after {
					want = append(want, k)
				}
			}
			var got []string
			if err := al.ListAfter(t.Context(), prefix, after, func(o tilestore.Object) error {
				got = append(got, o.Key)
				return nil
			}); err != nil {
				t.Fatalf("ListAfter(%q, %q): %v", prefix, after, err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("ListAfter(%q, %q) = %v, want %v", prefix, after, got, want)
			}
		}
	}
}
