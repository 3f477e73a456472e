package upstream

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// dnsServer answers the A queries of a name with answer(n), n counting
// the queries from 1, and every other query with no record, over UDP on
// 127.0.0.1.
func dnsServer(t *testing.T, answer func(n int64) [4]byte) (addr string, queries *atomic.Int64) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	queries = new(atomic.Int64)
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			if len(q) < 12 {
				continue
			}
			// The question: labels up to the root's, then type and class.
			end := 12
			for end < len(q) && q[end] != 0 {
				end += int(q[end]) + 1
			}
			end += 5
			if end > len(q) {
				continue
			}
			qtype := binary.BigEndian.Uint16(q[end-4:])
			resp := append([]byte{}, q[:2]...)                      // the id
			resp = append(resp, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0) // a response, recursion available; one question
			resp = append(resp, q[12:end]...)
			if qtype == 1 { // A
				ip := answer(queries.Add(1))
				resp[7] = 1                                                 // one answer
				resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4) // the question's name, A, IN, TTL 0, 4 bytes
				resp = append(resp, ip[:]...)
			}
			pc.WriteTo(resp, from)
		}
	}()
	return pc.LocalAddr().String(), queries
}

// TestRebindingAndRedirectsMeetThePolicy: a name is checked on the
// address it resolves to at each connection. An upstream allowed at
// 127.0.0.1 whose name then resolves to 127.0.0.2 (DNS rebinding) is
// refused there, and so is the redirect on its own host that needs the
// new connection: the client's redirects go through the same dialer.
func TestRebindingAndRedirectsMeetThePolicy(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path == "/first" {
			w.Header().Set("Connection", "close") // the redirect needs a new connection
			http.Redirect(w, r, "/inside", http.StatusFound)
			return
		}
		w.Write([]byte("inside"))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	dns, queries := dnsServer(t, func(n int64) [4]byte {
		if n == 1 {
			return [4]byte{127, 0, 0, 1}
		}
		return [4]byte{127, 0, 0, 2}
	})
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns)
	}}
	only1 := AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	c, err := newClient(HTTPOptions{Addresses: only1, Retries: -1, Timeout: 5 * time.Second}, net.Dialer{Timeout: 2 * time.Second, Resolver: resolver}, proxyFromEnvironment)
	if err != nil {
		t.Fatal(err)
	}
	u := (&url.URL{Scheme: "http", Host: net.JoinHostPort("upstream.test", port), Path: "/first"}).String()
	err = c.Fetch(t.Context(), u, func([]byte, string) error { return nil })
	var ae *AddressError
	if !errors.As(err, &ae) || ae.Addr != netip.MustParseAddr("127.0.0.2") || ae.Class != "loopback" {
		t.Fatalf("got %v, want the redirect's connection to 127.0.0.2 refused as loopback", err)
	}
	if requests.Load() != 1 || queries.Load() != 2 {
		t.Errorf("%d requests reached the server after %d lookups; want the first only, after 2", requests.Load(), queries.Load())
	}
}

// TestProxyIsConnectedTo: a proxy the environment names is connected to
// although it is on loopback (the operator chose it), and answers for
// names it resolves itself; a request whose URL writes out a refused
// address is not sent to it.
func TestProxyIsConnectedTo(t *testing.T) {
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.Write([]byte("via the proxy for " + r.URL.Host))
	}))
	defer proxy.Close()
	pu, _ := url.Parse(proxy.URL)
	c, err := newClient(HTTPOptions{Retries: -1}, net.Dialer{Timeout: 2 * time.Second}, http.ProxyURL(pu))
	if err != nil {
		t.Fatal(err)
	}
	var got string
	err = c.Fetch(t.Context(), "http://wms.example.org/wms", func(b []byte, _ string) error { got = string(b); return nil })
	if err != nil || got != "via the proxy for wms.example.org" {
		t.Fatalf("got %q, %v; want the proxy's answer", got, err)
	}
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[::1]:9001/", "http://localhost/"} {
		err := c.Fetch(t.Context(), u, func([]byte, string) error { return nil })
		if !errors.As(err, new(*AddressError)) {
			t.Errorf("%s through the proxy: got %v, want an *AddressError", u, err)
		}
	}
	if proxied.Load() != 1 {
		t.Errorf("%d requests reached the proxy, want 1", proxied.Load())
	}
	// Without the proxy, the same client policy refuses the proxy's own address.
	direct, err := newClient(HTTPOptions{Retries: -1}, net.Dialer{Timeout: 2 * time.Second}, func(*http.Request) (*url.URL, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := direct.Fetch(t.Context(), proxy.URL, func([]byte, string) error { return nil }); !errors.As(err, new(*AddressError)) {
		t.Errorf("the proxy's address, directly: got %v, want an *AddressError", err)
	}
}
