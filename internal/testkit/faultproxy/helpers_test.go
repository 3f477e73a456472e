package faultproxy_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"tilecache/internal/testkit/faultproxy"
)

// received is what the recording upstream saw of one request.
type received struct {
	Method     string
	Host       string
	RequestURI string
	RawQuery   string
	Header     http.Header
	BodyLen    int64
	BodySHA    string
	Body       []byte // the first 64 KiB
}

// upstream is an httptest server that records every request it receives
// and answers through handle (200 and an empty body when nil).
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	handle func(w http.ResponseWriter, r *http.Request, body []byte)
}

func mustUpstream(tb testing.TB, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *upstream {
	tb.Helper()
	u := &upstream{handle: handle}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	tb.Cleanup(u.Close)
	return u
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	head := &limitedBuffer{max: 64 << 10}
	n, err := io.Copy(io.MultiWriter(h, head), r.Body)
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	u.mu.Lock()
	u.got = append(u.got, received{
		Method: r.Method, Host: r.Host, RequestURI: r.RequestURI, RawQuery: r.URL.RawQuery,
		Header: r.Header.Clone(), BodyLen: n, BodySHA: hex.EncodeToString(h.Sum(nil)), Body: head.b,
	})
	u.mu.Unlock()
	if u.handle != nil {
		u.handle(w, r, head.b)
	}
}

func (u *upstream) requests() []received {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]received(nil), u.got...)
}

type limitedBuffer struct {
	b   []byte
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// mustProxy starts a Proxy in front of target and closes it at the end of
// the test.
func mustProxy(tb testing.TB, target string, service faultproxy.Service, cfg faultproxy.Config) *faultproxy.Proxy {
	tb.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	p, err := faultproxy.New(target, service, cfg, log)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	if err := p.Start(); err != nil {
		tb.Fatalf("Start: %v", err)
	}
	tb.Cleanup(func() {
		if err := p.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return p
}

// newClient returns an HTTP client with its own connection pool and a
// timeout, which neither decompresses answers nor uses an environment proxy.
func newClient(tb testing.TB) *http.Client {
	tb.Helper()
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// testContext is the test's context bounded to d.
func testContext(tb testing.TB, d time.Duration) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), d)
	tb.Cleanup(cancel)
	return ctx
}

// isConnError reports whether err is what a client sees when the server
// resets the connection without answering.
func isConnError(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// do sends one request and returns the status and body, or the error.
func do(tb testing.TB, c *http.Client, method, url string, body io.Reader, hdr http.Header) (int, []byte, error) {
	tb.Helper()
	req, err := http.NewRequestWithContext(testContext(tb, 20*time.Second), method, url, body)
	if err != nil {
		tb.Fatalf("new request: %v", err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, b, err
	}
	return resp.StatusCode, b, nil
}

// hostOf returns the host:port of an http URL.
func hostOf(tb testing.TB, rawURL string) string {
	tb.Helper()
	host, port, err := net.SplitHostPort(rawURL[len("http://"):])
	if err != nil {
		tb.Fatalf("split %q: %v", rawURL, err)
	}
	return net.JoinHostPort(host, port)
}
