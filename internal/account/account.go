// Package account keeps the accounts of the administration interface
// that administrators add, change and remove at run time, beside the
// configured ones (the accounts file or secret, internal/auth), which
// cannot be changed here. An account is a name, a bcrypt hash of its
// password (the password itself is never kept) and a role. Accounts are
// kept in the task store (a Store: internal/state/bolt,
// internal/state/dynamo); Reader lets the authenticator read them, which
// it does at most auth.StoredFor apart per name, so that a change reaches
// every process within that time.
package account

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"tilecache/internal/apperr"
	"tilecache/internal/auth"
)

// Account is one stored account.
type Account struct {
	// Name is the user name of HTTP Basic credentials.
	Name string
	// Hash is the bcrypt hash of the password.
	Hash []byte
	// Role is what the account may do (never auth.RoleNone).
	Role auth.Role
	// Created and Updated are when it was added and last changed.
	Created, Updated time.Time
	// By is the account that last added or changed it.
	By string
}

// Store keeps accounts. Implementations are safe for concurrent use.
type Store interface {
	// Create stores a; apperr.Conflict if an account of its name exists.
	Create(ctx context.Context, a Account) error
	// Get returns the account of name; apperr.NotFound if there is none.
	Get(ctx context.Context, name string) (Account, error)
	// List returns every account, by name.
	List(ctx context.Context) ([]Account, error)
	// Update replaces the account of a's name; apperr.NotFound if there is
	// none.
	Update(ctx context.Context, a Account) error
	// Delete removes the account of name; apperr.NotFound if there is
	// none.
	Delete(ctx context.Context, name string) error
}

// Limits of what an account may hold.
const (
	// MinPassword is the shortest password, in bytes.
	MinPassword = 8
	// MaxName is the longest name, in bytes.
	MaxName = 128
)

// CheckName says why name cannot be an account's, or nil.
func CheckName(name string) error {
	if len(name) > MaxName {
		return apperr.Invalidf("An account name is at most %d bytes, not %d", MaxName, len(name))
	}
	if err := auth.CheckName(name); err != nil {
		return apperr.Invalidf("Bad account name: %v", err)
	}
	return nil
}

// CheckPassword says why password cannot be an account's, or nil.
func CheckPassword(password string) error {
	switch {
	case len(password) < MinPassword:
		return apperr.Invalidf("A password is at least %d bytes, not %d", MinPassword, len(password))
	case len(password) > auth.MaxPasswordBytes:
		return apperr.Invalidf("A password is at most %d bytes (bcrypt reads no more), not %d", auth.MaxPasswordBytes, len(password))
	case !utf8.ValidString(password):
		return apperr.Invalidf("A password must be valid UTF-8")
	}
	return nil
}

// Hash checks password and returns its bcrypt hash at cost (below
// bcrypt.MinCost: bcrypt's default).
func Hash(password string, cost int) ([]byte, error) {
	if err := CheckPassword(password); err != nil {
		return nil, err
	}
	h, err := auth.HashPassword(password, cost)
	if err != nil {
		return nil, fmt.Errorf("hash password: %w", err)
	}
	return []byte(h), nil
}

// stored is an account as the stores keep it (JSON).
type stored struct {
	Name    string    `json:"name"`
	Hash    string    `json:"hash"`
	Role    string    `json:"role"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	By      string    `json:"by,omitempty"`
}

// Marshal encodes a as the stores keep it.
func Marshal(a Account) ([]byte, error) {
	if a.Role == auth.RoleNone {
		return nil, fmt.Errorf("encode account %s: no role", a.Name)
	}
	return json.Marshal(stored{a.Name, string(a.Hash), a.Role.String(), a.Created, a.Updated, a.By})
}

// Unmarshal decodes what Marshal encoded.
func Unmarshal(b []byte) (Account, error) {
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return Account{}, fmt.Errorf("decode account: %w", err)
	}
	a := Account{Name: s.Name, Hash: []byte(s.Hash), Created: s.Created, Updated: s.Updated, By: s.By}
	var err error
	if a.Role, err = auth.ParseRole(s.Role); err != nil || a.Role == auth.RoleNone {
		return Account{}, fmt.Errorf("decode account %s: role %q", s.Name, s.Role)
	}
	return a, nil
}

// Reader reads a Store for the authenticator (auth.AccountReader).
type Reader struct{ Store Store }

// ReadAccount returns the stored account of name.
func (r Reader) ReadAccount(ctx context.Context, name string) (auth.Account, bool, error) {
	a, err := r.Store.Get(ctx, name)
	switch {
	case apperr.Is(err, apperr.NotFound):
		return auth.Account{}, false, nil
	case err != nil:
		return auth.Account{}, false, fmt.Errorf("read account %s: %w", name, err)
	}
	return auth.Account{Name: a.Name, Hash: a.Hash, Role: a.Role}, true, nil
}

var _ auth.AccountReader = Reader{}
