package auth

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"golang.org/x/crypto/bcrypt"
)

// limitedServer is a real HTTP server on 127.0.0.1 behind the middleware
// of an Authenticator with an admin "admin"/"s3cret" and the given limits,
// on a clock the test moves.
type limitedServer struct {
	*httptest.Server
	a        *Authenticator
	compares atomic.Int64
	clock    atomic.Int64 // UnixNano of the limiter's now
}

func newLimitedServer(t *testing.T, l Limits) *limitedServer {
	t.Helper()
	if l.Hold == 0 {
		l.Hold = time.Nanosecond // TestRefusalsHeld checks the holding
	}
	s := &limitedServer{a: New([]Account{{Name: "admin", Hash: mustHash(t, "s3cret", bcrypt.MinCost), Role: Admin}}, WithLimits(l))}
	s.clock.Store(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	s.a.limits.now = func() time.Time { return time.Unix(0, s.clock.Load()) }
	s.a.compare = func(hash, password []byte) error {
		s.compares.Add(1)
		return bcrypt.CompareHashAndPassword(hash, password)
	}
	s.Server = httptest.NewServer(s.a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _ := User(r.Context())
		fmt.Fprintf(w, "hello %s", name)
	})))
	t.Cleanup(s.Close)
	return s
}

func (s *limitedServer) advance(d time.Duration) { s.clock.Add(int64(d)) }

// from returns a client whose connections come from the loopback address
// ip (any of 127.0.0.0/8 is this host's), so that one test plays several
// client addresses against the server on 127.0.0.1.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

type answer struct {
	status     int
	retryAfter string
	body       string
}

// login sends GET / as name/password from client c; the answer's bcrypt
// comparisons are counted in s.compares.
func (s *limitedServer) login(t *testing.T, c *http.Client, name, password string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(name, password)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return answer{res.StatusCode, res.Header.Get("Retry-After"), string(body)}
}

// expect sends a login and checks its status, Retry-After, a fragment of
// its body and how many bcrypt comparisons it made.
func (s *limitedServer) expect(t *testing.T, c *http.Client, name, password string, status int, retryAfter, bodyHas string, compares int64) {
	t.Helper()
	before := s.compares.Load()
	a := s.login(t, c, name, password)
	if a.status != status || a.retryAfter != retryAfter || !strings.Contains(a.body, bodyHas) {
		t.Errorf("%s/%s: got %d Retry-After %q %q, want %d Retry-After %q with %q", name, password, a.status, a.retryAfter, a.body, status, retryAfter, bodyHas)
	}
	if got := s.compares.Load() - before; got != compares {
		t.Errorf("%s/%s: %d bcrypt comparisons, want %d", name, password, got, compares)
	}
}

// TestFailedLoginsLockTheAddress: after AddressFailures failures an
// address is answered 429 with Retry-After and no bcrypt, whatever the
// name or password; each failure after a lock doubles it up to MaxLock, and
// an idle address is forgiven.
func TestFailedLoginsLockTheAddress(t *testing.T) {
	s := newLimitedServer(t, Limits{AddressFailures: 3, AccountFailures: 100, Window: 5 * time.Minute,
		Lock: 10 * time.Second, MaxLock: 40 * time.Second, Decay: time.Hour})
	c := from("127.0.0.1")
	for i := range 2 {
		s.expect(t, c, "admin", fmt.Sprint("guess", i), 401, "", "Authentication required", 1)
	}
	// A failure the verify cache remembers costs nothing and is not
	// counted (a client looping with an old password).
	for range 5 {
		s.expect(t, c, "admin", "guess1", 401, "", "Authentication required", 0)
	}
	s.expect(t, c, "admin", "guess2", 401, "", "Authentication required", 1)
	s.expect(t, c, "admin", "guess3", 429, "10", "Too many failed logins from this address: try again in 10 s", 0)
	s.expect(t, c, "nobody", "guess", 429, "10", "from this address", 0)
	// A correct password from a locked address is not checked either.
	s.expect(t, c, "admin", "s3cret", 429, "10", "from this address", 0)
	s.advance(4 * time.Second)
	s.expect(t, c, "admin", "guess4", 429, "6", "try again in 6 s", 0)
	s.expect(t, c, "admin", "guess0", 401, "", "Authentication required", 0) // remembered

	// Locked again at the first failure after each lock, twice as long,
	// up to MaxLock.
	for i, lock := range []string{"20", "40", "40"} {
		s.advance(time.Minute)
		s.expect(t, c, "admin", fmt.Sprint("again", i), 401, "", "Authentication required", 1)
		s.expect(t, c, "admin", "again", 429, lock, "up to 40s", 0)
	}
	// Idle for long enough, the address gets its AddressFailures again.
	s.advance(5 * time.Hour)
	for i := range 3 {
		s.expect(t, c, "admin", fmt.Sprint("later", i), 401, "", "Authentication required", 1)
	}
	s.expect(t, c, "admin", "later3", 429, "10", "from this address", 0)
	s.advance(10 * time.Second)
	s.expect(t, c, "admin", "s3cret", 200, "", "hello admin", 1)
}

