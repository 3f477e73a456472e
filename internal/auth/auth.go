// Package auth guards the administration API with HTTP Basic authentication,
// as REST-CONTRACT.md section 2 requires.
//
// Accounts come from an htpasswd-style file (see Parse for the format), or are
// given directly to New. Passwords are stored only as bcrypt hashes; a file
// with a plaintext password or any other hash scheme is rejected when it is
// loaded. An Authenticator is immutable: to pick up a changed file, load it
// again and swap the middleware.
//
// # Responses
//
// Authenticator.Middleware runs before anything else. A request without
// usable credentials of a known account gets
//
//	401 Unauthorized
//	WWW-Authenticate: Basic realm="GeoWebCache Secured"
//	Content-Type: text/plain; charset=utf-8
//
//	Authentication required\n
//
// and valid credentials of an account without a role (the accounts file's
// "user", kept for compatibility) get 403 with a text/plain body naming the
// account. Bodies are written by http.Error, hence the trailing newline. In
// both cases the wrapped handler is not called, so nothing is read or
// changed.
//
// # Roles
//
// Every other account has a Role (Viewer < Operator < Admin). The
// middleware only authenticates: it stores the request's Principal (name
// and role) in the context, and what a role may do is decided where the
// request is answered (the REST interface's table, or Require in front of
// a handler), answered 403 with Refusal's line when the role falls short.
//
// # Tokens
//
// An Authenticator made WithBearer also accepts
//
//	Authorization: Bearer <id>.<secret>
//
// (an API token, internal/apitoken), whose Principal is the token's
// creator with the token's role, id and layers. A value that is not a
// token's form is no credentials (401, Basic challenge, uncounted); a
// wrong, revoked or expired token gets 401 with the Basic challenge and a
// Bearer one (RFC 6750, error="invalid_token") and counts as a failed login of its address, so
// the locks below apply to tokens and passwords together; a token that
// cannot be checked (its store is unavailable) gets 503, uncounted.
//
// # Timing and caching
//
// Account names are compared in constant time, and a request naming an
// unknown account still pays for one bcrypt comparison (against a dummy hash
// of the same cost), so response times do not reveal which names exist.
// Because bcrypt costs tens of milliseconds per check and admin clients may
// call the API in loops, the outcome of each check (success or failure) is
// remembered in a small bounded in-memory cache keyed by a salted SHA-256
// digest of the name and password; passwords themselves are never kept.
//
// # Failed logins
//
// Failed logins are counted per client address (ClientAddress) and per
// account name, and a guesser is answered
//
//	429 Too Many Requests
//	Retry-After: 10
//	Content-Type: text/plain; charset=utf-8
//
//	Too many failed logins from this address: try again in 10 s (…)\n
//
// before any bcrypt comparison, so a flood of wrong passwords costs next to
// nothing. With DefaultLimits: 10 failures from one address within 5
// minutes lock the address for 10 s; once locked, each further failure
// locks it again for twice as long (20 s, 40 s, … up to 15 minutes), and
// the doubling is forgotten one step per 5 minutes without failures. 20
// failures naming one account within 5 minutes lock that account in the
// same way, for every address that has not logged in as it.
//
// An (account, address) pair that logged in successfully within the last
// 24 hours is known: its attempts pass whatever the locks of its address
// and its account, so a flood from elsewhere does not lock the real
// administrator out where they work. A correct password from an unknown
// pair at a locked address or of a locked account is refused until the lock
// ends (it is not even checked), as GeoServer's brute-force protection does.
// A known pair's own failures (5 within 5 minutes) make it unknown again.
// A refusal is held for a second before it is answered (64 at most at
// once; never on Lambda), so a guesser that waits for its answers, as a
// flood over a few connections does, sends a few requests a second instead
// of thousands.
// Checks in flight count as failures until they end, so that concurrent
// guesses run no more checks than the limit. Only failures that cost a
// bcrypt comparison count: credentials the verify cache remembers as wrong
// (a client looping with an old password) and passwords longer than bcrypt
// reads are answered 401 at once, uncounted, even from a locked address. All this state is in memory,
// per process (per Lambda instance), in maps of bounded size that forget
// the least recently used entry; account names are held as salted digests.
package auth

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// Realm is the realm announced in the WWW-Authenticate header of a 401
// response. It is GeoWebCache's, so that clients written for GeoWebCache see
// the same challenge.
const Realm = "GeoWebCache Secured"

