package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
)

// refusedNetworks are the networks an upstream may not be at unless its
// layer or the process allows them (see AddressPolicy), each with the name
// of its class, longest prefixes first where they nest. They hold what a
// tile server's own host and network answer and the outside world cannot:
// the Lambda Runtime API (127.0.0.1:9001), the instance metadata service
// (169.254.169.254, fd00:ec2::254), hosts of the VPC.
var refusedNetworks = []struct {
	prefix netip.Prefix
	class  string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"}, // "this network": 0.0.0.0 reaches the host itself
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"}, // DS-Lite, NAT64 discovery and the like
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // with the broadcast address
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"}, // deprecated; ::127.0.0.1 and the like
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"}, // deprecated
	{netip.MustParsePrefix("fc00::/7"), "unique-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	// Inside global unicast (2000::/3), what is not a host of the public
	// Internet or reaches an IPv4 address through a relay.
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001:10::/28"), "ORCHID"},
	{netip.MustParsePrefix("2001:20::/28"), "ORCHID"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
}

// globalUnicast is IPv6's global unicast space: an IPv6 address outside it
// (and not of the classes above) is none the public Internet routes, the
// local-use NAT64 prefix 64:ff9b:1::/48 among them.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// nat64 is the well-known NAT64 prefix: 64:ff9b::a.b.c.d reaches the IPv4
// address a.b.c.d through a translator.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// AddressClass names the class of network ip is in when an upstream may
// not be there by default ("loopback", "link-local", "private",
// "unique-local", "documentation", "non-global IPv6", …), or returns ""
// for a global unicast address of the public Internet. An IPv4-mapped IPv6 address (::ffff:127.0.0.1) and a NAT64 one
// (64:ff9b::7f00:1) are of their IPv4 address's class.
func AddressClass(ip netip.Addr) string {
	ip = ip.WithZone("").Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		if c := AddressClass(netip.AddrFrom4([4]byte(b[12:]))); c != "" {
			return c + " (through NAT64)"
		}
		return ""
	}
	for _, n := range refusedNetworks {
		if n.prefix.Contains(ip) {
			return n.class
		}
	}
	if ip.Is6() && !globalUnicast.Contains(ip) {
		return "non-global IPv6"
	}
	return ""
}

// AddressPolicy says which addresses a layer's upstream may be at. Its
// zero value refuses every address AddressClass names.
type AddressPolicy struct {
	// Allow lists networks reachable whatever their class: the process's
	// TILECACHE_UPSTREAM_ALLOW, for development (127.0.0.0/8) or an
	// upstream in the deployment's own network.
	Allow []netip.Prefix
	// Any allows every address: a layer of the layer file whose source
	// sets allowPrivateUpstream.
	Any bool
}

// AddressError is a connection an AddressPolicy refused.
type AddressError struct {
	Addr  netip.Addr
	Class string // see AddressClass
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("refused to connect to %s, a %s address: an upstream may be at an address that is not global unicast (loopback, link-local, private, "+
		"unique-local, documentation, …) only when TILECACHE_UPSTREAM_ALLOW lists its network or the layer, in the layer file, sets allowPrivateUpstream: true on its source", e.Addr, e.Class)
}

// Check returns an *AddressError when the policy refuses ip, else nil.
func (p AddressPolicy) Check(ip netip.Addr) error {
	if p.Any {
		return nil
	}
	ip = ip.WithZone("")
	for _, n := range p.Allow {
		if n.Contains(ip) || n.Contains(ip.Unmap()) {
			return nil
		}
	}
	if c := AddressClass(ip); c != "" {
		return &AddressError{Addr: ip, Class: c}
	}
	return nil
}

// CheckURL returns an *AddressError when the host of rawURL is an address
// the policy refuses, written as one (http://169.254.169.254/,
// http://[::1]/) or named so by definition (localhost): what can be
// refused before any connection. Another name is checked when the
// upstream is connected to, each time, whatever it resolves to then. A
// URL that does not parse is not its concern.
func (p AddressPolicy) CheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		return p.Check(ip)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return p.Check(netip.AddrFrom4([4]byte{127, 0, 0, 1}))
	}
	return nil
}

// control is the dialer's check of the address it is about to connect
// to: the address a name resolved to, at each connection, so a name that
// resolves elsewhere later (DNS rebinding) is checked again.
func (p AddressPolicy) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refused to connect to %q: not an IP address and port", address)
	}
	return p.Check(ap.Addr())
}

// guard connects an upstream's client only to addresses its policy
// allows; a proxy set in the environment is connected to whatever its
// address (the operator chose it), and a request sent through it is
// checked by its URL only, since the proxy resolves the name.
type guard struct {
	policy   AddressPolicy
	checked  *net.Dialer
	plain    *net.Dialer
	proxyFor func(*http.Request) (*url.URL, error)
	proxies  sync.Map // the dial addresses of the proxies proxyFor named
}

func newGuard(p AddressPolicy, d net.Dialer, proxyFor func(*http.Request) (*url.URL, error)) *guard {
	checked := d
	checked.ControlContext = p.control
	return &guard{policy: p, checked: &checked, plain: &d, proxyFor: proxyFor}
}

// proxy is the transport's Proxy.
func (g *guard) proxy(req *http.Request) (*url.URL, error) {
	u, err := g.proxyFor(req)
	if err != nil || u == nil {
		return u, err
	}
	if err := g.policy.CheckURL(req.URL.String()); err != nil {
		return nil, err
	}
	g.proxies.Store(proxyAddr(u), true)
	return u, nil
}

// dial is the transport's DialContext.
func (g *guard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if _, ok := g.proxies.Load(addr); ok {
		return g.plain.DialContext(ctx, network, addr)
	}
	return g.checked.DialContext(ctx, network, addr)
}

// proxyAddr is the address the HTTP transport dials for proxy u: its host
// and port, the scheme's port when it has none.
func proxyAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// refusedAddress reports whether err is, or wraps, an *AddressError.
func refusedAddress(err error) bool {
	var ae *AddressError
	return errors.As(err, &ae)
}