// TestFailedLoginsKnownPairPassesUnderAttack: guesses from other addresses
// lock the account, and guesses of other names from the administrator's
// own address lock that address, but not for the address the
// administrator logged in from; a new address is refused while the account
// is locked, even with the right password.
func TestFailedLoginsKnownPairPassesUnderAttack(t *testing.T) {
	s := newLimitedServer(t, Limits{AddressFailures: 3, AccountFailures: 4, KnownFailures: 2, Lock: time.Hour, MaxLock: time.Hour})
	admin := from("127.0.0.1")
	s.expect(t, admin, "admin", "s3cret", 200, "", "hello admin", 1)

	for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		for i := range 2 {
			s.expect(t, from(ip), "admin", fmt.Sprint(ip, i), 401, "", "Authentication required", 1)
		}
	}
	s.expect(t, from("127.0.0.4"), "admin", "guess", 429, "3600", "for this account from addresses it has not logged in from", 0)
	s.expect(t, from("127.0.0.4"), "admin", "s3cret", 429, "3600", "for this account", 0)
	s.expect(t, admin, "admin", "s3cret", 200, "", "hello admin", 0) // the verify cache's answer

	// Other names guessed from the administrator's address lock it for
	// them, not for the administrator.
	for i := range 3 {
		s.expect(t, admin, fmt.Sprint("root", i), "x", 401, "", "Authentication required", 1)
	}
	s.expect(t, admin, "root", "x", 429, "3600", "from this address", 0)
	s.expect(t, admin, "admin", "s3cret", 200, "", "hello admin", 0)

	// The known pair's own failures (KnownFailures) make it unknown.
	s.expect(t, admin, "admin", "typo1", 401, "", "Authentication required", 1)
	s.expect(t, admin, "admin", "typo2", 401, "", "Authentication required", 1)
	s.expect(t, admin, "admin", "s3cret", 429, "3600", "from this address", 0)
}

// concurrentGuesses sends n wrong passwords for admin at once from
// 127.0.0.1, holding every bcrypt comparison until the answers without one
// (n - checks) have come, and returns the answers by status. It fails if
// more than checks comparisons start.
func concurrentGuesses(t *testing.T, s *limitedServer, n, checks int) map[int]int {
	t.Helper()
	started, release := make(chan struct{}, n), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	s.a.compare = func(hash, password []byte) error {
		s.compares.Add(1)
		started <- struct{}{}
		<-release
		return bcrypt.CompareHashAndPassword(hash, password)
	}
	statuses := make(chan int, n)
	c := from("127.0.0.1")
	for i := range n {
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+"/", nil)
			req.SetBasicAuth("admin", fmt.Sprint("concurrent guess ", i))
			res, err := c.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			res.Body.Close()
			statuses <- res.StatusCode
		}()
	}
	deadline := time.After(20 * time.Second) // a guard against a hang, not a wait
	got := map[int]int{}
	for range checks {
		select {
		case <-started:
		case <-deadline:
			t.Fatalf("fewer than %d comparisons started", checks)
		}
	}
	for range n - checks {
		select {
		case st := <-statuses:
			got[st]++
		case <-started:
			t.Fatalf("more than %d comparisons started", checks)
		case <-deadline:
			t.Fatalf("answers before the comparisons ended: %v, want %d", got, n-checks)
		}
	}
	once.Do(func() { close(release) })
	for range checks {
		got[<-statuses]++
	}
	return got
}

// TestFailedLoginsConcurrentGuesses: 16 guesses at once from one address
// make AddressFailures bcrypt comparisons, not 16: checks in flight count.
func TestFailedLoginsConcurrentGuesses(t *testing.T) {
	const n, limit = 16, 3
	s := newLimitedServer(t, Limits{AddressFailures: limit, AccountFailures: 100, Lock: time.Hour, MaxLock: time.Hour})
	got := concurrentGuesses(t, s, n, limit)
	if got[429] != n-limit || got[401] != limit || s.compares.Load() != limit {
		t.Errorf("answers %v after %d comparisons, want %d × 401 and %d × 429 after %d", got, s.compares.Load(), limit, n-limit, limit)
	}
}

// TestFailedLoginsKnownPairConcurrentGuesses: a known pair's guesses in
// flight count against KnownFailures too; beyond it the address's limit
// applies (2 as the known pair + 3 from the address, of 16).
func TestFailedLoginsKnownPairConcurrentGuesses(t *testing.T) {
	const n, known, address = 16, 2, 3
	s := newLimitedServer(t, Limits{AddressFailures: address, AccountFailures: 100, KnownFailures: known, Lock: time.Hour, MaxLock: time.Hour})
	s.expect(t, from("127.0.0.1"), "admin", "s3cret", 200, "", "hello admin", 1)
	s.compares.Store(0)
	got := concurrentGuesses(t, s, n, known+address)
	if got[429] != n-known-address || got[401] != known+address {
		t.Errorf("answers %v after %d comparisons, want %d × 401 and %d × 429", got, s.compares.Load(), known+address, n-known-address)
	}
}

