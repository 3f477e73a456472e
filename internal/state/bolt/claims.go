// The claims of render on miss (onmiss.Claims) and the marks of read
// batches (quota.Marks), in the claims bucket.

package bolt

import (
	"context"
	"encoding/binary"
	"tilecache/internal/quota"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// Claims are the claims of render on miss (onmiss.Claims) in a DB.
type Claims struct{ *store }

// ReadMarks remember which batches of reads were recorded (quota.Marks)
// in a DB: claims in the same bucket, kept for quota.ReadLogKeep.
type ReadMarks struct{ *store }

var _ quota.Marks = (*ReadMarks)(nil)

// Claim takes key for owner until now+ttl unless another owner holds it
// (Claims.Claim).
func (s *ReadMarks) Claim(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (bool, error) {
	return (&Claims{s.store}).Claim(ctx, key, owner, ttl, now)
}

// Unclaim releases owner's claim of key (Claims.Unclaim).
func (s *ReadMarks) Unclaim(ctx context.Context, key, owner string) error {
	return (&Claims{s.store}).Unclaim(ctx, key, owner)
}

// Claims are stored as key -> kind byte, holder, expiry (8 bytes, Unix
// nanoseconds): kind 'c' holds a claim's owner, kind 'n' a note.
const (
	claimOwner = 'c'
	claimNote  = 'n'
)

// claimOf decodes a stored claim; ok is false for a malformed one.
func claimOf(v []byte) (kind byte, holder string, until int64, ok bool) {
	if len(v) < 9 {
		return 0, "", 0, false
	}
	return v[0], string(v[1 : len(v)-8]), int64(binary.BigEndian.Uint64(v[len(v)-8:])), true
}

func claimValue(kind byte, holder string, until time.Time) []byte {
	v := append([]byte{kind}, holder...)
	return binary.BigEndian.AppendUint64(v, uint64(until.UnixNano()))
}

// Claim takes key for owner until now+ttl unless another owner's claim
// or a note has not expired (onmiss.Claims).
func (s *Claims) Claim(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (bool, error) {
	ok := false
	err := s.update(ctx, "claim "+key, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketClaims)
		if kind, holder, until, found := claimOf(b.Get([]byte(key))); found && now.UnixNano() < until &&
			(kind != claimOwner || holder != owner) {
			return nil
		}
		ok = true
		return b.Put([]byte(key), claimValue(claimOwner, owner, now.Add(ttl)))
	})
	return ok, err
}

// Unclaim releases owner's claim of key (onmiss.Claims).
func (s *Claims) Unclaim(ctx context.Context, key, owner string) error {
	return s.update(ctx, "release claim "+key, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketClaims)
		if kind, holder, _, found := claimOf(b.Get([]byte(key))); found && kind == claimOwner && holder == owner {
			return b.Delete([]byte(key))
		}
		return nil
	})
}

// Settle replaces owner's claim of key with note until until (onmiss.Claims);
// nothing when the claim is no longer owner's.
func (s *Claims) Settle(ctx context.Context, key, owner, note string, until time.Time) error {
	return s.update(ctx, "settle claim "+key, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketClaims)
		if kind, holder, _, found := claimOf(b.Get([]byte(key))); found && kind == claimOwner && holder == owner {
			return b.Put([]byte(key), claimValue(claimNote, note, until))
		}
		return nil
	})
}

// Note leaves note at key until until, whatever key held (onmiss.Claims).
func (s *Claims) Note(ctx context.Context, key, note string, until time.Time) error {
	return s.update(ctx, "write note "+key, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketClaims).Put([]byte(key), claimValue(claimNote, note, until))
	})
}

// Peek reads what key holds at now: a live claim's owner or a live note
// (onmiss.Claims).
func (s *Claims) Peek(ctx context.Context, key string, now time.Time) (owner, note string, until time.Time, err error) {
	err = s.view(ctx, "read claim "+key, func(tx *bbolt.Tx) error {
		kind, holder, u, found := claimOf(tx.Bucket(bucketClaims).Get([]byte(key)))
		if !found || u <= now.UnixNano() {
			return nil
		}
		until = time.Unix(0, u)
		if kind == claimOwner {
			owner = holder
		} else {
			note = holder
		}
		return nil
	})
	if err != nil {
		return "", "", time.Time{}, err
	}
	return owner, note, until, nil
}