// The 401 body; clients may match it (written with a trailing newline).
const msgUnauthorized = "Authentication required"

// Account is one user of the administration API.
type Account struct {
	// Name is the user name sent in HTTP Basic credentials. It must not
	// contain ':' (Basic credentials split at the first colon) or
	// whitespace.
	Name string
	// Hash is the bcrypt hash of the password ($2a$, $2b$ or $2y$).
	Hash []byte
	// Role is what the account may do; RoleNone (the accounts file's
	// "user") is refused every request with 403.
	Role Role
}

// Authenticator checks HTTP Basic credentials against a fixed set of
// accounts. It is safe for concurrent use. Create one with New, Parse or
// LoadFile; the zero value is not usable.
type Authenticator struct {
	accounts []Account
	// dummyHash is compared against when the name is unknown, so an unknown
	// name costs as much as a known one.
	dummyHash []byte
	cache     *verifyCache
	// compare is bcrypt.CompareHashAndPassword; a field so that white-box
	// tests can count calls.
	compare func(hash, password []byte) error
	limits  *limiter
	// bearer checks Bearer credentials (nil: only Basic is accepted).
	bearer BearerVerifier
	// stored reads the accounts added at run time (nil: none).
	stored *storedCache
	// cost is the highest bcrypt cost among the accounts.
	cost int
}

// BearerVerifier checks the value of an Authorization: Bearer header (an
// API token, internal/apitoken). IsToken says whether the value has the
// form of a token, without I/O: one that has not is answered as a request
// without credentials (401 with the Basic challenge), uncounted, as a
// malformed Basic header is. VerifyBearer: ok false with a nil error, the
// value does not authenticate; an error, it cannot be checked now.
type BearerVerifier interface {
	IsToken(bearer string) bool
	VerifyBearer(ctx context.Context, bearer string) (p Principal, ok bool, err error)
}

// WithBearer returns an Authenticator that also accepts
//
//	Authorization: Bearer <value>
//
// checked by v, sharing a's accounts, verify cache and failed-login
// limits: a failed bearer value counts as a failed login of its address
// (and of the name "token <first 16 bytes>"), a successful one sets the
// Principal v returns. A bearer value that cannot be checked (the store
// is unavailable) is answered 503, uncounted.
func (a *Authenticator) WithBearer(v BearerVerifier) *Authenticator {
	b := *a
	b.bearer = v
	return &b
}

// bearerOf returns the credentials of an Authorization: Bearer header.
func bearerOf(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "Bearer ") {
		return "", false
	}
	return strings.TrimSpace(h[7:]), true
}

// serveBearer authenticates a request carrying Bearer credentials.
func (a *Authenticator) serveBearer(w http.ResponseWriter, r *http.Request, bearer string, next http.Handler) {
	if !a.bearer.IsToken(bearer) {
		// Free (no lookup) and teaches nothing: not counted.
		unauthorized(w)
		return
	}
	name := "token " + bearer[:min(len(bearer), 16)]
	at, refused := a.limits.admit(name, ClientAddress(r))
	if refused.why != "" {
		a.limits.hold(r, refused)
		tooManyRequests(w, refused)
		return
	}
	p, ok, err := a.bearer.VerifyBearer(r.Context(), bearer)
	if err != nil {
		a.limits.abandon(at)
		slog.ErrorContext(r.Context(), "check bearer token", "err", err)
		http.Error(w, "Cannot check the token now: try again", http.StatusServiceUnavailable)
		return
	}
	a.limits.done(at, ok)
	if !ok || p.Role == RoleNone {
		// The Basic challenge first, as for any other 401 (clients
		// written for GeoWebCache read it), then the token's error.
		w.Header().Set("WWW-Authenticate", `Basic realm="`+Realm+`"`)
		w.Header().Add("WWW-Authenticate", `Bearer realm="`+Realm+`", error="invalid_token"`)
		http.Error(w, msgUnauthorized, http.StatusUnauthorized)
		return
	}
	next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
}