// TestRefusalsHeld: a refusal on a connection is held Hold before it is
// answered, Holding at most at once (the others at once); one the Lambda
// adapter made (no connection of this process) is never held.
func TestRefusalsHeld(t *testing.T) {
	s := newLimitedServer(t, Limits{AddressFailures: 1, Lock: time.Hour, MaxLock: time.Hour, Hold: time.Second, Holding: 2})
	held, release := make(chan time.Duration, 8), make(chan struct{})
	s.a.limits.wait = func(ctx context.Context, d time.Duration) {
		held <- d
		<-release
	}
	c := from("127.0.0.1")
	s.expect(t, c, "admin", "guess", 401, "", "Authentication required", 1)
	answers := make(chan int, 2)
	for range 2 {
		go func() {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, s.URL+"/", nil)
			req.SetBasicAuth("admin", "guess again")
			res, err := c.Do(req)
			if err != nil {
				answers <- 0
				return
			}
			res.Body.Close()
			answers <- res.StatusCode
		}()
	}
	for range 2 {
		if d := <-held; d != time.Second {
			t.Errorf("held for %s, want 1s", d)
		}
	}
	// Both slots taken: the next refusal is answered at once.
	s.expect(t, c, "admin", "third", 429, "3600", "from this address", 0)
	// A request the Lambda adapter made.
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "127.0.0.1"
	r.SetBasicAuth("admin", "fourth")
	s.a.Middleware(http.NotFoundHandler()).ServeHTTP(w, r)
	if w.Code != 429 || len(held) != 0 {
		t.Errorf("a Lambda request: %d, %d held; want 429 at once", w.Code, len(held))
	}
	select {
	case st := <-answers:
		t.Fatalf("a held refusal was answered (%d) before its wait ended", st)
	default:
	}
	close(release)
	for range 2 {
		if st := <-answers; st != 429 {
			t.Errorf("held refusal: %d, want 429", st)
		}
	}
}

// TestLimiterMemoryBounded: millions of spoofed keys must not grow the
// state; 100,000 failures from distinct addresses with distinct 1 KiB names
// and 5,000 distinct successes leave the caps' worth of entries.
func TestLimiterMemoryBounded(t *testing.T) {
	lim := newLimiter(Limits{Addresses: 1000, Accounts: 500, Pairs: 100})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	long := strings.Repeat("n", 1024)
	for i := range 100_000 {
		at, r := lim.admit(fmt.Sprint(long, i), fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255))
		if r.why != "" {
			t.Fatalf("attempt %d refused: %s", i, r.why)
		}
		lim.done(at, i%40 == 0)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if a, n, p := lim.addresses.len(), lim.accounts.len(), lim.pairs.len(); a != 1000 || n != 500 || p != 100 {
		t.Errorf("entries: %d addresses, %d accounts, %d pairs; want 1000, 500, 100", a, n, p)
	}
	// About 300 bytes an entry: well under 2 MiB held whatever came in.
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 2<<20 {
		t.Errorf("the limiter's state grew the heap by %d bytes, want at most 2 MiB", grew)
	}
}

// TestClientAddress: the connection's peer, or on Lambda the source IP the
// API Gateway adapter puts in RemoteAddr; never a header; IPv6 by /64.
func TestClientAddress(t *testing.T) {
	for remote, want := range map[string]string{
		"198.51.100.7:4711":               "198.51.100.7",
		"198.51.100.7":                    "198.51.100.7",
		"[::ffff:198.51.100.7]:80":        "198.51.100.7",
		"[2001:db8:1:2:3:4:5:6]:443":      "2001:db8:1:2::/64",
		"2001:db8:1:2::9":                 "2001:db8:1:2::/64",
		"[fe80::1%eth0]:80":               "fe80::/64",
		"":                                "?",
		"pipe":                            "?pipe",
		strings.Repeat("x", 100) + ":1":   "?" + strings.Repeat("x", 64),
		"203.0.113.5:1, 198.51.100.7:2/x": "?203.0.113.5:1, 198.51.100.7:2/x",
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-Forwarded-For", "192.0.2.1")
		if got := ClientAddress(r); got != want {
			t.Errorf("RemoteAddr %q: got %q, want %q", remote, got, want)
		}
	}
	// The adapter ApiFunction runs behind (HTTP API, payload 2.0).
	var ra core.RequestAccessorV2
	req, err := ra.EventToRequestWithContext(context.Background(), events.APIGatewayV2HTTPRequest{
		RawPath: "/rest/seed.json", Headers: map[string]string{"x-forwarded-for": "192.0.2.1, 198.51.100.7"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/rest/seed.json", SourceIP: "198.51.100.7"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ClientAddress(req); got != "198.51.100.7" {
		t.Errorf("Lambda request from 198.51.100.7: got %q", got)
	}
}
