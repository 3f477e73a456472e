package bolt

import (
	"context"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/apitoken"
	"tilecache/internal/apperr"
)

// The API tokens (apitoken.Store) are kept in a bucket of their own, made
// by the first token: token id → the token as apitoken.Marshal encodes it
// (the secret's digest, never the secret).

var bucketTokens = []byte("tokens")

// Tokens is the API tokens in the file (apitoken.Store).
type Tokens struct{ *store }

var _ apitoken.Store = (*Tokens)(nil)

// Tokens returns the API tokens in the file.
func (d *DB) Tokens() *Tokens { return &Tokens{d.s} }

// Create stores t unless a token of its id exists.
func (s *Tokens) Create(ctx context.Context, t apitoken.Token) error {
	v, err := apitoken.Marshal(t)
	if err != nil {
		return err
	}
	return s.update(ctx, "create token "+t.ID, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketTokens)
		if err != nil {
			return err
		}
		if b.Get([]byte(t.ID)) != nil {
			return apperr.New(apperr.Conflict, "Token %s exists", apperr.Show(t.ID))
		}
		return b.Put([]byte(t.ID), v)
	})
}

// Get returns the token of id.
func (s *Tokens) Get(ctx context.Context, id string) (apitoken.Token, error) {
	var t apitoken.Token
	err := s.view(ctx, "read token "+id, func(tx *bbolt.Tx) error {
		var v []byte
		if b := tx.Bucket(bucketTokens); b != nil {
			v = b.Get([]byte(id))
		}
		if v == nil {
			return apperr.New(apperr.NotFound, "Token %s not found", apperr.Show(id))
		}
		var err error
		t, err = apitoken.Unmarshal(v)
		return err
	})
	return t, err
}

// List returns every token, oldest first.
func (s *Tokens) List(ctx context.Context) ([]apitoken.Token, error) {
	var l []apitoken.Token
	err := s.view(ctx, "list tokens", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketTokens)
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			t, err := apitoken.Unmarshal(v)
			if err == nil {
				l = append(l, t)
			}
			return err
		})
	})
	sortTokens(l)
	return l, err
}

func sortTokens(l []apitoken.Token) {
	slices.SortFunc(l, func(a, b apitoken.Token) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Revoke marks the token of id revoked at at, unless it already is.
func (s *Tokens) Revoke(ctx context.Context, id string, at time.Time) error {
	return s.update(ctx, "revoke token "+id, func(tx *bbolt.Tx) error {
		var v []byte
		b := tx.Bucket(bucketTokens)
		if b != nil {
			v = b.Get([]byte(id))
		}
		if v == nil {
			return apperr.New(apperr.NotFound, "Token %s not found", apperr.Show(id))
		}
		t, err := apitoken.Unmarshal(v)
		if err != nil {
			return err
		}
		if !t.Revoked.IsZero() {
			return nil
		}
		t.Revoked = at.UTC()
		if v, err = apitoken.Marshal(t); err != nil {
			return err
		}
		return b.Put([]byte(id), v)
	})
}
