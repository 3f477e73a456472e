package auth

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func mustHash(tb testing.TB, password string, cost int) []byte {
	tb.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func TestDummyHash(t *testing.T) {
	tests := []struct {
		name     string
		accounts []Account
		wantCost int
	}{
		{"no accounts", nil, bcrypt.DefaultCost},
		{"highest account cost", []Account{
			{Name: "a", Hash: mustHash(t, "x", bcrypt.MinCost)},
			{Name: "b", Hash: mustHash(t, "x", bcrypt.MinCost+1)},
		}, bcrypt.MinCost + 1},
		{"invalid account hash ignored", []Account{{Name: "a", Hash: []byte("plain")}}, bcrypt.DefaultCost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(tt.accounts)
			if err := checkHash(a.dummyHash); err != nil {
				t.Fatalf("checkHash(dummy): got %v, want nil", err)
			}
			if got, _ := bcrypt.Cost(a.dummyHash); got != tt.wantCost {
				t.Errorf("dummy cost: got %d, want %d", got, tt.wantCost)
			}
		})
	}
	// The dummy must cost a full bcrypt run, i.e. fail with a mismatch and
	// not with a quick format error.
	a := New([]Account{{Name: "a", Hash: mustHash(t, "x", bcrypt.MinCost)}})
	if err := bcrypt.CompareHashAndPassword(a.dummyHash, []byte("x")); !errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
		t.Errorf("compare with dummy: got %v, want %v", err, bcrypt.ErrMismatchedHashAndPassword)
	}
}

// countingAuthenticator returns an Authenticator whose bcrypt comparisons
// are recorded.
func countingAuthenticator(t *testing.T, accounts []Account) (*Authenticator, func() [][]byte) {
	a := New(accounts)
	var mu sync.Mutex
	var hashes [][]byte
	a.compare = func(hash, password []byte) error {
		mu.Lock()
		hashes = append(hashes, hash)
		mu.Unlock()
		return bcrypt.CompareHashAndPassword(hash, password)
	}
	return a, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		out := hashes
		hashes = nil
		return out
	}
}

func TestAuthenticateComparesAndCaches(t *testing.T) {
	adminHash := mustHash(t, "pw", bcrypt.MinCost)
	a, compared := countingAuthenticator(t, []Account{
		{Name: "admin", Hash: adminHash, Role: Admin},
		{Name: "viewer", Hash: mustHash(t, "look", bcrypt.MinCost)},
	})
	steps := []struct {
		name, user, password string
		wantOK               bool
		wantHash             []byte // hash compared against; nil = no comparison (cache hit)
	}{
		{"unknown user compares against dummy", "ghost", "pw", false, a.dummyHash},
		{"unknown user again is cached", "ghost", "pw", false, nil},
		{"wrong password compares against account", "admin", "nope", false, adminHash},
		{"wrong password again is cached", "admin", "nope", false, nil},
		{"right password compares", "admin", "pw", true, adminHash},
		{"right password again is cached", "admin", "pw", true, nil},
		{"non-admin succeeds at authentication", "viewer", "look", true, a.accounts[1].Hash},
	}
	for _, s := range steps {
		acc, ok := a.check(t, s.user, s.password)
		if ok != s.wantOK {
			t.Errorf("%s: ok: got %v, want %v", s.name, ok, s.wantOK)
		}
		if ok && acc.Name != s.user {
			t.Errorf("%s: account: got %q, want %q", s.name, acc.Name, s.user)
		}
		got := compared()
		switch {
		case s.wantHash == nil && len(got) != 0:
			t.Errorf("%s: comparisons: got %d, want 0", s.name, len(got))
		case s.wantHash != nil && (len(got) != 1 || !bytes.Equal(got[0], s.wantHash)):
			t.Errorf("%s: comparisons: got %q, want [%q]", s.name, got, s.wantHash)
		}
	}
}

func TestLookupFirstMatchWins(t *testing.T) {
	a := New([]Account{
		{Name: "x", Hash: mustHash(t, "1", bcrypt.MinCost), Role: Admin},
		{Name: "x", Hash: mustHash(t, "2", bcrypt.MinCost), Role: RoleNone},
	})
	acc, ok := a.lookup("x")
	if !ok || acc.Role != Admin {
		t.Errorf("lookup: got (%+v, %v), want the first account", acc, ok)
	}
	if _, ok := a.lookup("xx"); ok {
		t.Errorf("lookup xx: got found, want not found")
	}
}

func TestNewCopiesAccounts(t *testing.T) {
	accounts := []Account{{Name: "a", Hash: mustHash(t, "pw", bcrypt.MinCost), Role: Admin}}
	a := New(accounts)
	accounts[0].Name = "b"
	accounts[0].Hash[10] ^= 1
	if _, ok := a.check(t, "a", "pw"); !ok {
		t.Errorf("authenticate after caller changed its slice: got false, want true")
	}
}

func TestCacheKey(t *testing.T) {
	c := newVerifyCache(4)
	pairs := [][2]string{
		{"a\x00b", "c"},
		{"a", "b\x00c"},
		{"ab", "c"},
		{"a", "bc"},
		{"", ""},
	}
	seen := make(map[cacheKey][2]string)
	for _, p := range pairs {
		k := c.key(p[0], nil, p[1])
		if prev, dup := seen[k]; dup {
			t.Errorf("key(%q) equals key(%q)", p, prev)
		}
		seen[k] = p
	}
	if k1, k2 := c.key("a", nil, "b"), c.key("a", nil, "b"); k1 != k2 {
		t.Errorf("key is not deterministic")
	}
	if c.key("a", nil, "b") == newVerifyCache(4).key("a", nil, "b") {
		t.Errorf("keys of two caches are equal, want them salted differently")
	}
}

