// Package token makes the random tokens the program marks its own writes
// with: lease owners, checkpoint and write tokens, read-mark owners and
// the names of log batches without a name of their own.
package token

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns a new random token: 12 random bytes as 24 lower-case hex
// digits, unique in practice.
func New() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}
