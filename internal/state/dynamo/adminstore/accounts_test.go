package adminstore

import (
	"testing"

	"tilecache/internal/account"
	"tilecache/internal/account/accounttest"
)

func TestAccountsConformance(t *testing.T) {
	sh := newShared(t)
	accounttest.Run(t, func(t *testing.T) account.Store { return sh.store(t).admin.Accounts() })
}