// Option adjusts New.
type Option func(*Authenticator)

// WithLimits sets the limits of failed logins (DefaultLimits without it).
func WithLimits(l Limits) Option {
	return func(a *Authenticator) { a.limits = newLimiter(l) }
}

// dummyHashBody is the salt and checksum part of a bcrypt hash of a random
// string that is not anyone's password. It is combined with the highest cost
// among the accounts to make the dummy hash.
const dummyHashBody = "bLCouxc4vQnlEvb4QrfupuWRMwGx1J.0n0yxoPPzCANsrfYniwmti"

// New returns an Authenticator for accounts. The slice and hashes are
// copied. New does not validate the accounts (Parse and LoadFile do): an
// account whose Hash is not a valid bcrypt hash can never authenticate, and
// if two accounts share a name the first one wins. With no accounts every
// request is answered with 401.
func New(accounts []Account, opts ...Option) *Authenticator {
	a := &Authenticator{
		accounts: make([]Account, len(accounts)),
		cache:    newVerifyCache(defaultCacheSize),
		compare:  bcrypt.CompareHashAndPassword,
	}
	for _, o := range opts {
		o(a)
	}
	if a.limits == nil {
		a.limits = newLimiter(DefaultLimits)
	}
	maxCost := 0
	for i, acc := range accounts {
		acc.Hash = append([]byte(nil), acc.Hash...)
		a.accounts[i] = acc
		if c, err := bcrypt.Cost(acc.Hash); err == nil && c > maxCost {
			maxCost = c
		}
	}
	if maxCost == 0 {
		maxCost = bcrypt.DefaultCost
	}
	a.cost = maxCost
	a.dummyHash = fmt.Appendf(nil, "$2a$%02d$%s", maxCost, dummyHashBody)
	return a
}

// lookup finds the account called name. Every account name is compared, in
// constant time for names of equal length, so the time taken does not depend
// on whether or where the name occurs.
func (a *Authenticator) lookup(name string) (acc *Account, found bool) {
	idx := -1
	for i := range a.accounts {
		eq := subtle.ConstantTimeCompare([]byte(name), []byte(a.accounts[i].Name))
		// Keep the first match; do not break early.
		if eq == 1 && idx < 0 {
			idx = i
		}
	}
	if idx < 0 {
		return nil, false
	}
	return &a.accounts[idx], true
}

// MaxPasswordBytes is the longest password bcrypt reads in full; longer
// ones are refused when an account is created and at login.
const MaxPasswordBytes = 72

// find returns the account called name: a configured one, else a stored
// one (read through the cache). An error: the stored accounts cannot be
// read now.
func (a *Authenticator) find(ctx context.Context, name string) (*Account, bool, error) {
	if acc, found := a.lookup(name); found || a.stored == nil {
		return acc, found, nil
	}
	acc, found, err := a.stored.read(ctx, name)
	if err != nil || !found {
		return nil, false, err
	}
	return &acc, true, nil
}

// peek is find without I/O: known is false when name is not a configured
// account and nothing fresh is remembered of it as a stored one.
func (a *Authenticator) peek(name string) (acc *Account, found, known bool) {
	if acc, found := a.lookup(name); found || a.stored == nil {
		return acc, found, true
	}
	sacc, found, known := a.stored.peek(name)
	if !found {
		return nil, found, known
	}
	return &sacc, true, known
}

