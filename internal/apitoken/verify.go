package apitoken

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/auth"
)

// CacheFor is the longest a Verifier remembers a token it read: a
// revocation takes effect in every process within CacheFor (plus the
// store's own delay, none for bbolt and DynamoDB's consistent reads).
const CacheFor = 2 * time.Second

// cacheSize bounds the tokens a Verifier remembers.
const cacheSize = 1024

// ErrRefused marks a bearer value that does not authenticate: malformed,
// unknown, wrong secret, revoked or expired.
var ErrRefused = errors.New("token refused")

// Verifier checks bearer values against a Store. It is safe for
// concurrent use.
type Verifier struct {
	store Store
	ttl   time.Duration
	clock func() time.Time

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	t       Token
	found   bool
	fetched time.Time
}

// NewVerifier returns a Verifier over store remembering lookups for ttl
// (at most CacheFor: a longer ttl is cut to it; 0 reads the store every
// time).
func NewVerifier(store Store, ttl time.Duration) *Verifier {
	return &Verifier{store: store, ttl: min(ttl, CacheFor), clock: time.Now, cache: map[string]cached{}}
}

// Verify returns who a request carrying bearer (<id>.<secret>) is. An
// error wrapping ErrRefused says why it does not authenticate; another
// error is the store's (the request cannot be answered now).
func (v *Verifier) Verify(ctx context.Context, bearer string) (auth.Principal, error) {
	id, secret, ok := Split(bearer)
	if !ok {
		return auth.Principal{}, fmt.Errorf("%w: not <id>.<secret>", ErrRefused)
	}
	now := v.clock()
	t, found, err := v.lookup(ctx, id, now)
	if err != nil {
		return auth.Principal{}, err
	}
	if !found || !t.Matches(secret) {
		return auth.Principal{}, fmt.Errorf("%w: no token %s of that secret", ErrRefused, id)
	}
	if err := t.Usable(now); err != nil {
		return auth.Principal{}, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return t.Principal(), nil
}

func (v *Verifier) lookup(ctx context.Context, id string, now time.Time) (Token, bool, error) {
	v.mu.Lock()
	c, hit := v.cache[id]
	v.mu.Unlock()
	if hit && now.Sub(c.fetched) < v.ttl && !now.Before(c.fetched) {
		return c.t, c.found, nil
	}
	t, err := v.store.Get(ctx, id)
	found := err == nil
	if err != nil && !apperr.Is(err, apperr.NotFound) {
		return Token{}, false, fmt.Errorf("read token %s: %w", id, err)
	}
	if v.ttl > 0 {
		v.mu.Lock()
		if len(v.cache) >= cacheSize {
			for k, e := range v.cache {
				if now.Sub(e.fetched) >= v.ttl || len(v.cache) >= cacheSize {
					delete(v.cache, k)
				}
			}
		}
		v.cache[id] = cached{t, found, now}
		v.mu.Unlock()
	}
	return t, found, nil
}

// VerifyBearer is Verify as auth.BearerVerifier asks: ok false with a nil
// error when bearer does not authenticate.
func (v *Verifier) VerifyBearer(ctx context.Context, bearer string) (auth.Principal, bool, error) {
	p, err := v.Verify(ctx, bearer)
	switch {
	case errors.Is(err, ErrRefused):
		return auth.Principal{}, false, nil
	case err != nil:
		return auth.Principal{}, false, err
	}
	return p, true, nil
}

// IsToken says whether bearer has the form of a token (<16 hex
// digits>.<secret>).
func (v *Verifier) IsToken(bearer string) bool {
	_, _, ok := Split(bearer)
	return ok
}

var _ auth.BearerVerifier = (*Verifier)(nil)
