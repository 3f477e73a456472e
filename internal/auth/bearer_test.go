package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"tilecache/internal/auth"
)

// fakeBearer accepts "good" as a layer-limited operator token of ann and
// fails to check "down".
type fakeBearer struct{}

func (fakeBearer) IsToken(b string) bool { return !strings.HasPrefix(b, "not-") }

func (fakeBearer) VerifyBearer(_ context.Context, b string) (auth.Principal, bool, error) {
	switch b {
	case "good":
		return auth.Principal{Name: "ann", Role: auth.Operator, TokenID: "t1", Layers: []string{"roads"}}, true, nil
	case "down":
		return auth.Principal{}, false, errors.New("store unavailable")
	}
	return auth.Principal{}, false, nil
}

func bearerServer(t *testing.T, withBearer bool) *httptest.Server {
	a := auth.New([]auth.Account{{Name: "admin", Hash: MustHash(t, "s3cret"), Role: auth.Admin}},
		auth.WithLimits(auth.Limits{AddressFailures: 3, Hold: time.Nanosecond}))
	if withBearer {
		a = a.WithBearer(fakeBearer{})
	}
	ts := httptest.NewServer(a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.PrincipalOf(r.Context())
		fmt.Fprintf(w, "%s %s %s %v", p.Name, p.Role, p.TokenID, p.Layers)
	})))
	t.Cleanup(ts.Close)
	return ts
}

// TestBearer: a valid bearer value sets the verifier's Principal; a wrong
// one is 401 with a Bearer challenge; one that cannot be checked is 503;
// without WithBearer, Bearer is no credential.
func TestBearer(t *testing.T) {
	ts := bearerServer(t, true)
	if r := do(t, ts, "GET", "/", "Bearer good"); r.status != 200 || r.body != "ann operator t1 [roads]" {
		t.Errorf("good token: %d %q", r.status, r.body)
	}
	if r := do(t, ts, "GET", "/", "bearer good"); r.status != 200 {
		t.Errorf("lower-case scheme: %d %q", r.status, r.body)
	}
	r := do(t, ts, "GET", "/", "Bearer wrong")
	if ch := r.header.Values("WWW-Authenticate"); r.status != 401 || len(ch) != 2 || ch[0] != `Basic realm="GeoWebCache Secured"` || !strings.HasPrefix(ch[1], "Bearer ") {
		t.Errorf("wrong token: %d, challenges %q; want 401 with the Basic challenge, then a Bearer one", r.status, ch)
	}
	if r := do(t, ts, "GET", "/", "Bearer down"); r.status != 503 {
		t.Errorf("unavailable store: %d %q; want 503", r.status, r.body)
	}
	if r := do(t, bearerServer(t, false), "GET", "/", "Bearer good"); r.status != 401 {
		t.Errorf("without WithBearer: %d; want 401", r.status)
	}
}

// TestBearerFailuresCountAsFailedLogins: wrong bearer values lock the
// address for tokens and passwords alike; a value that could not be
// checked is no failure.
func TestBearerFailuresCountAsFailedLogins(t *testing.T) {
	ts := bearerServer(t, true)
	for range 5 {
		if r := do(t, ts, "GET", "/", "Bearer down"); r.status != 503 {
			t.Fatalf("unavailable store: %d", r.status)
		}
	}
	for range 5 { // not a token: no credentials, uncounted
		if r := do(t, ts, "GET", "/", "Bearer not-a-token"); r.status != 401 || len(r.header.Values("WWW-Authenticate")) != 1 {
			t.Fatalf("not a token: %d %q; want 401 with the Basic challenge only", r.status, r.header.Values("WWW-Authenticate"))
		}
	}
	for i := range 3 {
		if r := do(t, ts, "GET", "/", fmt.Sprintf("Bearer wrong%d", i)); r.status != 401 {
			t.Fatalf("wrong token %d: %d; want 401", i, r.status)
		}
	}
	if r := do(t, ts, "GET", "/", "Bearer wrong9"); r.status != 429 {
		t.Errorf("a token after 3 failures: %d; want 429", r.status)
	}
	if r := do(t, ts, "GET", "/", basic("admin", "s3cret")); r.status != 429 {
		t.Errorf("a password from the locked address: %d; want 429", r.status)
	}
}