// hashOf is the hash a password for acc is compared against: its own, or
// the dummy hash for a name no account has.
func (a *Authenticator) hashOf(acc *Account, found bool) []byte {
	if found {
		return acc.Hash
	}
	return a.dummyHash
}

// authenticate reports whether password is the password of acc (found
// false: of no account, compared against the dummy hash all the same).
// The verify cache's key holds the hash compared against, so a password
// changed at run time is never answered from what was remembered of the
// old one.
func (a *Authenticator) authenticate(name, password string, acc *Account, found bool) bool {
	if len(password) > MaxPasswordBytes {
		// bcrypt reads only the first 72 bytes: a longer password would be
		// accepted whatever follows them.
		return false
	}
	hash := a.hashOf(acc, found)
	key := a.cache.key(name, hash, password)
	if ok, hit := a.cache.get(key); hit {
		return ok && found
	}
	ok := a.compare(hash, []byte(password)) == nil && found
	a.cache.put(key, ok)
	return ok
}

// knownFailure reports whether name and password are known to fail without
// a bcrypt comparison or a read of the stored accounts: a password bcrypt
// would truncate, or a failure the verify cache remembers against the
// account's current hash. (A remembered success is no such answer: it
// would let a locked guesser try passwords against the cache.)
func (a *Authenticator) knownFailure(name, password string) bool {
	if len(password) > MaxPasswordBytes {
		return true
	}
	acc, found, known := a.peek(name)
	if !known {
		return false
	}
	ok, hit := a.cache.get(a.cache.key(name, a.hashOf(acc, found), password))
	return hit && !ok
}

// Middleware returns a handler that lets a request through to next only if
// it carries HTTP Basic credentials of an account with a role. Missing or
// malformed credentials (another scheme, bad base64, no colon) and wrong
// name or password get 401 with a Basic challenge; valid credentials of an
// account without a role get 403; credentials from a locked address or for
// a locked account get 429 with Retry-After, unchecked (see "Failed logins"
// above). In those cases next is not called. On success the request's
// Principal is available to next through PrincipalOf(r.Context()) and the
// account name through User; whether the role allows the request is for
// next to decide (Require).
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Request.BasicAuth accepts only the Basic scheme (case-insensitive),
		// standard base64 and a colon in the decoded text.
		if bearer, ok := bearerOf(r); ok && a.bearer != nil {
			a.serveBearer(w, r, bearer, next)
			return
		}
		name, password, ok := r.BasicAuth()
		if !ok {
			unauthorized(w)
			return
		}
		if a.knownFailure(name, password) {
			// Free (no bcrypt) and teaches nothing: not counted.
			unauthorized(w)
			return
		}
		at, refused := a.limits.admit(name, ClientAddress(r))
		if refused.why != "" {
			a.limits.hold(r, refused)
			tooManyRequests(w, refused)
			return
		}
		acc, found, err := a.find(r.Context(), name)
		if err != nil {
			a.limits.abandon(at)
			slog.ErrorContext(r.Context(), "read stored account", "err", err)
			http.Error(w, "Cannot check the account now: try again", http.StatusServiceUnavailable)
			return
		}
		ok = a.authenticate(name, password, acc, found)
		a.limits.done(at, ok)
		if !ok {
			unauthorized(w)
			return
		}
		p := Principal{Name: acc.Name, Role: acc.Role}
		if acc.Role == RoleNone {
			w.Header().Set("X-Content-Type-Options", "nosniff")
			http.Error(w, "Account "+acc.Name+" has no role: the user role, kept for compatibility, allows no request", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Basic realm="`+Realm+`"`)
	http.Error(w, msgUnauthorized, http.StatusUnauthorized)
}

// User returns the name of the account that Middleware authenticated for the
// request whose context is ctx. ok is false if the request did not pass
// through Middleware.
func User(ctx context.Context) (name string, ok bool) {
	p, ok := PrincipalOf(ctx)
	return p.Name, ok
}
