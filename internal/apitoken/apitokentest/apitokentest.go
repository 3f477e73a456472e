// Package apitokentest is the conformance suite every apitoken.Store must
// pass: create and get with every field kept, a second token of one id
// refused, an unknown id not found, the listing, revocation, and a
// revoked or expired token not authenticating.
package apitokentest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"tilecache/internal/apitoken"
	"tilecache/internal/apperr"
	"tilecache/internal/auth"
)

// NewStore returns a fresh, empty store.
type NewStore func(t *testing.T) apitoken.Store

// Run runs the suite.
func Run(t *testing.T, newStore NewStore) {
	t.Run("CreateGetEveryField", func(t *testing.T) { testCreateGet(t, newStore(t)) })
	t.Run("DuplicateIDConflict", func(t *testing.T) { testDuplicate(t, newStore(t)) })
	t.Run("UnknownNotFound", func(t *testing.T) { testUnknown(t, newStore(t)) })
	t.Run("ListOldestFirst", func(t *testing.T) { testList(t, newStore(t)) })
	t.Run("Revoke", func(t *testing.T) { testRevoke(t, newStore(t)) })
	t.Run("RevokedOrExpiredDoesNotAuthenticate", func(t *testing.T) { testVerify(t, newStore(t)) })
}

var admin = auth.Principal{Name: "ann", Role: auth.Admin}

func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

func issue(t *testing.T, s apitoken.Store, role auth.Role, layers []string, at, expires time.Time, label string) (apitoken.Token, string) {
	t.Helper()
	tok, bearer, err := apitoken.Issue(admin, role, layers, expires, label, at)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	if err := s.Create(t.Context(), tok); err != nil {
		t.Fatalf("Create: %v", err)
	}
	return tok, bearer
}

func same(a, b apitoken.Token) bool {
	return a.ID == b.ID && a.Hash == b.Hash && a.Role == b.Role && slices.Equal(a.Layers, b.Layers) &&
		(a.Layers == nil) == (b.Layers == nil) && a.Expires.Equal(b.Expires) && a.Label == b.Label &&
		a.Creator == b.Creator && a.Created.Equal(b.Created) && a.Revoked.Equal(b.Revoked)
}

func testCreateGet(t *testing.T, s apitoken.Store) {
	at := now()
	for _, layers := range [][]string{nil, {"roads", "rivers"}} {
		tok, _ := issue(t, s, auth.Operator, layers, at, at.Add(time.Hour), "pipeline")
		got, err := s.Get(t.Context(), tok.ID)
		if err != nil || !same(got, tok) {
			t.Errorf("Get(%s) = %+v, %v; want %+v", tok.ID, got, err, tok)
		}
	}
}

func testDuplicate(t *testing.T, s apitoken.Store) {
	at := now()
	tok, _ := issue(t, s, auth.Viewer, nil, at, at.Add(time.Hour), "a")
	other := tok
	other.Label = "b"
	if err := s.Create(t.Context(), other); !apperr.Is(err, apperr.Conflict) {
		t.Errorf("Create of an existing id: %v; want a conflict", err)
	}
	if got, err := s.Get(t.Context(), tok.ID); err != nil || got.Label != "a" {
		t.Errorf("Get after a refused Create: %+v, %v; want the first token", got, err)
	}
}

func testUnknown(t *testing.T, s apitoken.Store) {
	if _, err := s.Get(t.Context(), "0123456789abcdef"); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("Get of an unknown id: %v; want not found", err)
	}
	if err := s.Revoke(t.Context(), "0123456789abcdef", now()); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("Revoke of an unknown id: %v; want not found", err)
	}
	if l, err := s.List(t.Context()); err != nil || len(l) != 0 {
		t.Errorf("List of an empty store: %v, %v", l, err)
	}
}

func testList(t *testing.T, s apitoken.Store) {
	at := now()
	var want []apitoken.Token
	for i := range 5 {
		tok, _ := issue(t, s, auth.Viewer, nil, at.Add(time.Duration(i)*time.Second), at.Add(time.Hour), "t")
		want = append(want, tok)
	}
	got, err := s.List(t.Context())
	if err != nil || len(got) != len(want) {
		t.Fatalf("List: %d tokens, %v; want %d", len(got), err, len(want))
	}
	for i := range want {
		if !same(got[i], want[i]) {
			t.Errorf("List[%d] = %+v; want %+v", i, got[i], want[i])
		}
	}
}

func testRevoke(t *testing.T, s apitoken.Store) {
	at := now()
	tok, _ := issue(t, s, auth.Operator, nil, at, at.Add(time.Hour), "t")
	keep, _ := issue(t, s, auth.Operator, nil, at, at.Add(time.Hour), "u")
	if err := s.Revoke(t.Context(), tok.ID, at.Add(time.Second)); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if err := s.Revoke(t.Context(), tok.ID, at.Add(2*time.Second)); err != nil {
		t.Fatalf("Revoke again: %v", err)
	}
	got, err := s.Get(t.Context(), tok.ID)
	if err != nil || !got.Revoked.Equal(at.Add(time.Second)) {
		t.Errorf("Get of a revoked token: revoked %v, %v; want %v (the first revocation)", got.Revoked, err, at.Add(time.Second))
	}
	if got, err := s.Get(t.Context(), keep.ID); err != nil || !got.Revoked.IsZero() {
		t.Errorf("another token: revoked %v, %v; want not revoked", got.Revoked, err)
	}
}

func testVerify(t *testing.T, s apitoken.Store) {
	at := now()
	v := apitoken.NewVerifier(s, 0)
	live, liveBearer := issue(t, s, auth.Operator, []string{"roads"}, at, at.Add(time.Hour), "live")
	p, err := v.Verify(t.Context(), liveBearer)
	if want := (auth.Principal{Name: "ann", Role: auth.Operator, TokenID: live.ID, Layers: []string{"roads"}}); err != nil ||
		p.Name != want.Name || p.Role != want.Role || p.TokenID != want.TokenID || !slices.Equal(p.Layers, want.Layers) {
		t.Errorf("Verify of a live token: %+v, %v; want %+v", p, err, want)
	}
	id, _, _ := apitoken.Split(liveBearer)
	for _, bad := range []string{id + ".wrong", "0123456789abcdef.x", "nonsense", ""} {
		if _, err := v.Verify(t.Context(), bad); !errors.Is(err, apitoken.ErrRefused) {
			t.Errorf("Verify(%q): %v; want refused", bad, err)
		}
	}
	rev, revBearer := issue(t, s, auth.Viewer, nil, at, at.Add(time.Hour), "revoked")
	if _, err := v.Verify(t.Context(), revBearer); err != nil {
		t.Fatalf("Verify before revocation: %v", err)
	}
	if err := s.Revoke(t.Context(), rev.ID, at); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), revBearer); !errors.Is(err, apitoken.ErrRefused) {
		t.Errorf("Verify of a revoked token: %v; want refused", err)
	}
	// Issued long enough ago to have expired a moment ago.
	_, oldBearer := issue(t, s, auth.Viewer, nil, at.Add(-time.Hour), at.Add(-time.Millisecond), "expired")
	if _, err := v.Verify(t.Context(), oldBearer); !errors.Is(err, apitoken.ErrRefused) {
		t.Errorf("Verify of an expired token: %v; want refused", err)
	}
}
