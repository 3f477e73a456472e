package upstream_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/source/upstream"
)

// loopback lets the tests' clients reach their servers on 127.0.0.1, as
// TILECACHE_UPSTREAM_ALLOW=127.0.0.0/8 does.
var loopback = upstream.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

func TestAddressClass(t *testing.T) {
	tests := []struct{ addr, class string }{
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"169.254.169.254", "link-local"}, // the instance metadata service
		{"169.254.170.2", "link-local"},   // the ECS task metadata endpoint
		{"10.0.0.1", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "reserved"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fc00::1", "unique-local"},
		{"fd00:ec2::254", "unique-local"}, // the instance metadata service over IPv6
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		// IPv4-mapped IPv6: the class of the IPv4 address.
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "link-local"},
		{"::ffff:10.1.2.3", "private"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"::ffff:100.64.0.1", "carrier-grade NAT"},
		{"::ffff:224.0.0.1", "multicast"},
		// NAT64 of the IPv4 address.
		{"64:ff9b::a9fe:a9fe", "link-local (through NAT64)"},
		{"64:ff9b::7f00:1", "loopback (through NAT64)"},
		// The public Internet, next to the refused networks.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"11.0.0.1", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"126.255.255.255", ""},
		{"128.0.0.1", ""},
		{"169.253.255.255", ""},
		{"169.255.0.0", ""},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"192.167.255.255", ""},
		{"192.169.0.0", ""},
		{"223.255.255.255", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2001:4860:4860::8888", ""},
		{"2a05:d018::1", ""},
		{"3ffe:ffff::1", ""},
		// Not global unicast, or not a host of the public Internet.
		{"fbff:ffff::1", "non-global IPv6"},
		{"100::1", "non-global IPv6"},           // discard-only
		{"64:ff9b:1::a00:1", "non-global IPv6"}, // local-use NAT64
		{"2002:7f00:1::1", "6to4"},              // 6to4 of 127.0.0.1
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"192.0.0.8", "IETF protocol assignment"},
		{"192.0.2.1", "documentation"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"192.88.99.1", "6to4 relay anycast"},
		{"::ffff:198.18.0.1", "benchmarking"},
		{"198.17.255.255", ""},
		{"198.20.0.0", ""},
		{"fec0::", "site-local"},
	}
	for _, tt := range tests {
		if got := upstream.AddressClass(netip.MustParseAddr(tt.addr)); got != tt.class {
			t.Errorf("%s: class %q, want %q", tt.addr, got, tt.class)
		}
	}
}

func TestAddressPolicy(t *testing.T) {
	ip := netip.MustParseAddr
	var none upstream.AddressPolicy
	for _, a := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1", "169.254.169.254", "10.1.2.3", "fd00:ec2::254"} {
		err := none.Check(ip(a))
		var ae *upstream.AddressError
		if !errors.As(err, &ae) || ae.Class == "" || !strings.Contains(err.Error(), ae.Class+" address") {
			t.Errorf("zero policy, %s: got %v, want an *AddressError naming its class", a, err)
		}
	}
	if err := none.Check(ip("8.8.8.8")); err != nil {
		t.Errorf("zero policy, 8.8.8.8: %v", err)
	}
	vpc := upstream.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("127.0.0.0/8")}}
	for a, ok := range map[string]bool{
		"10.1.2.3": true, "::ffff:10.1.2.3": true, "127.0.0.1": true, "::ffff:127.0.0.1": true,
		"10.2.0.1": false, "169.254.169.254": false, "::1": false, "8.8.8.8": true,
	} {
		if err := vpc.Check(ip(a)); (err == nil) != ok {
			t.Errorf("allow 10.1.0.0/16,127.0.0.0/8, %s: got %v, want allowed %v", a, err, ok)
		}
	}
	anyAddr := upstream.AddressPolicy{Any: true}
	for _, a := range []string{"127.0.0.1", "::1", "169.254.169.254", "0.0.0.0"} {
		if err := anyAddr.Check(ip(a)); err != nil {
			t.Errorf("Any, %s: %v", a, err)
		}
	}
}

