package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// defaultCacheSize bounds the number of remembered verifications. An entry
// costs well under 100 bytes, so the cache stays below 100 KiB.
const defaultCacheSize = 1024

// cacheKey is a SHA-256 digest of a name and password; see verifyCache.key.
type cacheKey [sha256.Size]byte

// verifyCache remembers the outcome of bcrypt verifications. It holds only
// digests and booleans, never passwords. When full it forgets the oldest
// entry (first in, first out), which is enough to keep a loop of requests
// with the same credentials cheap while bounding memory against a flood of
// distinct guesses. It is safe for concurrent use.
type verifyCache struct {
	// salt makes digests specific to this cache, so they cannot be matched
	// against precomputed tables if memory is ever exposed.
	salt [32]byte

	mu      sync.Mutex
	entries map[cacheKey]bool
	ring    []cacheKey // insertion order, used as a circular buffer
	next    int        // index in ring of the oldest entry once ring is full
}

func newVerifyCache(size int) *verifyCache {
	c := &verifyCache{
		entries: make(map[cacheKey]bool, size),
		ring:    make([]cacheKey, 0, size),
	}
	rand.Read(c.salt[:]) // never returns an error (crypto/rand, Go 1.24+)
	return c
}

// key returns SHA-256(salt, len(name), name, len(hash), hash, password):
// the outcome of comparing password with hash, the account's hash when it
// was checked. The length prefixes make the encoding unambiguous whatever
// bytes name holds.
func (c *verifyCache) key(name string, hash []byte, password string) cacheKey {
	h := sha256.New()
	h.Write(c.salt[:])
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(name))))
	h.Write([]byte(name))
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(hash))))
	h.Write(hash)
	h.Write([]byte(password))
	var k cacheKey
	h.Sum(k[:0])
	return k
}

// get returns the remembered outcome for k; hit is false if there is none.
func (c *verifyCache) get(k cacheKey) (ok, hit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok, hit = c.entries[k]
	return ok, hit
}

// put remembers ok as the outcome for k, evicting the oldest entry if the
// cache is full.
func (c *verifyCache) put(k cacheKey, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, exists := c.entries[k]; exists {
		// Concurrent first requests with the same credentials both verify;
		// the outcome is the same, keep the single ring slot.
		c.entries[k] = ok
		return
	}
	if cap(c.ring) == 0 {
		return
	}
	if len(c.ring) < cap(c.ring) {
		c.ring = append(c.ring, k)
	} else {
		delete(c.entries, c.ring[c.next])
		c.ring[c.next] = k
		c.next = (c.next + 1) % len(c.ring)
	}
	c.entries[k] = ok
}

// count returns the number of remembered outcomes.
func (c *verifyCache) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
