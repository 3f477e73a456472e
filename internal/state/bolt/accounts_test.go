package bolt_test

import (
	"path/filepath"
	"testing"

	"tilecache/internal/account"
	"tilecache/internal/account/accounttest"
	"tilecache/internal/state/bolt"
)

func TestAccountsConformance(t *testing.T) {
	accounttest.Run(t, func(t *testing.T) account.Store {
		d, err := bolt.Open(filepath.Join(t.TempDir(), "tasks.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d.Accounts()
	})
}
