// Package tiletoken makes and checks tile tokens: short-lived signed
// values that open private layers' tiles and documents to whoever holds
// one. The origin (`tilecache serve`, the tile function) checks them here;
// the CDN's edge function checks the same tokens in JavaScript
// (functions/edge/tiletoken.js). Both pass one table of vectors
// (testdata/vectors.json).
//
// A token is five dot-separated fields, URL-safe as they stand:
//
//	v1.{kid}.{exp}.{layers}.{sig}
//
//	kid     the signing key's id: 1 to 32 of A-Z a-z 0-9 _ -
//	exp     when it expires: Unix seconds, digits without a leading zero
//	        (at most 12)
//	layers  the ids of the layers it opens (their stored keys' first
//	        segment), joined by newlines, UTF-8, base64url without padding
//	sig     HMAC-SHA256 of "v1.{kid}.{exp}.{layers}" under the key's secret
//	        (its text, as written), base64url without padding (43 characters)
//
// and at most MaxLen characters. A key's secret is a text of at least 32
// characters ([NewKey] makes 43 of base64url, 256 random bits). Several
// keys are valid at once ([Keyring]): a new key id becomes current and
// signs, the old one still verifies until the tokens it signed expire.
package tiletoken

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxLen is the longest token read: a longer one is malformed.
const MaxLen = 2048

// MaxLifetime is the longest lifetime a token is issued for.
const MaxLifetime = 24 * time.Hour

// version starts every token.
const version = "v1"

// The outcomes of Verify, by the code the shared vectors name them with.
var (
	ErrMissing      = errors.New("missing")
	ErrMalformed    = errors.New("malformed")
	ErrUnknownKey   = errors.New("unknown-key")
	ErrBadSignature = errors.New("bad-signature")
	ErrExpired      = errors.New("expired")
	ErrWrongLayer   = errors.New("wrong-layer")
)

// Code returns the outcome code of a Verify error ("ok" for nil), as the
// shared vectors and the edge function name it.
func Code(err error) string {
	if err == nil {
		return "ok"
	}
	for _, e := range []error{ErrMissing, ErrMalformed, ErrUnknownKey, ErrBadSignature, ErrExpired, ErrWrongLayer} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return "malformed"
}

// Key is one signing key: its id and its secret.
type Key struct {
	ID     string
	Secret string
}

// NewKey returns a new key of id id with a random secret (256 bits,
// base64url).
func NewKey(id string) Key {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return Key{ID: id, Secret: base64.RawURLEncoding.EncodeToString(b[:])}
}

// validKeyID reports whether s may be a key id.
func validKeyID(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !base64URLByte(s[i]) {
			return false
		}
	}
	return true
}

func base64URLByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// Keyring holds the keys tokens are verified with, by id; the current one
// signs.
type Keyring struct {
	current string
	secrets map[string]string
}

// NewKeyring returns a keyring whose first key is the current one.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("a keyring needs at least one key")
	}
	r := &Keyring{current: keys[0].ID, secrets: map[string]string{}}
	for _, k := range keys {
		if !validKeyID(k.ID) {
			return nil, fmt.Errorf("key id %q: 1 to 32 of A-Z a-z 0-9 _ -", k.ID)
		}
		if len(k.Secret) < 32 {
			return nil, fmt.Errorf("key %s: a secret of at least 32 characters is needed", k.ID)
		}
		if _, dup := r.secrets[k.ID]; dup {
			return nil, fmt.Errorf("key id %s given twice", k.ID)
		}
		r.secrets[k.ID] = k.Secret
	}
	return r, nil
}

// ParseKeyring reads "kid:secret,kid:secret,…", the current key first.
func ParseKeyring(s string) (*Keyring, error) {
	var keys []Key
	for i, part := range strings.Split(s, ",") {
		id, secret, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			// Not quoted: the entry may be a secret pasted without its id.
			return nil, fmt.Errorf("tile token keys: entry %d is not kid:secret", i+1)
		}
		keys = append(keys, Key{ID: id, Secret: secret})
	}
	r, err := NewKeyring(keys...)
	if err != nil {
		return nil, fmt.Errorf("tile token keys: %w", err)
	}
	return r, nil
}

// Current returns the id of the key that signs.
func (r *Keyring) Current() string { return r.current }

// Keys returns every key, the current one first, the others by id.
func (r *Keyring) Keys() []Key {
	out := []Key{{ID: r.current, Secret: r.secrets[r.current]}}
	for _, id := range slices.Sorted(maps.Keys(r.secrets)) {
		if id != r.current {
			out = append(out, Key{ID: id, Secret: r.secrets[id]})
		}
	}
	return out
}

// Secret returns the secret of key id.
func (r *Keyring) Secret(id string) (string, bool) {
	s, ok := r.secrets[id]
	return s, ok
}

