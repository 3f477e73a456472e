package token_test

import (
	"encoding/hex"
	"testing"

	"tilecache/internal/token"
)

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		tok := token.New()
		if b, err := hex.DecodeString(tok); err != nil || len(b) != 12 || hex.EncodeToString(b) != tok {
			t.Fatalf("token %q is not 12 bytes in lower-case hex", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q made twice", tok)
		}
		seen[tok] = true
	}
}
