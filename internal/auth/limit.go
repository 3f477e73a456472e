package auth

import (
	"container/list"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Limits bounds failed logins; see Authenticator for how they apply. A zero
// field takes its default (DefaultLimits).
type Limits struct {
	// AddressFailures failures from one client address within Window lock
	// the address: its attempts are answered 429 without a password check
	// until the lock ends.
	AddressFailures int
	// AccountFailures failures naming one account within Window, from
	// addresses that have not logged in as it recently, lock the account
	// for those addresses.
	AccountFailures int
	// KnownFailures failures of a known (account, address) pair within
	// Window make the pair unknown again, so that the locks apply to it.
	KnownFailures int
	// Window is the period over which failures are counted.
	Window time.Duration
	// Lock is the first lock's length. After a lock every further failure
	// locks again for twice as long as the previous lock, up to MaxLock;
	// the doubling is forgotten one step per Decay without failures.
	Lock, MaxLock, Decay time.Duration
	// KnownFor is how long an (account, address) pair stays known after
	// its last successful login.
	KnownFor time.Duration
	// Addresses, Accounts and Pairs cap the remembered addresses, account
	// names and known pairs; the least recently used is forgotten first.
	Addresses, Accounts, Pairs int
	// Hold is how long a refusal that came in on a connection of this
	// process is held before it is answered (at most until the lock ends),
	// and Holding how many are held at once; the others are answered at
	// once. A guesser that waits for its answers then sends a few a second
	// instead of thousands, and a held request costs a parked goroutine,
	// not CPU. Requests made by the Lambda adapter are never held: there a
	// wait is billed and holds the function's concurrency.
	Hold    time.Duration
	Holding int
}

// DefaultLimits are the limits of an Authenticator made without
// WithLimits. A guesser gets 10 bcrypt checks from one address, then one
// more each time a lock ends: 10 s, 20 s, 40 s, … up to 15 minutes.
var DefaultLimits = Limits{
	AddressFailures: 10,
	AccountFailures: 20,
	KnownFailures:   5,
	Window:          5 * time.Minute,
	Lock:            10 * time.Second,
	MaxLock:         15 * time.Minute,
	Decay:           5 * time.Minute,
	KnownFor:        24 * time.Hour,
	Addresses:       16384,
	Accounts:        4096,
	Pairs:           4096,
	Hold:            time.Second,
	Holding:         64,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.AddressFailures, d.AddressFailures)
	set(&l.AccountFailures, d.AccountFailures)
	set(&l.KnownFailures, d.KnownFailures)
	set(&l.Addresses, d.Addresses)
	set(&l.Accounts, d.Accounts)
	set(&l.Pairs, d.Pairs)
	set(&l.Holding, d.Holding)
	setD(&l.Hold, d.Hold)
	setD(&l.Window, d.Window)
	setD(&l.Lock, d.Lock)
	setD(&l.MaxLock, d.MaxLock)
	setD(&l.Decay, d.Decay)
	setD(&l.KnownFor, d.KnownFor)
	l.MaxLock = max(l.MaxLock, l.Lock)
	return l
}

// record counts the failures of one key (an address or an account).
type record struct {
	failures    int       // in the window that started at windowStart
	windowStart time.Time //
	inFlight    int       // attempts admitted and not yet done
	level       int       // locks since the doubling was last forgotten
	lastFailure time.Time //
	lockedUntil time.Time //
}

// decay forgets one doubling step per d since the last failure.
func (r *record) decay(now time.Time, d time.Duration) {
	if r.level > 0 && !r.lastFailure.IsZero() {
		steps := int(now.Sub(r.lastFailure) / d)
		r.level = max(0, r.level-steps)
		if steps > 0 {
			r.lastFailure = r.lastFailure.Add(time.Duration(steps) * d)
		}
	}
}

// refusal says why an attempt was not admitted; zero means admitted.
type refusal struct {
	why   string        // "" when admitted
	retry time.Duration // Retry-After
}

