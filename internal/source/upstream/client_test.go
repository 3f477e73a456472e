package upstream_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/source/upstream"
)

func TestFetchRetriesTransientFailures(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("payload"))
	}))
	defer srv.Close()
	c, err := upstream.NewClient(upstream.HTTPOptions{Addresses: loopback, Retries: 2, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	err = c.Fetch(context.Background(), srv.URL, func(body []byte, ct string) error {
		got = string(body) + " " + ct
		return nil
	})
	if err != nil || got != "payload image/png" || calls.Load() != 3 {
		t.Fatalf("err %v, got %q after %d calls; want payload after 3", err, got, calls.Load())
	}

	// One retry too few: the upstream's own message comes back.
	calls.Store(0)
	c, _ = upstream.NewClient(upstream.HTTPOptions{Addresses: loopback, Retries: 1, RetryBackoff: time.Millisecond})
	err = c.Fetch(context.Background(), srv.URL, func([]byte, string) error { return nil })
	var ue *upstream.Error
	if !errors.As(err, &ue) || ue.Status != 503 || ue.Msg != "busy" || calls.Load() != 2 {
		t.Fatalf("err %v after %d calls; want HTTP 503 busy after 2", err, calls.Load())
	}
}

func TestFetchDoesNotRetryClientErrors(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/vnd.ogc.se_xml")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`<?xml version="1.0"?><ServiceExceptionReport version="1.1.1">
<ServiceException code="LayerNotDefined">
msWMSLoadGetMapParams(): WMS server error. Invalid layer(s) given in the LAYERS parameter.
</ServiceException></ServiceExceptionReport>`))
	}))
	defer srv.Close()
	c, _ := upstream.NewClient(upstream.HTTPOptions{Addresses: loopback, Retries: 3, RetryBackoff: time.Millisecond})
	err := c.Fetch(context.Background(), srv.URL, func([]byte, string) error { return nil })
	var ue *upstream.Error
	if !errors.As(err, &ue) || calls.Load() != 1 {
		t.Fatalf("err %v after %d calls, want one *Error", err, calls.Load())
	}
	want := "msWMSLoadGetMapParams(): WMS server error. Invalid layer(s) given in the LAYERS parameter."
	if ue.Msg != want || !strings.Contains(err.Error(), "HTTP 400") {
		t.Fatalf("error %q, want message %q", err, want)
	}
}

func TestFetchTimesOut(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c, _ := upstream.NewClient(upstream.HTTPOptions{Addresses: loopback, Timeout: 50 * time.Millisecond, Retries: 1, RetryBackoff: time.Millisecond})
	start := time.Now()
	err := c.Fetch(context.Background(), srv.URL, func([]byte, string) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) || calls.Load() != 2 {
		t.Fatalf("err %v after %d calls, want a deadline error after 2", err, calls.Load())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

// TestFetchCapsConcurrency: no more than MaxConcurrent requests are in
// flight, and the work on a body does not hold a slot. The server holds
// each request until the test releases it; the bodies' work is held until
// all the requests have reached the server.
func TestFetchCapsConcurrency(t *testing.T) {
	const requests, limit = 12, 3
	var inFlight, peak atomic.Int32
	arrived := make(chan struct{}, requests)
	release := make(chan struct{})
	bodies := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		inFlight.Add(-1)
		w.Write([]byte("x"))
	}))
	defer srv.Close()
	releaseAll, startBodies := sync.OnceFunc(func() { close(release) }), sync.OnceFunc(func() { close(bodies) })
	defer releaseAll()
	defer startBodies()
	c, _ := upstream.NewClient(upstream.HTTPOptions{Addresses: loopback, MaxConcurrent: limit})
	var wg sync.WaitGroup
	errs := make(chan error, requests)
	for range requests {
		wg.Go(func() {
			errs <- c.Fetch(context.Background(), srv.URL, func([]byte, string) error {
				<-bodies // work on the body does not hold a slot
				return nil
			})
		})
	}
	waitArrival := func(i int) {
		t.Helper()
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d did not reach the server (%d in flight): a slot is held", i+1, inFlight.Load())
		}
	}
	// The cap's worth arrive; then each one released lets one more in,
	// while the released requests' bodies are still being worked on.
	for i := range limit {
		waitArrival(i)
	}
	for i := limit; i < requests; i++ {
		release <- struct{}{}
		waitArrival(i)
	}
	releaseAll()
	startBodies()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if p := peak.Load(); p != limit {
		t.Fatalf("peak %d requests in flight, want exactly the cap %d", p, limit)
	}
}

func TestFetchStopsWithContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer srv.Close()
	c, _ := upstream.NewClient(upstream.HTTPOptions{Addresses: loopback, Retries: 50, RetryBackoff: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Fetch(ctx, srv.URL, func([]byte, string) error { return nil })
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Fatalf("err %v after %v, want the context's deadline promptly", err, time.Since(start))
	}
}

func TestExcerpt(t *testing.T) {
	for body, want := range map[string]string{
		"": "(empty body)",
		"<html><body><h1>Bad Gateway</h1>\n\n  nginx</body></html>":                                                           "Bad Gateway nginx",
		`<ServiceExceptionReport><ServiceException><![CDATA[Style "x" unknown]]></ServiceException></ServiceExceptionReport>`: `Style "x" unknown`,
		"plain\ttext\r\nline": "plain text line",
	} {
		if got := upstream.Excerpt([]byte(body)); got != want {
			t.Errorf("Excerpt(%q) = %q, want %q", body, got, want)
		}
	}
	long := upstream.Excerpt([]byte(strings.Repeat("word ", 500)))
	if len(long) > 310 || !strings.HasSuffix(long, "…") {
		t.Errorf("long excerpt %d bytes: %q", len(long), long)
	}
}

// TestFetchFollowsRedirectsOnlyOnItsHost: a redirect on the upstream's own
// host is followed (with the layer's headers); one to another host is not
// followed, so the headers (API keys) never reach it, and it is a tile
// failure naming the host, not retried.
func TestFetchFollowsRedirectsOnlyOnItsHost(t *testing.T) {
	var otherCalls atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherCalls.Add(1)
		w.Write([]byte("elsewhere"))
	}))
	defer other.Close()
	var originCalls atomic.Int32
	var gotKey atomic.Value
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		originCalls.Add(1)
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/ok":
			gotKey.Store(r.Header.Get("X-Api-Key"))
			w.Write([]byte("here"))
		case "/cross":
			http.Redirect(w, r, other.URL+"/steal", http.StatusMovedPermanently)
		}
	}))
	defer origin.Close()
	c, err := upstream.NewClient(upstream.HTTPOptions{Addresses: loopback, Retries: 2, RetryBackoff: time.Millisecond, Headers: map[string]string{"X-Api-Key": "secret"}})
	if err != nil {
		t.Fatal(err)
	}
	var body string
	if err := c.Fetch(t.Context(), origin.URL+"/same", func(b []byte, _ string) error { body = string(b); return nil }); err != nil || body != "here" {
		t.Fatalf("same host: got %q, %v; want the redirect followed", body, err)
	}
	if gotKey.Load() != "secret" {
		t.Errorf("same host: the layer's header did not follow the redirect")
	}
	originCalls.Store(0)
	err = c.Fetch(t.Context(), origin.URL+"/cross", func([]byte, string) error { return nil })
	var ue *upstream.Error
	if !errors.As(err, &ue) || ue.Status != http.StatusMovedPermanently || !strings.Contains(ue.Msg, "another host") || !strings.Contains(ue.Msg, strings.TrimPrefix(other.URL, "http://")) {
		t.Fatalf("cross host: got %v, want an upstream error 301 naming the other host", err)
	}
	if n := otherCalls.Load(); n != 0 {
		t.Errorf("the other host got %d requests, want none", n)
	}
	if n := originCalls.Load(); n != 1 {
		t.Errorf("the upstream got %d requests, want 1 (a refused redirect is not retried)", n)
	}
}
