package auth_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/auth"
)

// MustHash returns the bcrypt hash of password at bcrypt.MinCost.
func MustHash(tb testing.TB, password string) []byte {
	tb.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		tb.Fatalf("hash %q: %v", password, err)
	}
	return h
}

// basic returns the value of an Authorization header for name and password.
func basic(name, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(name+":"+password))
}

// testServer is a real HTTP server whose handler sits behind the middleware
// and echoes the authenticated user; calls counts how often it ran.
type testServer struct {
	*httptest.Server
	calls atomic.Int64
}

// MustServer starts a testServer for an admin "admin"/"s3cret", an admin
// "colon" whose password contains colons, and a user-role "viewer"/"look".
func MustServer(tb testing.TB, opts ...auth.Option) *testServer {
	tb.Helper()
	a := auth.New([]auth.Account{
		{Name: "admin", Hash: MustHash(tb, "s3cret"), Role: auth.Admin},
		{Name: "colon", Hash: MustHash(tb, "a:b:c"), Role: auth.Admin},
		{Name: "viewer", Hash: MustHash(tb, "look"), Role: auth.RoleNone},
	}, opts...)
	ts := &testServer{}
	ts.Server = httptest.NewServer(a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.calls.Add(1)
		name, ok := auth.User(r.Context())
		if !ok {
			http.Error(w, "no user in context", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "hello %s", name)
	})))
	tb.Cleanup(ts.Close)
	return ts
}

type response struct {
	status int
	header http.Header
	body   string
}

// do sends method to path with the given Authorization header ("" = none).
func do(tb testing.TB, srv *httptest.Server, method, path, authorization string) response {
	tb.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, strings.NewReader("{}"))
	if err != nil {
		tb.Fatalf("new request: %v", err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatalf("read body: %v", err)
	}
	return response{status: res.StatusCode, header: res.Header, body: string(body)}
}

const (
	wantChallenge   = `Basic realm="GeoWebCache Secured"`
	wantContentType = "text/plain; charset=utf-8"
	want401Body     = "Authentication required\n"
	want403Body     = "Account viewer has no role: the user role, kept for compatibility, allows no request\n"
)

func TestMiddlewareUnauthorized(t *testing.T) {
	ts := MustServer(t)
	b64 := base64.StdEncoding.EncodeToString
	tests := []struct {
		name          string
		authorization string
	}{
		{"no header", ""},
		{"bearer scheme", "Bearer x"},
		{"digest scheme", `Digest username="admin"`},
		{"basic without credentials", "Basic"},
		{"basic with empty credentials", "Basic "},
		{"bad base64", "Basic !!!not-base64!!!"},
		{"no colon", "Basic " + b64([]byte("admins3cret"))},
		{"wrong password", basic("admin", "wrong")},
		{"empty password", basic("admin", "")},
		{"password with trailing newline", basic("admin", "s3cret\n")},
		{"name differs in case", basic("Admin", "s3cret")},
		{"unknown user", basic("nobody", "s3cret")},
		{"unknown user empty name", basic("", "s3cret")},
		{"user-role account with wrong password", basic("viewer", "wrong")},
		{"colon account with only first part", basic("colon", "a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := ts.calls.Load()
			res := do(t, ts.Server, http.MethodPost, "/rest/seed/topp:states.json", tt.authorization)
			if got, want := res.status, http.StatusUnauthorized; got != want {
				t.Errorf("status: got %d, want %d", got, want)
			}
			if got := res.header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != wantChallenge {
				t.Errorf("WWW-Authenticate: got %q, want [%q]", got, wantChallenge)
			}
			if got := res.header.Get("Content-Type"); got != wantContentType {
				t.Errorf("Content-Type: got %q, want %q", got, wantContentType)
			}
			if got := res.body; got != want401Body {
				t.Errorf("body: got %q, want %q", got, want401Body)
			}
			if got := ts.calls.Load() - before; got != 0 {
				t.Errorf("next handler calls: got %d, want 0", got)
			}
		})
	}
}

func TestMiddlewareForbiddenForUserRole(t *testing.T) {
	ts := MustServer(t)
	res := do(t, ts.Server, http.MethodGet, "/rest/seed.json", basic("viewer", "look"))
	if got, want := res.status, http.StatusForbidden; got != want {
		t.Errorf("status: got %d, want %d", got, want)
	}
	if got := res.header.Get("Content-Type"); got != wantContentType {
		t.Errorf("Content-Type: got %q, want %q", got, wantContentType)
	}
	if got := res.body; got != want403Body {
		t.Errorf("body: got %q, want %q", got, want403Body)
	}
	if got := res.header.Get("WWW-Authenticate"); got != "" {
		t.Errorf("WWW-Authenticate: got %q, want none", got)
	}
	if got := ts.calls.Load(); got != 0 {
		t.Errorf("next handler calls: got %d, want 0", got)
	}
}

