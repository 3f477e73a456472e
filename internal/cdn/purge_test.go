package cdn

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/tilestore"
)

// recorder is a hand-written Invalidator that records calls; fail, when
// set, decides the answer of each call (to force throttling, which the
// CloudFront-compatible server used in the adapter's tests cannot).
type recorder struct {
	mu    sync.Mutex
	calls []call
	fail  func(n int) error
}

type call struct {
	ref   string
	paths []string
}

func (r *recorder) Invalidate(_ context.Context, ref string, paths []string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{ref, slices.Clone(paths)})
	if r.fail != nil {
		if err := r.fail(len(r.calls)); err != nil {
			return "", err
		}
	}
	return "I" + strings.Repeat("X", len(r.calls)), nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)) }

var states = tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, Prefix: "tiles", LayerID: "topp:states", Ext: "png"}

func TestPaths(t *testing.T) {
	other := states
	other.FormatID, other.Ext = "jpeg", "jpeg"
	spaced := states
	spaced.LayerID = "my layer*"
	tests := []struct {
		name   string
		record func(p *Purger)
		limit  int
		want   []string
	}{
		{"one level, several columns", func(p *Purger) { p.TilesChanged(states, 3, 0, 5) }, 15,
			[]string{"/topp:states/EPSG:4326/png/default/3/*"}},
		{"one column", func(p *Purger) { p.TilesChanged(states, 12, 77, 77) }, 15,
			[]string{"/topp:states/EPSG:4326/png/default/12/77/*"}},
		{"columns merge per level", func(p *Purger) {
			p.TilesChanged(states, 12, 77, 77)
			p.TilesChanged(states, 12, 78, 78)
			p.TilesChanged(states, 4, 1, 1)
		}, 15, []string{"/topp:states/EPSG:4326/png/default/12/*", "/topp:states/EPSG:4326/png/default/4/1/*"}},
		{"a layer prefix covers its tile sets", func(p *Purger) {
			p.TilesChanged(states, 3, 0, 5)
			p.PrefixChanged("tiles/topp:states/")
			p.KeysChanged("tiles/topp:states/EPSG:4326/png/default/tilemapresource.xml", "tiles/index.json")
		}, 15, []string{"/index.json", "/topp:states/*"}},
		{"too many levels: one path per tile set", func(p *Purger) {
			for z := range 20 {
				p.TilesChanged(states, z, 0, 1)
			}
			p.TilesChanged(other, 2, 0, 0)
		}, 15, []string{"/topp:states/EPSG:4326/jpeg/default/*", "/topp:states/EPSG:4326/png/default/*"}},
		{"too many tile sets: one path per layer", func(p *Purger) {
			p.TilesChanged(states, 1, 0, 1)
			p.TilesChanged(other, 2, 0, 0)
			p.KeysChanged("tiles/index.json")
		}, 1, []string{"/index.json", "/topp:states/*"}},
		{"documents stay exact paths beyond the wildcard limit", func(p *Purger) {
			p.TilesChanged(states, 3, 0, 5)
			for _, name := range []string{"tilemapresource.xml", "tilejson.json", "tilejson-xyz.json"} {
				p.KeysChanged("tiles/topp:states/EPSG:4326/png/default/" + name)
			}
			p.KeysChanged("tiles/topp:states/WMTSCapabilities.xml", "tiles/index.json", "tiles/ogcapi.json")
		}, 1, []string{"/index.json", "/ogcapi.json", "/topp:states/EPSG:4326/png/default/3/*",
			"/topp:states/EPSG:4326/png/default/tilejson-xyz.json", "/topp:states/EPSG:4326/png/default/tilejson.json",
			"/topp:states/EPSG:4326/png/default/tilemapresource.xml", "/topp:states/WMTSCapabilities.xml"}},
		{"too many layers: everything", func(p *Purger) {
			p.TilesChanged(states, 1, 0, 1)
			p.TilesChanged(spaced, 1, 0, 1)
		}, 1, []string{"/*"}},
		{"unsafe characters encoded, a literal star too", func(p *Purger) { p.TilesChanged(spaced, 0, 0, 0) }, 15,
			[]string{"/my%20layer%2A/EPSG:4326/png/default/0/0/*"}},
		{"keys outside the prefix are not served by the CDN", func(p *Purger) { p.KeysChanged("elsewhere/x.png") }, 15, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			p := NewPurger(rec, PurgerOptions{KeyPrefix: "tiles", MaxPaths: tt.limit}, quiet())
			tt.record(p)
			p.Flush(t.Context())
			var got []string
			if len(rec.calls) == 1 {
				got = rec.calls[0].paths
			} else if len(rec.calls) > 1 {
				t.Fatalf("got %d calls, want at most 1", len(rec.calls))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNilPurgerRecordsNothing(t *testing.T) {
	var p *Purger
	p.TilesChanged(states, 1, 0, 0)
	p.PrefixChanged("a/")
	p.KeysChanged("a")
	p.Flush(t.Context())
}

func TestThrottledBatchRetriedWithOneCallerRef(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{fail: func(n int) error {
			if n < 3 {
				return apperr.New(apperr.Unavailable, "TooManyInvalidationsInProgress")
			}
			return nil
		}}
		p := NewPurger(rec, PurgerOptions{Backoff: time.Second}, quiet())
		p.TilesChanged(states, 3, 1, 2)
		start := time.Now()
		p.Flush(t.Context())
		if len(rec.calls) != 3 {
			t.Fatalf("got %d calls, want 3", len(rec.calls))
		}
		if rec.calls[0].ref != rec.calls[2].ref {
			t.Errorf("caller references differ between retries: %s, %s", rec.calls[0].ref, rec.calls[2].ref)
		}
		if got, want := time.Since(start), 3*time.Second; got != want {
			t.Errorf("retries took %v, want %v (1s, then 2s)", got, want)
		}
	})
}

func TestUnsentChangesKeptForTheNextFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := true
		rec := &recorder{fail: func(int) error {
			if down {
				return apperr.New(apperr.Unavailable, "connection refused")
			}
			return nil
		}}
		p := NewPurger(rec, PurgerOptions{Attempts: 2}, quiet())
		p.TilesChanged(states, 3, 1, 2)
		p.Flush(t.Context())
		down = false
		p.TilesChanged(states, 4, 0, 0)
		p.Flush(t.Context())
		last := rec.calls[len(rec.calls)-1].paths
		want := []string{"/tiles/topp:states/EPSG:4326/png/default/3/*", "/tiles/topp:states/EPSG:4326/png/default/4/0/*"}
		if !slices.Equal(last, want) {
			t.Errorf("got %q, want %q", last, want)
		}
		p.Flush(t.Context())
		if n := len(rec.calls); n != 3 {
			t.Errorf("got %d calls, want 3 (2 throttled, 1 sent, nothing left)", n)
		}
	})
}

