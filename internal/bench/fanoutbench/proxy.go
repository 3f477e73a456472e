package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// delayProxy stands in front of the WMS: it holds every request for delay
// before forwarding it, as a distant upstream would, and counts the
// requests in flight at its side (from arrival to the end of the answer),
// so that the peak it reports is what the WMS side saw, whatever the
// workers believe.
type delayProxy struct {
	delay time.Duration
	rp    *httputil.ReverseProxy
	srv   *http.Server
	url   string

	mu             sync.Mutex
	inFlight, peak int
	total          int64
}

// newDelayProxy starts a proxy on 127.0.0.1 in front of target.
func newDelayProxy(target string, delay time.Duration) (*delayProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("parse the WMS URL %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the delaying proxy: %w", err)
	}
	p := &delayProxy{delay: delay}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
			r.Out.URL.Path = r.In.URL.Path
		},
		// a pool as large as the most workers' requests at once
		Transport: &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	p.url = "http://" + ln.Addr().String() + u.Path
	go p.srv.Serve(ln)
	return p, nil
}

func (p *delayProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.inFlight++
	p.total++
	p.peak = max(p.peak, p.inFlight)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inFlight--
		p.mu.Unlock()
	}()
	t := time.NewTimer(p.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return
	}
	p.rp.ServeHTTP(w, r)
}

// reset zeroes the counts (between runs, with nothing in flight).
func (p *delayProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peak, p.total = p.inFlight, 0
}

// counts returns the peak of requests in flight and the requests seen
// since the last reset.
func (p *delayProxy) counts() (peak int, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak, p.total
}

func (p *delayProxy) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.srv.Shutdown(ctx)
}