func TestMiddlewareSuccess(t *testing.T) {
	ts := MustServer(t)
	tests := []struct {
		name          string
		authorization string
		wantBody      string
	}{
		{"admin", basic("admin", "s3cret"), "hello admin"},
		{"scheme is case-insensitive", "basic " + base64.StdEncoding.EncodeToString([]byte("admin:s3cret")), "hello admin"},
		{"password containing colons", basic("colon", "a:b:c"), "hello colon"},
		{"repeated (cached) admin", basic("admin", "s3cret"), "hello admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, ts.Server, http.MethodGet, "/rest/seed.json", tt.authorization)
			if got, want := res.status, http.StatusOK; got != want {
				t.Errorf("status: got %d, want %d (body %q)", got, want, res.body)
			}
			if got := res.body; got != tt.wantBody {
				t.Errorf("body: got %q, want %q", got, tt.wantBody)
			}
		})
	}
}

// TestMiddlewareBeforeRouting checks the last rule of contract section 2: an
// unauthenticated request gets 401 even where the router would answer 405 or
// 404, while an authenticated one reaches the router.
func TestMiddlewareBeforeRouting(t *testing.T) {
	a := auth.New([]auth.Account{{Name: "admin", Hash: MustHash(t, "pw"), Role: auth.Admin}})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /rest/seed.json", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "tasks")
	})
	srv := httptest.NewServer(a.Middleware(mux))
	t.Cleanup(srv.Close)

	tests := []struct {
		name          string
		method, path  string
		authorization string
		want          int
	}{
		{"405 method unauthenticated", http.MethodPut, "/rest/seed.json", "", http.StatusUnauthorized},
		{"404 path unauthenticated", http.MethodGet, "/rest/nope", "", http.StatusUnauthorized},
		{"405 method authenticated", http.MethodPut, "/rest/seed.json", basic("admin", "pw"), http.StatusMethodNotAllowed},
		{"404 path authenticated", http.MethodGet, "/rest/nope", basic("admin", "pw"), http.StatusNotFound},
		{"route authenticated", http.MethodGet, "/rest/seed.json", basic("admin", "pw"), http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, srv, tt.method, tt.path, tt.authorization)
			if got := res.status; got != tt.want {
				t.Errorf("status: got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestMiddlewareNoAccounts(t *testing.T) {
	a := auth.New(nil)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/rest/seed.json", nil)
	req.SetBasicAuth("admin", "pw")
	a.Middleware(http.NotFoundHandler()).ServeHTTP(rec, req)
	if got, want := rec.Code, http.StatusUnauthorized; got != want {
		t.Errorf("status: got %d, want %d", got, want)
	}
}

func TestUserWithoutMiddleware(t *testing.T) {
	name, ok := auth.User(context.Background())
	if name != "" || ok {
		t.Errorf("User: got (%q, %v), want (\"\", false)", name, ok)
	}
}

// TestMiddlewareConcurrent runs many clients at once; run with -race.
func TestMiddlewareConcurrent(t *testing.T) {
	// Hundreds of failures from one address: limits that never lock
	// (TestFailedLogins* check the locks).
	const never = 1 << 30
	ts := MustServer(t, auth.WithLimits(auth.Limits{AddressFailures: never, AccountFailures: never, KnownFailures: never}))
	cases := []struct {
		authorization string
		want          int
	}{
		{basic("admin", "s3cret"), http.StatusOK},
		{basic("admin", "wrong"), http.StatusUnauthorized},
		{basic("viewer", "look"), http.StatusForbidden},
		{basic("ghost", "boo"), http.StatusUnauthorized},
		{"", http.StatusUnauthorized},
	}
	const workers, perWorker = 16, 25
	var wg sync.WaitGroup
	errs := make(chan string, workers*perWorker)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				c := cases[(w+i)%len(cases)]
				// Distinct wrong passwords exercise cache insertion too.
				authorization := c.authorization
				if c.want == http.StatusUnauthorized && authorization != "" {
					authorization = basic("admin", fmt.Sprintf("guess-%d-%d", w, i))
				}
				// t.Fatal must not be called off the test goroutine, so no do().
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/rest/seed.json", nil)
				if err != nil {
					errs <- err.Error()
					return
				}
				if authorization != "" {
					req.Header.Set("Authorization", authorization)
				}
				res, err := ts.Client().Do(req)
				if err != nil {
					errs <- err.Error()
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != c.want {
					errs <- fmt.Sprintf("worker %d request %d: got %d, want %d", w, i, res.StatusCode, c.want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if got := ts.calls.Load(); got == 0 {
		t.Errorf("next handler calls: got %d, want > 0", got)
	}
}

// TestMiddlewareRefusesPasswordsBcryptWouldTruncate: bcrypt reads 72
// bytes, so a 72-byte password followed by anything must not log in.
func TestMiddlewareRefusesPasswordsBcryptWouldTruncate(t *testing.T) {
	pw := strings.Repeat("p", auth.MaxPasswordBytes)
	a := auth.New([]auth.Account{{Name: "long", Hash: MustHash(t, pw), Role: auth.Admin}})
	ts := httptest.NewServer(a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "in") })))
	defer ts.Close()
	if res := do(t, ts, http.MethodGet, "/rest/seed.json", basic("long", pw)); res.status != http.StatusOK {
		t.Errorf("the 72-byte password: got %d, want 200", res.status)
	}
	if res := do(t, ts, http.MethodGet, "/rest/seed.json", basic("long", pw+"anything")); res.status != http.StatusUnauthorized {
		t.Errorf("the 72-byte password and more: got %d, want 401 (bcrypt would have ignored the rest)", res.status)
	}
}