// admit reports whether r lets one more attempt be checked, counting it in
// flight if so. threshold is the failures that lock; who ends the first
// sentence of a refusal ("from this address").
func (r *record) admit(now time.Time, l Limits, threshold int, who string) refusal {
	if now.Before(r.lockedUntil) {
		wait := r.lockedUntil.Sub(now)
		return refusal{fmt.Sprintf("%s: try again in %d s (after %d failures within %s, each further failure locks twice as long, up to %s)",
			who, seconds(wait), threshold, l.Window, l.MaxLock), wait}
	}
	r.decay(now, l.Decay)
	if now.Sub(r.windowStart) >= l.Window {
		r.failures, r.windowStart = 0, now
	}
	// The checks in flight count as failures until they end, so that
	// concurrent guesses cannot run more checks than the limit; after a
	// lock, one at a time.
	if r.failures+r.inFlight >= threshold || (r.level > 0 && r.inFlight > 0) {
		return refusal{fmt.Sprintf("%s: %d password checks in progress, try again in 1 s", who, r.inFlight), time.Second}
	}
	r.inFlight++
	return refusal{}
}

// release ends an admitted attempt.
func (r *record) release() { r.inFlight = max(0, r.inFlight-1) }

// fail counts a failure; it may start a lock, whose length it returns (0:
// none). Once locked, every further failure locks again, each time twice
// as long.
func (r *record) fail(now time.Time, l Limits, threshold int) time.Duration {
	r.decay(now, l.Decay)
	if now.Sub(r.windowStart) >= l.Window {
		r.failures, r.windowStart = 0, now
	}
	r.failures++
	r.lastFailure = now
	if r.failures < threshold && r.level == 0 {
		return 0
	}
	d := l.MaxLock
	if r.level < 30 {
		d = min(l.Lock<<r.level, l.MaxLock)
	}
	r.lockedUntil = now.Add(d)
	r.level++
	r.failures = 0
	return d
}

// pair is an (account, address) pair with a recent successful login.
type pair struct {
	lastSuccess time.Time
	failures    int // since the last success, within the window
	windowStart time.Time
	inFlight    int // attempts admitted as known and not yet done
}

// nameKey identifies an account name without holding it: names come from
// the client and may be long.
type nameKey [16]byte

type pairKey struct {
	name nameKey
	addr string
}

// limiter applies Limits. It is safe for concurrent use.
type limiter struct {
	l    Limits
	salt [32]byte
	now  func() time.Time
	// wait waits for d or ctx's end (a field so that tests can see it).
	wait    func(ctx context.Context, d time.Duration)
	holding chan struct{} // a slot per held refusal

	mu        sync.Mutex
	addresses *lru[string, *record]
	accounts  *lru[nameKey, *record]
	pairs     *lru[pairKey, *pair]
}

func newLimiter(l Limits) *limiter {
	l = l.withDefaults()
	lim := &limiter{l: l, now: time.Now, wait: wait, holding: make(chan struct{}, l.Holding),
		addresses: newLRU[string, *record](l.Addresses),
		accounts:  newLRU[nameKey, *record](l.Accounts),
		pairs:     newLRU[pairKey, *pair](l.Pairs),
	}
	rand.Read(lim.salt[:])
	return lim
}

func (lim *limiter) nameKey(name string) nameKey {
	h := sha256.New()
	h.Write(lim.salt[:])
	h.Write([]byte(name))
	var k nameKey
	copy(k[:], h.Sum(nil))
	return k
}

// attempt is one admitted login attempt; end it with done.
type attempt struct {
	addr  string
	name  nameKey
	known bool
}

// admit decides whether a login as name from addr may be checked. A known
// pair is admitted whatever the locks of its address and account; any
// other attempt must pass both.
func (lim *limiter) admit(name, addr string) (attempt, refusal) {
	now := lim.now()
	at := attempt{addr: addr, name: lim.nameKey(name)}
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if p, ok := lim.pairs.get(pairKey{at.name, addr}); ok && now.Sub(p.lastSuccess) < lim.l.KnownFor {
		if now.Sub(p.windowStart) >= lim.l.Window {
			p.failures, p.windowStart = 0, now
		}
		// As for the locks, checks in flight count as failures.
		if p.failures+p.inFlight < lim.l.KnownFailures {
			p.inFlight++
			at.known = true
			return at, refusal{}
		}
	}
	ar := lim.address(addr)
	if r := ar.admit(now, lim.l, lim.l.AddressFailures, "from this address"); r.why != "" {
		return at, r
	}
	acc := lim.account(at.name)
	if r := acc.admit(now, lim.l, lim.l.AccountFailures, "for this account from addresses it has not logged in from"); r.why != "" {
		ar.release() // not checked after all
		return at, r
	}
	return at, refusal{}
}

