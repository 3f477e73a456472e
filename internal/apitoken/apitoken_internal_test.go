package apitoken

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/auth"
)

func TestIssueRefuses(t *testing.T) {
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	op := auth.Principal{Name: "olga", Role: auth.Operator}
	limited := auth.Principal{Name: "ann", Role: auth.Admin, TokenID: "t", Layers: []string{"roads"}}
	for _, c := range []struct {
		name    string
		creator auth.Principal
		role    auth.Role
		layers  []string
		life    time.Duration
		label   string
		want    string
	}{
		{"AboveCreator", op, auth.Admin, nil, time.Hour, "", "may not be above its creator's"},
		{"NoRole", op, auth.RoleNone, nil, time.Hour, "", "needs a role"},
		{"TooShort", op, auth.Viewer, nil, time.Second, "", "lifetime must be between"},
		{"TooLong", op, auth.Viewer, nil, 400 * 24 * time.Hour, "", "lifetime must be between"},
		{"LongLabel", op, auth.Viewer, nil, time.Hour, strings.Repeat("x", MaxLabel+1), "label is at most"},
		{"UnlimitedFromLimited", limited, auth.Viewer, nil, time.Hour, "", "must be limited"},
		{"OtherLayerFromLimited", limited, auth.Viewer, []string{"rivers"}, time.Hour, "", `may not use layer "rivers"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Issue(c.creator, c.role, c.layers, now.Add(c.life), c.label, now)
			if !apperr.Is(err, apperr.Invalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Issue: %v; want invalid, %q", err, c.want)
			}
		})
	}
	tok, bearer, err := Issue(op, auth.Operator, []string{"roads"}, now.Add(time.Hour), "ci", now)
	if err != nil {
		t.Fatal(err)
	}
	id, secret, ok := Split(bearer)
	if !ok || id != tok.ID || !tok.Matches(secret) || tok.Matches(secret+"x") || strings.Contains(string(tok.Hash[:]), secret) {
		t.Errorf("bearer %q of token %+v: split %q %q %v", bearer, tok, id, secret, ok)
	}
	if len(secret) != 43 {
		t.Errorf("secret of %d characters; want 43 (256 bits)", len(secret))
	}
}

// countingStore is one token in memory, counting reads.
type countingStore struct {
	mu    sync.Mutex
	t     Token
	reads int
}

func (s *countingStore) Create(context.Context, Token) error { return nil }
func (s *countingStore) List(context.Context) ([]Token, error) {
	return nil, nil
}
func (s *countingStore) Get(_ context.Context, id string) (Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if id != s.t.ID {
		return Token{}, apperr.New(apperr.NotFound, "no")
	}
	return s.t, nil
}
func (s *countingStore) Revoke(_ context.Context, _ string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t.Revoked = at
	return nil
}

// TestVerifierCachesAtMostTTL: a lookup is remembered for the ttl and no
// longer, so a revocation is seen once it has passed; a ttl above CacheFor
// is cut to it.
func TestVerifierCachesAtMostTTL(t *testing.T) {
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	tok, bearer, err := Issue(auth.Principal{Name: "ann", Role: auth.Admin}, auth.Viewer, nil, now.Add(time.Hour), "", now)
	if err != nil {
		t.Fatal(err)
	}
	s := &countingStore{t: tok}
	v := NewVerifier(s, time.Hour)
	if v.ttl != CacheFor {
		t.Fatalf("ttl %v; want it cut to %v", v.ttl, CacheFor)
	}
	clock := now
	v.clock = func() time.Time { return clock }
	for range 3 {
		if _, err := v.Verify(t.Context(), bearer); err != nil {
			t.Fatal(err)
		}
	}
	if s.reads != 1 {
		t.Errorf("%d reads for 3 checks within the ttl; want 1", s.reads)
	}
	_ = s.Revoke(t.Context(), tok.ID, now)
	clock = now.Add(CacheFor - time.Millisecond)
	if _, err := v.Verify(t.Context(), bearer); err != nil {
		t.Errorf("within the ttl: %v; want the remembered token", err)
	}
	clock = now.Add(CacheFor)
	if _, err := v.Verify(t.Context(), bearer); !errors.Is(err, ErrRefused) {
		t.Errorf("at the ttl after a revocation: %v; want refused", err)
	}
}
