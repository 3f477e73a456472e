package storetest

import (
	"bytes"
	"strconv"
	"sync"
	"testing"

	"tilecache/internal/tilestore"
)

// testConcurrentPutGet overwrites one key from several goroutines while
// others read it: every Get must return one complete version, bytes and meta
// from the same Put. Run it with -race.
func testConcurrentPutGet(t *testing.T, newStore func(t *testing.T) tilestore.Store) {
	s := newStore(t)
	const (
		key      = "race/EPSG:4326/png/default/0/0/0.png"
		writers  = 4
		perWrite = 25
		readers  = 4
	)
	// Version v (1..writers*perWrite) is 512+13v copies of byte v; odd
	// versions carry a Cache-Control, even ones do not.
	version := func(v int) ([]byte, tilestore.Meta) {
		meta := tilestore.Meta{ContentType: "image/png"}
		if v%2 == 1 {
			meta.CacheControl = "max-age=" + strconv.Itoa(v)
		}
		return bytes.Repeat([]byte{byte(v)}, 512+13*v), meta
	}
	data, meta := version(0)
	mustPut(t, s, key, data, meta)

	ctx := t.Context()
	done := make(chan struct{})
	var writersWG, readersWG sync.WaitGroup
	for w := range writers {
		writersWG.Go(func() {
			for i := range perWrite {
				data, meta := version(w*perWrite + i + 1)
				if err := s.Put(ctx, key, data, meta); err != nil {
					t.Errorf("Put error: %v", err)
					return
				}
			}
		})
	}
	for range readers {
		readersWG.Go(func() {
			for reads := 0; ; reads++ {
				select {
				case <-done:
					if reads > 0 {
						return
					}
				default:
				}
				got, gotMeta, found, err := s.Get(ctx, key)
				if err != nil || !found {
					t.Errorf("Get during overwrites: got found=%v, err=%v; want found=true, err=nil", found, err)
					return
				}
				if len(got) == 0 {
					t.Errorf("Get during overwrites: got 0 bytes, want a complete version")
					return
				}
				want, wantMeta := version(int(got[0]))
				if !bytes.Equal(got, want) || gotMeta != wantMeta {
					t.Errorf("Get during overwrites: got a torn object: %d bytes starting %s with meta %+v; version %d is %d bytes with meta %+v",
						len(got), head(got), gotMeta, got[0], len(want), wantMeta)
					return
				}
			}
		})
	}
	writersWG.Wait()
	close(done)
	readersWG.Wait()
}
