package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestDelayProxyHoldsAndCounts sends requests through the proxy to a real
// server, in two waves, and checks that each answer comes after the delay
// with the server's body and that the peak is the widest wave's width.
func TestDelayProxyHoldsAndCounts(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Path+"?"+r.URL.RawQuery)
	}))
	defer up.Close()
	const delay = 500 * time.Millisecond
	p, err := newDelayProxy(up.URL+"/wms", delay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	wave := func(n int) {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				start := time.Now()
				res, err := http.Get(p.url + "?REQUEST=GetMap")
				if err != nil {
					t.Error(err)
					return
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				if string(b) != "/wms?REQUEST=GetMap" {
					t.Errorf("answer %q, want the server's /wms?REQUEST=GetMap", b)
				}
				if d := time.Since(start); d < delay {
					t.Errorf("answered after %v, before the %v delay", d, delay)
				}
			})
		}
		wg.Wait()
	}
	wave(3)
	wave(5)
	if peak, total := p.counts(); peak != 5 || total != 8 {
		t.Errorf("peak %d, total %d; want 5 and 8", peak, total)
	}
	p.reset()
	wave(2)
	if peak, total := p.counts(); peak != 2 || total != 2 {
		t.Errorf("after reset: peak %d, total %d; want 2 and 2", peak, total)
	}
}
