// Package accounttest is the conformance suite every account.Store must
// pass: create and get with every field kept, a second account of one
// name refused, an unknown name not found, the listing by name, update
// and delete, and concurrent creations of one name of which exactly one
// wins.
package accounttest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/account"
	"tilecache/internal/apperr"
	"tilecache/internal/auth"
)

// NewStore returns a fresh, empty store.
type NewStore func(t *testing.T) account.Store

// Run runs the suite.
func Run(t *testing.T, newStore NewStore) {
	t.Run("CreateGetEveryField", func(t *testing.T) { testCreateGet(t, newStore(t)) })
	t.Run("DuplicateNameConflict", func(t *testing.T) { testDuplicate(t, newStore(t)) })
	t.Run("UnknownNotFound", func(t *testing.T) { testUnknown(t, newStore(t)) })
	t.Run("ListByName", func(t *testing.T) { testList(t, newStore(t)) })
	t.Run("UpdateDelete", func(t *testing.T) { testUpdateDelete(t, newStore(t)) })
	t.Run("ConcurrentCreateOneWins", func(t *testing.T) { testConcurrent(t, newStore(t)) })
	t.Run("ReaderAuthenticates", func(t *testing.T) { testReader(t, newStore(t)) })
}

func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

func newAccount(t *testing.T, name, password string, role auth.Role) account.Account {
	t.Helper()
	h, err := account.Hash(password, bcrypt.MinCost)
	if err != nil {
		t.Fatalf("Hash: %v", err)
	}
	at := now()
	return account.Account{Name: name, Hash: h, Role: role, Created: at, Updated: at, By: "root"}
}

func same(a, b account.Account) bool {
	return a.Name == b.Name && bytes.Equal(a.Hash, b.Hash) && a.Role == b.Role &&
		a.Created.Equal(b.Created) && a.Updated.Equal(b.Updated) && a.By == b.By
}

func testCreateGet(t *testing.T, s account.Store) {
	for _, a := range []account.Account{newAccount(t, "ann", "password-1", auth.Viewer), newAccount(t, "ünïcode.name@x", "password-2", auth.Admin)} {
		if err := s.Create(t.Context(), a); err != nil {
			t.Fatalf("Create %s: %v", a.Name, err)
		}
		got, err := s.Get(t.Context(), a.Name)
		if err != nil || !same(got, a) {
			t.Errorf("Get(%s) = %+v, %v; want %+v", a.Name, got, err, a)
		}
	}
}

func testDuplicate(t *testing.T, s account.Store) {
	a := newAccount(t, "ann", "password-1", auth.Viewer)
	if err := s.Create(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	b := newAccount(t, "ann", "password-2", auth.Admin)
	if err := s.Create(t.Context(), b); !apperr.Is(err, apperr.Conflict) {
		t.Errorf("second Create of ann: %v, want a conflict", err)
	}
	if got, _ := s.Get(t.Context(), "ann"); !same(got, a) {
		t.Errorf("after the refused Create, ann = %+v, want the first %+v", got, a)
	}
}

func testUnknown(t *testing.T, s account.Store) {
	if _, err := s.Get(t.Context(), "nobody"); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("Get(nobody): %v, want not found", err)
	}
	if err := s.Update(t.Context(), newAccount(t, "nobody", "password-1", auth.Viewer)); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("Update(nobody): %v, want not found", err)
	}
	if err := s.Delete(t.Context(), "nobody"); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("Delete(nobody): %v, want not found", err)
	}
	if _, err := s.Get(t.Context(), "nobody"); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("Update made nobody: %v", err)
	}
}

func testList(t *testing.T, s account.Store) {
	l, err := s.List(t.Context())
	if err != nil || len(l) != 0 {
		t.Fatalf("List of an empty store: %v, %v", l, err)
	}
	for _, n := range []string{"carl", "ann", "bob"} {
		if err := s.Create(t.Context(), newAccount(t, n, "password-1", auth.Operator)); err != nil {
			t.Fatal(err)
		}
	}
	l, err = s.List(t.Context())
	var names []string
	for _, a := range l {
		names = append(names, a.Name)
	}
	if err != nil || fmt.Sprint(names) != "[ann bob carl]" {
		t.Errorf("List = %v, %v; want [ann bob carl]", names, err)
	}
}

func testUpdateDelete(t *testing.T, s account.Store) {
	a := newAccount(t, "ann", "password-1", auth.Viewer)
	if err := s.Create(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	b := newAccount(t, "ann", "password-2", auth.Operator)
	b.Created = a.Created
	b.Updated = a.Updated.Add(time.Minute)
	b.By = "boss"
	if err := s.Update(t.Context(), b); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if got, err := s.Get(t.Context(), "ann"); err != nil || !same(got, b) {
		t.Errorf("after Update, Get = %+v, %v; want %+v", got, err, b)
	}
	if err := s.Delete(t.Context(), "ann"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(t.Context(), "ann"); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("after Delete, Get: %v, want not found", err)
	}
	if err := s.Create(t.Context(), a); err != nil {
		t.Errorf("Create after Delete: %v", err)
	}
}

// testConcurrent: 8 writers create one name at once; exactly one wins,
// and the stored account is the winner's.
func testConcurrent(t *testing.T, s account.Store) {
	const writers = 8
	accs := make([]account.Account, writers)
	errs := make([]error, writers)
	for i := range accs {
		accs[i] = newAccount(t, "ann", fmt.Sprintf("password-%d", i), auth.Viewer)
	}
	var wg sync.WaitGroup
	for i := range accs {
		wg.Go(func() { errs[i] = s.Create(t.Context(), accs[i]) })
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("writers %d and %d both created ann", won, i)
		case err == nil:
			won = i
		case !apperr.Is(err, apperr.Conflict):
			t.Errorf("writer %d: %v, want a conflict", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no writer created ann")
	}
	if got, _ := s.Get(t.Context(), "ann"); !same(got, accs[won]) {
		t.Errorf("stored ann is not the winner's")
	}
}

// testReader: account.Reader answers the authenticator with the stored
// hash and role, and not found for a name the store does not hold.
func testReader(t *testing.T, s account.Store) {
	a := newAccount(t, "ann", "password-1", auth.Operator)
	if err := s.Create(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	r := account.Reader{Store: s}
	got, found, err := r.ReadAccount(t.Context(), "ann")
	if err != nil || !found || got.Role != auth.Operator || bcrypt.CompareHashAndPassword(got.Hash, []byte("password-1")) != nil {
		t.Errorf("ReadAccount(ann) = %+v, %v, %v", got, found, err)
	}
	if _, found, err := r.ReadAccount(t.Context(), "bob"); found || err != nil {
		t.Errorf("ReadAccount(bob) = found %v, %v; want not found", found, err)
	}
}
