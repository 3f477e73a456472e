package adminstore

import (
	"testing"

	"tilecache/internal/apitoken"
	"tilecache/internal/apitoken/apitokentest"
)

func TestTokensConformance(t *testing.T) {
	sh := newShared(t)
	apitokentest.Run(t, func(t *testing.T) apitoken.Store { return sh.store(t).admin.Tokens() })
}
