package apitoken

import (
	"context"
	"errors"
	"fmt"
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
	cache *auth.Recent[string, cached]
}

type cached struct {
	t     Token
	found bool
}

// NewVerifier returns a Verifier over store remembering lookups for ttl
// (at most CacheFor: a longer ttl is cut to it; 0 reads the store every
// time).
func NewVerifier(store Store, ttl time.Duration) *Verifier {
	ttl = min(ttl, CacheFor)
	return &Verifier{store: store, ttl: ttl, clock: time.Now, cache: auth.NewRecent[string, cached](cacheSize, ttl)}
}

// WithClock sets the clock v reads (nil leaves time.Now): the expiry of
// tokens and of what v remembers. A test moves it past CacheFor rather
// than waiting for it. It returns v.
func (v *Verifier) WithClock(now func() time.Time) *Verifier {
	if now != nil {
		v.clock = now
	}
	return v
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
	if c, fresh := v.cache.Get(id, now); fresh {
		return c.t, c.found, nil
	}
	t, err := v.store.Get(ctx, id)
	found := err == nil
	if err != nil && !apperr.Is(err, apperr.NotFound) {
		return Token{}, false, fmt.Errorf("read token %s: %w", id, err)
	}
	v.cache.Put(id, cached{t, found}, now)
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