func TestRefusedBatchDropped(t *testing.T) {
	rec := &recorder{fail: func(int) error { return apperr.Invalidf("NoSuchDistribution") }}
	p := NewPurger(rec, PurgerOptions{}, quiet())
	p.TilesChanged(states, 3, 1, 2)
	p.Flush(t.Context())
	p.Flush(t.Context())
	if n := len(rec.calls); n != 1 {
		t.Errorf("got %d calls, want 1 (refused, then nothing pending)", n)
	}
}

func TestRunSendsPeriodically(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		p := NewPurger(rec, PurgerOptions{Every: 5 * time.Second}, quiet())
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { p.Run(ctx); close(done) }()
		p.TilesChanged(states, 3, 1, 2)
		time.Sleep(4 * time.Second)
		synctest.Wait()
		if rec.count() != 0 {
			t.Fatalf("sent after 4s, want after 5s")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if rec.count() != 1 {
			t.Fatalf("got %d calls after 6s, want 1", rec.count())
		}
		p.TilesChanged(states, 5, 1, 2)
		cancel()
		<-done
		if rec.count() != 2 {
			t.Errorf("got %d calls after stop, want 2 (the rest sent on the way out)", rec.count())
		}
	})
}

// TestPathsMaxExact: beyond MaxExact single objects, they are described
// per layer like tiles.
func TestPathsMaxExact(t *testing.T) {
	rec := &recorder{}
	p := NewPurger(rec, PurgerOptions{KeyPrefix: "tiles", MaxExact: 2}, quiet())
	p.KeysChanged("tiles/topp:states/a.xml", "tiles/topp:states/b.xml", "tiles/topp:states/c.xml")
	p.Flush(t.Context())
	if len(rec.calls) != 1 || !slices.Equal(rec.calls[0].paths, []string{"/topp:states/*"}) {
		t.Errorf("got %+v, want one call with /topp:states/*", rec.calls)
	}
}

// TestNopPurgerIsSilent: without a CDN (Nop) changes are neither kept
// nor sent, and nothing is logged.
func TestNopPurgerIsSilent(t *testing.T) {
	var log bytes.Buffer
	p := NewPurger(Nop{}, PurgerOptions{}, slog.New(slog.NewTextHandler(&log, nil)))
	p.TilesChanged(states, 3, 1, 2)
	p.PrefixChanged("a/")
	p.KeysChanged("a")
	if !p.pending.empty() {
		t.Errorf("pending changes kept without a CDN: %+v", p.pending)
	}
	p.Flush(t.Context())
	if log.Len() != 0 {
		t.Errorf("logged without a CDN: %s", log.String())
	}
}
