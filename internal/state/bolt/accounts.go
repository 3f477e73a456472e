package bolt

import (
	"context"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/account"
	"tilecache/internal/apperr"
)

// The accounts added at run time (account.Store) are kept in a bucket of
// their own, made by the first account: name → the account as
// account.Marshal encodes it (a bcrypt hash, never a password). bbolt
// orders keys by bytes, so the listing is by name.

var bucketAccounts = []byte("accounts")

// Accounts is the stored accounts in the file (account.Store).
type Accounts struct{ *store }

var _ account.Store = (*Accounts)(nil)

// Accounts returns the stored accounts in the file.
func (d *DB) Accounts() *Accounts { return &Accounts{d.s} }

// Create stores a unless an account of its name exists.
func (s *Accounts) Create(ctx context.Context, a account.Account) error {
	return s.put(ctx, "create account "+a.Name, a, false)
}

// Update replaces the account of a's name, which must exist.
func (s *Accounts) Update(ctx context.Context, a account.Account) error {
	return s.put(ctx, "update account "+a.Name, a, true)
}

func (s *Accounts) put(ctx context.Context, what string, a account.Account, exists bool) error {
	v, err := account.Marshal(a)
	if err != nil {
		return err
	}
	return s.update(ctx, what, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketAccounts)
		if err != nil {
			return err
		}
		switch there := b.Get([]byte(a.Name)) != nil; {
		case there && !exists:
			return apperr.New(apperr.Conflict, "Account %s exists", apperr.Show(a.Name))
		case !there && exists:
			return apperr.New(apperr.NotFound, "Account %s not found", apperr.Show(a.Name))
		}
		return b.Put([]byte(a.Name), v)
	})
}

// Get returns the account of name.
func (s *Accounts) Get(ctx context.Context, name string) (account.Account, error) {
	var a account.Account
	err := s.view(ctx, "read account "+name, func(tx *bbolt.Tx) error {
		var v []byte
		if b := tx.Bucket(bucketAccounts); b != nil {
			v = b.Get([]byte(name))
		}
		if v == nil {
			return apperr.New(apperr.NotFound, "Account %s not found", apperr.Show(name))
		}
		var err error
		a, err = account.Unmarshal(v)
		return err
	})
	return a, err
}

// List returns every account, by name.
func (s *Accounts) List(ctx context.Context) ([]account.Account, error) {
	var l []account.Account
	err := s.view(ctx, "list accounts", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketAccounts)
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			a, err := account.Unmarshal(v)
			if err == nil {
				l = append(l, a)
			}
			return err
		})
	})
	return l, err
}

// Delete removes the account of name.
func (s *Accounts) Delete(ctx context.Context, name string) error {
	return s.update(ctx, "delete account "+name, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketAccounts)
		if b == nil || b.Get([]byte(name)) == nil {
			return apperr.New(apperr.NotFound, "Account %s not found", apperr.Show(name))
		}
		return b.Delete([]byte(name))
	})
}