func TestCacheBounded(t *testing.T) {
	const size = 4
	c := newVerifyCache(size)
	keys := make([]cacheKey, 10)
	for i := range keys {
		keys[i] = c.key(fmt.Sprint(i), nil, "pw")
		c.put(keys[i], i%2 == 0)
		if got := c.count(); got > size {
			t.Fatalf("after %d puts: count got %d, want <= %d", i+1, got, size)
		}
	}
	if got := c.count(); got != size {
		t.Errorf("count: got %d, want %d", got, size)
	}
	for i, k := range keys {
		ok, hit := c.get(k)
		wantHit := i >= len(keys)-size // first in, first out
		if hit != wantHit {
			t.Errorf("key %d: hit got %v, want %v", i, hit, wantHit)
		}
		if hit && ok != (i%2 == 0) {
			t.Errorf("key %d: ok got %v, want %v", i, ok, i%2 == 0)
		}
	}
	// Putting a present key again must not take a second slot.
	c.put(keys[9], true)
	c.put(keys[9], true)
	for i := range 3 {
		c.put(c.key("new", nil, fmt.Sprint(i)), false)
	}
	if _, hit := c.get(keys[9]); !hit {
		t.Errorf("key 9 evicted early: re-put took extra slots")
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := newVerifyCache(16)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := c.key(fmt.Sprint(g), nil, fmt.Sprint(i%40))
				if _, hit := c.get(k); !hit {
					c.put(k, i%3 == 0)
				}
			}
		})
	}
	wg.Wait()
	if got := c.count(); got > 16 {
		t.Errorf("count: got %d, want <= 16", got)
	}
}

func TestSetAccountLineEmpty(t *testing.T) {
	got := string(setAccountLine(nil, "a", "H", ""))
	if want := "a:H\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// FuzzParse checks that parsing never panics or accepts an invalid account,
// and that setting an account's line in any loadable file (what AddAccount
// does) leaves it loadable with that account's new hash.
func FuzzParse(f *testing.F) {
	const h = "$2a$04$bLCouxc4vQnlEvb4QrfupuWRMwGx1J.0n0yxoPPzCANsrfYniwmti"
	f.Add("admin:" + h + "\n")
	f.Add("# c\n\nadmin:" + h + ":user\r\nb:" + h)
	f.Add("\uFEFFadmin:" + h + ":admin")
	f.Add("geowebcache:secured\n")
	f.Add("a:b:c:d\n:\n")
	f.Fuzz(func(t *testing.T, content string) {
		accounts, err := parseAccounts(bytes.NewReader([]byte(content)), "f")
		if err != nil {
			return
		}
		for _, acc := range accounts {
			if CheckName(acc.Name) != nil || checkHash(acc.Hash) != nil {
				t.Fatalf("accepted invalid account %+v", acc)
			}
		}
		for _, name := range []string{"admin", accounts[0].Name} {
			out := setAccountLine([]byte(content), name, h, "")
			got, err := parseAccounts(bytes.NewReader(out), "f")
			if err != nil {
				t.Fatalf("setAccountLine(%q, %q) = %q does not parse: %v", content, name, out, err)
			}
			found := false
			for _, acc := range got {
				if acc.Name == name {
					found = found || string(acc.Hash) == h
				}
			}
			if !found {
				t.Fatalf("setAccountLine(%q, %q) = %q lost the account", content, name, out)
			}
		}
	})
}

// check is the middleware's check of name and password: find the
// account, then compare.
func (a *Authenticator) check(t *testing.T, name, password string) (*Account, bool) {
	t.Helper()
	acc, found, err := a.find(t.Context(), name)
	if err != nil {
		t.Fatalf("find %q: %v", name, err)
	}
	if !a.authenticate(name, password, acc, found) {
		return nil, false
	}
	return acc, true
}

func TestCacheKeyHoldsTheHash(t *testing.T) {
	c := newVerifyCache(4)
	if c.key("a", []byte("h1"), "pw") == c.key("a", []byte("h2"), "pw") {
		t.Errorf("keys of one password against two hashes are equal")
	}
	if c.key("a", []byte("hp"), "w") == c.key("a", []byte("h"), "pw") {
		t.Errorf("key is ambiguous between hash and password")
	}
}

// TestRecent: a value is fresh for less than the ttl after it was put,
// never before it, and the least recently used one goes when full.
func TestRecent(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	c := NewRecent[string, int](2, time.Second)
	c.Put("a", 1, t0)
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{{t0, true}, {t0.Add(999 * time.Millisecond), true}, {t0.Add(time.Second), false}, {t0.Add(-time.Millisecond), false}} {
		if v, ok := c.Get("a", tc.at); ok != tc.want || (ok && v != 1) {
			t.Errorf("Get at %v: %d, %v; want fresh %v", tc.at.Sub(t0), v, ok, tc.want)
		}
	}
	c.Put("b", 2, t0)
	c.Get("a", t0) // a is the most recently used
	c.Put("c", 3, t0)
	if _, ok := c.Get("b", t0); ok {
		t.Errorf("b kept in a cache of 2 after a was used and c put")
	}
	if _, ok := c.Get("a", t0); !ok {
		t.Errorf("a forgotten")
	}
	if _, ok := NewRecent[string, int](2, 0).Get("x", t0); ok {
		t.Errorf("a ttl of 0 answered from memory")
	}
}