func TestCheckURL(t *testing.T) {
	var none upstream.AddressPolicy
	for u, refused := range map[string]bool{
		"http://127.0.0.1:9001/2018-06-01/runtime/invocation/next": true,
		"http://169.254.169.254/latest/meta-data/":                 true,
		"http://[::1]:8080/wms":                                    true,
		"http://[::ffff:169.254.169.254]/":                         true,
		"http://[fe80::1%25eth0]/":                                 true,
		"http://[fd00:ec2::254]/":                                  true,
		"http://10.0.0.5/wms?map=x":                                true,
		"http://user:pw@192.168.0.1/":                              true,
		"http://localhost:8080/wms":                                true,
		"http://LOCALHOST./wms":                                    true,
		"http://tiles.localhost/{z}/{x}/{y}.png":                   true,
		"http://8.8.8.8/wms":                                       false,
		"https://wms.example.org/wms":                              false,
		"https://{a}.tiles.example.org/{z}/{x}/{y}.png":            false,
		"http://localhost.example.org/":                            false,
		"::not a url":                                              false, // the source's own check reports it
	} {
		err := none.CheckURL(u)
		if (err != nil) != refused {
			t.Errorf("%s: got %v, want refused %v", u, err, refused)
		}
	}
	if err := loopback.CheckURL("http://localhost:8080/wms"); err != nil {
		t.Errorf("allow 127.0.0.0/8, localhost: %v", err)
	}
}

// TestFetchRefusesPrivateAddresses: a client whose policy refuses loopback
// never connects to a server on 127.0.0.1 or ::1, whether the URL names the
// address or a name that resolves to it, and does not retry; allowed, the
// same server answers.
func TestFetchRefusesPrivateAddresses(t *testing.T) {
	var calls atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("inside"))
	})
	v4 := httptest.NewServer(h)
	defer v4.Close()
	ln6, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	v6 := httptest.NewUnstartedServer(h)
	v6.Listener.Close()
	v6.Listener = ln6
	v6.Start()
	defer v6.Close()
	_, port4, _ := net.SplitHostPort(v4.Listener.Addr().String())
	_, port6, _ := net.SplitHostPort(ln6.Addr().String())

	urls := map[string]string{
		"127.0.0.1": v4.URL + "/wms?apikey=s3cret",
		"localhost": "http://localhost:" + port4 + "/wms?apikey=s3cret",
		"::1":       "http://[::1]:" + port6 + "/wms?apikey=s3cret",
	}
	for name, u := range urls {
		c, err := upstream.NewClient(upstream.HTTPOptions{Retries: 3, RetryBackoff: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		calls.Store(0)
		start := time.Now()
		err = c.Fetch(context.Background(), u, func([]byte, string) error { return nil })
		var ae *upstream.AddressError
		if !errors.As(err, &ae) || ae.Class != "loopback" {
			t.Fatalf("%s: got %v, want an *AddressError of class loopback", name, err)
		}
		if calls.Load() != 0 || time.Since(start) > 500*time.Millisecond {
			t.Errorf("%s: %d requests reached the server in %v; want none, not retried", name, calls.Load(), time.Since(start))
		}
		if msg := err.Error(); strings.Contains(msg, "s3cret") || !strings.Contains(msg, "apikey=REDACTED") || !strings.Contains(msg, "loopback address") {
			t.Errorf("%s: error %q: want the URL redacted and the class named", name, msg)
		}
		if f := upstream.Classify(err); f != upstream.FailureError {
			t.Errorf("%s: classified %v, want error", name, f)
		}
	}

	allowed := map[string]upstream.AddressPolicy{
		"127.0.0.1": loopback,
		"localhost": loopback,
		"::1":       {Allow: []netip.Prefix{netip.MustParsePrefix("::1/128")}},
	}
	for name, u := range urls {
		for _, p := range []upstream.AddressPolicy{allowed[name], {Any: true}} {
			c, err := upstream.NewClient(upstream.HTTPOptions{Addresses: p})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if err := c.Fetch(context.Background(), u, func(b []byte, _ string) error { got = string(b); return nil }); err != nil || got != "inside" {
				t.Errorf("%s allowed by %+v: got %q, %v", name, p, got, err)
			}
		}
	}
}
