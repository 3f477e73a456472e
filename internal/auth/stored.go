package auth

import (
	"context"
	"sync"
	"time"
)

// AccountReader reads the accounts administrators add at run time (the
// task store's, internal/account). found is false for a name it does not
// hold; an error means it cannot be read now.
type AccountReader interface {
	ReadAccount(ctx context.Context, name string) (acc Account, found bool, err error)
}

// StoredFor is the longest an Authenticator remembers an account it read
// from its AccountReader (and that a name is not there): an account added,
// changed or removed at run time is seen by every process within it.
const StoredFor = 2 * time.Second

// storedSize bounds the names remembered.
const storedSize = 1024

// WithAccounts returns an Authenticator that, for a name none of its own
// (configured) accounts has, reads r: the accounts added at run time. A
// configured account always wins over a stored one of the same name.
// What r answers is remembered for StoredFor, so a flood of requests for
// one account costs one read per StoredFor; a request whose account
// cannot be read is answered 503, uncounted.
func (a *Authenticator) WithAccounts(r AccountReader) *Authenticator {
	return a.WithAccountsAt(r, nil)
}

// WithAccountsAt is WithAccounts with the clock that times what is
// remembered (nil is time.Now): a test moves it past StoredFor rather
// than waiting for it.
func (a *Authenticator) WithAccountsAt(r AccountReader, now func() time.Time) *Authenticator {
	if now == nil {
		now = time.Now
	}
	b := *a
	b.stored = &storedCache{r: r, clock: now, entries: NewRecent[string, storedEntry](storedSize, StoredFor)}
	return &b
}

// Configured returns the accounts the Authenticator was made with (the
// accounts file or secret), without their hashes.
func (a *Authenticator) Configured() []Account {
	out := make([]Account, len(a.accounts))
	for i, acc := range a.accounts {
		out[i] = Account{Name: acc.Name, Role: acc.Role}
	}
	return out
}

// Cost is the bcrypt cost of the configured accounts' hashes (the
// highest; bcrypt's default without any): passwords set at run time are
// hashed at it, so they cost a guesser what the configured ones do.
func (a *Authenticator) Cost() int { return a.cost }

// IsConfigured reports whether name is one of the accounts the
// Authenticator was made with.
func (a *Authenticator) IsConfigured(name string) bool {
	_, ok := a.lookup(name)
	return ok
}

type storedEntry struct {
	acc   Account
	found bool
}

// storedCache remembers what an AccountReader answered.
type storedCache struct {
	r       AccountReader
	clock   func() time.Time
	entries *Recent[string, storedEntry]
}

// peek returns what is remembered of name, without I/O; known is false if
// nothing fresh is.
func (c *storedCache) peek(name string) (acc Account, found, known bool) {
	e, known := c.entries.Get(name, c.clock())
	return e.acc, e.found, known
}

// read returns the account of name, from memory if fresh, else from the
// reader.
func (c *storedCache) read(ctx context.Context, name string) (Account, bool, error) {
	if acc, found, known := c.peek(name); known {
		return acc, found, nil
	}
	now := c.clock()
	acc, found, err := c.r.ReadAccount(ctx, name)
	if err != nil {
		return Account{}, false, err
	}
	if !found {
		acc = Account{}
	}
	c.entries.Put(name, storedEntry{acc, found}, now)
	return acc, found, nil
}

// Recent remembers values for at most ttl each, the size most recently
// used of them: the lookups of a store that a process may answer from
// memory for a short while (stored accounts here, API tokens in
// internal/apitoken). It is safe for concurrent use.
type Recent[K comparable, V any] struct {
	ttl time.Duration

	mu      sync.Mutex
	entries *lru[K, recentEntry[V]]
}

type recentEntry[V any] struct {
	v  V
	at time.Time
}

// NewRecent returns a Recent of at most size entries, each fresh for ttl
// (0: never; Get always misses).
func NewRecent[K comparable, V any](size int, ttl time.Duration) *Recent[K, V] {
	return &Recent[K, V]{ttl: ttl, entries: newLRU[K, recentEntry[V]](size)}
}

// Get returns the value put for k if it is fresh at now (put less than
// ttl before it, and not after it).
func (c *Recent[K, V]) Get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	e, ok := c.entries.get(k)
	c.mu.Unlock()
	if !ok || now.Sub(e.at) >= c.ttl || now.Before(e.at) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put remembers v for k as of at.
func (c *Recent[K, V]) Put(k K, v V, at time.Time) {
	c.mu.Lock()
	c.entries.put(k, recentEntry[V]{v, at})
	c.mu.Unlock()
}
