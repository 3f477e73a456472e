package bolt_test

import (
	"path/filepath"
	"testing"

	"tilecache/internal/apitoken"
	"tilecache/internal/apitoken/apitokentest"
	"tilecache/internal/state/bolt"
)

func TestTokensConformance(t *testing.T) {
	apitokentest.Run(t, func(t *testing.T) apitoken.Store {
		d, err := bolt.Open(filepath.Join(t.TempDir(), "tasks.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d.Tokens()
	})
}
