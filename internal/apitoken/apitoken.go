// Package apitoken keeps the API tokens of the administration interface:
// revocable credentials an administrator issues for a role (never above
// their own), optionally limited to a set of layers, until an expiry. A
// client sends one as
//
//	Authorization: Bearer <id>.<secret>
//
// The id is public and short (16 hex digits); the secret is 256 random
// bits, shown once when the token is made and stored only as its SHA-256
// digest (a random secret of that size needs no slow hash). Tokens are
// kept in the task store (a Store: internal/state/bolt,
// internal/state/dynamo); a Verifier checks a bearer value against it,
// remembering each lookup for at most CacheFor, so that a revocation takes
// effect in every process within that time.
package apitoken

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/auth"
)

// Token is one API token, without its secret.
type Token struct {
	// ID is the token's public name (16 lower-case hex digits).
	ID string
	// Hash is the SHA-256 digest of the secret.
	Hash [sha256.Size]byte
	// Role is what a request carrying the token may do.
	Role auth.Role
	// Layers are the only layers its requests may concern; nil: every
	// layer.
	Layers []string
	// Expires is when the token stops authenticating.
	Expires time.Time
	// Label says what the token is for (free text).
	Label string
	// Creator is the account that issued it; requests carrying the token
	// are that account's.
	Creator string
	// Created is when it was issued.
	Created time.Time
	// Revoked is when it was revoked (zero: not revoked).
	Revoked time.Time
}

// Store keeps tokens. Implementations are safe for concurrent use.
type Store interface {
	// Create stores t; apperr.Conflict if a token of its id exists.
	Create(ctx context.Context, t Token) error
	// Get returns the token of id; apperr.NotFound if there is none.
	Get(ctx context.Context, id string) (Token, error)
	// List returns every token, oldest first.
	List(ctx context.Context) ([]Token, error)
	// Revoke marks the token of id revoked at at (a token already revoked
	// keeps its first time); apperr.NotFound if there is none.
	Revoke(ctx context.Context, id string, at time.Time) error
}

// Lifetimes a token may be issued for.
const (
	MinLifetime = time.Minute
	MaxLifetime = 366 * 24 * time.Hour
)

// MaxLabel is the longest label, in bytes.
const MaxLabel = 200

// Issue makes a token for creator with role, limited to layers (nil:
// every layer), expiring at expires, and returns it with its bearer
// value (<id>.<secret>), which is not kept anywhere. A role above the
// creator's, a lifetime outside [MinLifetime, MaxLifetime] or a label too
// long is apperr.Invalid; the caller checks that the layers exist.
func Issue(creator auth.Principal, role auth.Role, layers []string, expires time.Time, label string, now time.Time) (Token, string, error) {
	switch {
	case role == auth.RoleNone:
		return Token{}, "", apperr.New(apperr.Invalid, "a token needs a role: viewer, operator or admin")
	case role > creator.Role:
		return Token{}, "", apperr.New(apperr.Invalid, "a token's role may not be above its creator's: %s asks for %s with the %s role", creator, role, creator.Role)
	case expires.Sub(now) < MinLifetime || expires.Sub(now) > MaxLifetime:
		return Token{}, "", apperr.New(apperr.Invalid, "a token's lifetime must be between %v and %v, not %v", MinLifetime, MaxLifetime, expires.Sub(now).Round(time.Second))
	case len(label) > MaxLabel:
		return Token{}, "", apperr.New(apperr.Invalid, "a token's label is at most %d bytes, not %d", MaxLabel, len(label))
	}
	if creator.Layers != nil {
		// A layer-limited creator issues only tokens limited to its layers.
		if layers == nil {
			return Token{}, "", apperr.New(apperr.Invalid, "%s is limited to layers %v: its tokens must be limited to some of them", creator, creator.Layers)
		}
		for _, l := range layers {
			if !creator.MayUseLayer(l) {
				return Token{}, "", apperr.New(apperr.Invalid, "%s may not use layer %q", creator, l)
			}
		}
	}
	var id [8]byte
	var secret [32]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand, Go 1.24+)
	_, _ = rand.Read(secret[:])
	s := base64.RawURLEncoding.EncodeToString(secret[:])
	t := Token{
		ID: hex.EncodeToString(id[:]), Hash: sha256.Sum256([]byte(s)), Role: role,
		Layers: layers, Expires: expires.UTC(), Label: label, Creator: creator.Name, Created: now.UTC(),
	}
	return t, t.ID + "." + s, nil
}

// Split reads a bearer value as id and secret; ok is false if it cannot
// be a token's.
func Split(bearer string) (id, secret string, ok bool) {
	id, secret, ok = strings.Cut(bearer, ".")
	if !ok || len(id) != 16 || secret == "" || len(secret) > 64 {
		return "", "", false
	}
	if _, err := hex.DecodeString(id); err != nil {
		return "", "", false
	}
	return id, secret, true
}

// Matches reports, in constant time, whether secret is the token's.
func (t Token) Matches(secret string) bool {
	h := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(h[:], t.Hash[:]) == 1
}

// Usable says why the token does not authenticate at now (revoked,
// expired), or nil.
func (t Token) Usable(now time.Time) error {
	switch {
	case !t.Revoked.IsZero():
		return fmt.Errorf("token %s was revoked at %s", t.ID, t.Revoked.Format(time.RFC3339))
	case !now.Before(t.Expires):
		return fmt.Errorf("token %s expired at %s", t.ID, t.Expires.Format(time.RFC3339))
	}
	return nil
}

// Principal is who a request carrying the token is.
func (t Token) Principal() auth.Principal {
	return auth.Principal{Name: t.Creator, Role: t.Role, TokenID: t.ID, Layers: t.Layers}
}

// stored is a token as the stores keep it (JSON).
type stored struct {
	ID      string    `json:"id"`
	Hash    string    `json:"hash"`
	Role    string    `json:"role"`
	Layers  []string  `json:"layers,omitempty"`
	Expires time.Time `json:"expires"`
	Label   string    `json:"label,omitempty"`
	Creator string    `json:"creator"`
	Created time.Time `json:"created"`
	Revoked time.Time `json:"revoked,omitzero"`
}

// Marshal encodes t as the stores keep it.
func Marshal(t Token) ([]byte, error) {
	return json.Marshal(stored{t.ID, hex.EncodeToString(t.Hash[:]), t.Role.String(), t.Layers, t.Expires, t.Label, t.Creator, t.Created, t.Revoked})
}

// Unmarshal decodes what Marshal encoded.
func Unmarshal(b []byte) (Token, error) {
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return Token{}, fmt.Errorf("decode token: %w", err)
	}
	t := Token{ID: s.ID, Layers: s.Layers, Expires: s.Expires, Label: s.Label, Creator: s.Creator, Created: s.Created, Revoked: s.Revoked}
	h, err := hex.DecodeString(s.Hash)
	if err != nil || len(h) != sha256.Size {
		return Token{}, fmt.Errorf("decode token %s: bad hash", s.ID)
	}
	copy(t.Hash[:], h)
	if t.Role, err = auth.ParseRole(s.Role); err != nil || t.Role == auth.RoleNone {
		return Token{}, fmt.Errorf("decode token %s: role %q", s.ID, s.Role)
	}
	return t, nil
}