// Issue returns a token signed with the current key that opens layers
// (their ids) until exp.
func (r *Keyring) Issue(layers []string, exp time.Time) (string, error) {
	return Sign(Key{ID: r.current, Secret: r.secrets[r.current]}, layers, exp)
}

// Sign returns a token signed with k that opens layers until exp.
func Sign(k Key, layers []string, exp time.Time) (string, error) {
	if len(layers) == 0 {
		return "", errors.New("a token opens at least one layer")
	}
	for _, l := range layers {
		if l == "" || strings.Contains(l, "\n") || !utf8.ValidString(l) {
			return "", fmt.Errorf("layer id %q cannot be in a token", l)
		}
	}
	if !validKeyID(k.ID) {
		return "", fmt.Errorf("key id %q: 1 to 32 of A-Z a-z 0-9 _ -", k.ID)
	}
	if exp.Unix() <= 0 {
		return "", errors.New("a token expires after 1970")
	}
	body := version + "." + k.ID + "." + strconv.FormatInt(exp.Unix(), 10) + "." +
		base64.RawURLEncoding.EncodeToString([]byte(strings.Join(layers, "\n")))
	tok := body + "." + sign(k.Secret, body)
	if len(tok) > MaxLen {
		return "", fmt.Errorf("a token for these %d layers would be %d characters, more than %d", len(layers), len(tok), MaxLen)
	}
	return tok, nil
}

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Token is a token's fields as read (not yet verified).
type Token struct {
	KeyID   string
	Expires time.Time
	Layers  []string
	body    string // what the signature signs
	layers  string // layers as written
	sig     string
}

// Parse reads a token's fields, or returns ErrMalformed (ErrMissing for
// "").
func Parse(s string) (Token, error) {
	if s == "" {
		return Token{}, ErrMissing
	}
	if len(s) > MaxLen {
		return Token{}, fmt.Errorf("%w: longer than %d characters", ErrMalformed, MaxLen)
	}
	f := strings.Split(s, ".")
	if len(f) != 5 || f[0] != version {
		return Token{}, fmt.Errorf("%w: not v1.kid.exp.layers.sig", ErrMalformed)
	}
	if !validKeyID(f[1]) {
		return Token{}, fmt.Errorf("%w: key id", ErrMalformed)
	}
	if len(f[2]) == 0 || len(f[2]) > 12 || f[2][0] == '0' || strings.Trim(f[2], "0123456789") != "" {
		return Token{}, fmt.Errorf("%w: expiry", ErrMalformed)
	}
	exp, _ := strconv.ParseInt(f[2], 10, 64)
	if f[3] == "" || !isBase64URL(f[3]) || len(f[4]) != 43 || !isBase64URL(f[4]) {
		return Token{}, fmt.Errorf("%w: layers or signature", ErrMalformed)
	}
	return Token{KeyID: f[1], Expires: time.Unix(exp, 0), body: s[:len(s)-len(f[4])-1], layers: f[3], sig: f[4]}, nil
}

func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		if !base64URLByte(s[i]) {
			return false
		}
	}
	return true
}

// Secrets finds a key's secret by id (a Keyring's Secret).
type Secrets func(id string) (secret string, ok bool)

// Verify checks that token s, signed by one of the keys, opens layer at
// now; the error is one of the Err values, wrapped with what it saw. The
// checks run in this order, as the edge's do: the shape (ErrMissing,
// ErrMalformed), the key id (ErrUnknownKey), the signature
// (ErrBadSignature), the expiry (ErrExpired: at or after exp), the layers
// (ErrMalformed when they do not decode, ErrWrongLayer when layer is not
// among them).
func Verify(s string, keys Secrets, layer string, now time.Time) (Token, error) {
	t, err := Parse(s)
	if err != nil {
		return Token{}, err
	}
	secret, ok := keys(t.KeyID)
	if !ok {
		return Token{}, fmt.Errorf("%w: key %s is not known (rotated out?)", ErrUnknownKey, t.KeyID)
	}
	if !hmac.Equal([]byte(sign(secret, t.body)), []byte(t.sig)) {
		return Token{}, ErrBadSignature
	}
	if !now.Before(t.Expires) {
		return Token{}, fmt.Errorf("%w at %s", ErrExpired, t.Expires.UTC().Format(time.RFC3339))
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(t.layers)
	if err != nil || !utf8.Valid(raw) {
		return Token{}, fmt.Errorf("%w: layers", ErrMalformed)
	}
	t.Layers = strings.Split(string(raw), "\n")
	for _, l := range t.Layers {
		if l == layer {
			return t, nil
		}
	}
	return t, fmt.Errorf("%w: not for layer %s", ErrWrongLayer, layer)
}

// Verify checks token s against the ring's keys (see Verify).
func (r *Keyring) Verify(s, layer string, now time.Time) (Token, error) {
	return Verify(s, r.Secret, layer, now)
}