// abandon ends an admitted attempt that could not be checked (the store
// of tokens was unavailable): neither a success nor a failure.
func (lim *limiter) abandon(at attempt) {
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if !at.known {
		lim.address(at.addr).release()
		lim.account(at.name).release()
	} else if p, found := lim.pairs.get(pairKey{at.name, at.addr}); found {
		p.inFlight = max(0, p.inFlight-1)
	}
}

// done records how an admitted attempt ended.
func (lim *limiter) done(at attempt, ok bool) {
	now := lim.now()
	lim.mu.Lock()
	defer lim.mu.Unlock()
	pk := pairKey{at.name, at.addr}
	ar := lim.address(at.addr)
	acc := lim.account(at.name)
	if !at.known {
		ar.release()
		acc.release()
	} else if p, found := lim.pairs.get(pk); found {
		p.inFlight = max(0, p.inFlight-1)
	}
	if ok {
		p, found := lim.pairs.get(pk)
		if !found {
			p = &pair{}
			lim.pairs.put(pk, p)
		}
		p.lastSuccess, p.failures, p.windowStart = now, 0, now
		return
	}
	// A known pair's failure counts against the pair and its address (so
	// that other names from there are locked the sooner) but not against
	// the account: the account's lock is for everyone else.
	if at.known {
		if p, found := lim.pairs.get(pk); found {
			if now.Sub(p.windowStart) >= lim.l.Window {
				p.failures, p.windowStart = 0, now
			}
			p.failures++
		}
	} else {
		lim.lockStarted(acc.fail(now, lim.l, lim.l.AccountFailures), "account", "")
	}
	lim.lockStarted(ar.fail(now, lim.l, lim.l.AddressFailures), "address", at.addr)
}

func (lim *limiter) lockStarted(d time.Duration, kind, addr string) {
	if d > 0 {
		slog.Warn("auth: failed logins locked", "key", kind, "address", addr, "for", d)
	}
}

func (lim *limiter) address(addr string) *record {
	r, ok := lim.addresses.get(addr)
	if !ok {
		r = &record{}
		lim.addresses.put(addr, r)
	}
	return r
}

func (lim *limiter) account(k nameKey) *record {
	r, ok := lim.accounts.get(k)
	if !ok {
		r = &record{}
		lim.accounts.put(k, r)
	}
	return r
}

// seconds rounds d up to whole seconds, at least 1 (Retry-After).
func seconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// hold delays the refusal of r as Limits.Hold says.
func (lim *limiter) hold(r *http.Request, ref refusal) {
	if r.Context().Value(http.LocalAddrContextKey) == nil {
		return // not on a connection of this process: the Lambda adapter's
	}
	select {
	case lim.holding <- struct{}{}:
		defer func() { <-lim.holding }()
		lim.wait(r.Context(), min(lim.l.Hold, ref.retry))
	default: // Holding requests held already
	}
}

func tooManyRequests(w http.ResponseWriter, r refusal) {
	w.Header().Set("Retry-After", strconv.FormatInt(seconds(r.retry), 10))
	http.Error(w, "Too many failed logins "+r.why, http.StatusTooManyRequests)
}

// ClientAddress is the address failed logins are counted by: the host of
// r.RemoteAddr, which is the peer of the connection for `tilecache serve`
// and the request context's source IP on Lambda behind API Gateway (the
// adapter sets RemoteAddr from it). X-Forwarded-For and the like are not
// read: anyone can send them. An IPv6 address counts as its /64, which one
// client usually holds whole.
func ClientAddress(r *http.Request) string {
	host := r.RemoteAddr
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		if len(host) > 64 {
			host = host[:64]
		}
		return "?" + host
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// lru is a map of at most size entries that forgets the least recently
// used one when full. It is not safe for concurrent use.
type lru[K comparable, V any] struct {
	size  int
	order *list.List // of *entry[K, V], most recent first
	items map[K]*list.Element
}

type entry[K comparable, V any] struct {
	k K
	v V
}

func newLRU[K comparable, V any](size int) *lru[K, V] {
	return &lru[K, V]{size: max(1, size), order: list.New(), items: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	e, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry[K, V]).v, true
}

func (c *lru[K, V]) put(k K, v V) {
	if e, ok := c.items[k]; ok {
		e.Value.(*entry[K, V]).v = v
		c.order.MoveToFront(e)
		return
	}
	if c.order.Len() >= c.size {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.items, old.Value.(*entry[K, V]).k)
	}
	c.items[k] = c.order.PushFront(&entry[K, V]{k, v})
}

func (c *lru[K, V]) len() int { return c.order.Len() }
