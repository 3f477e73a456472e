package audit_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/audit"
	"tilecache/internal/state/bolt"
)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// setup serves next behind a Recorder on a real server; the client
// address is taken from the X-Test-Address header (or the peer), the
// account from X-Test-Account (set by next's Identify when present).
func setup(t *testing.T, next http.Handler, opts ...audit.Option) (*audit.Recorder, audit.Store, *httptest.Server) {
	t.Helper()
	return setupAt(t, "", next, opts...)
}

// setupAt is setup with the Recorder at base path base.
func setupAt(t *testing.T, base string, next http.Handler, opts ...audit.Option) (*audit.Recorder, audit.Store, *httptest.Server) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := db.Audit(audit.DefaultRetention)
	addr := func(r *http.Request) string {
		if a := r.Header.Get("X-Test-Address"); a != "" {
			return a
		}
		return "peer"
	}
	who := func(r *http.Request) (string, string) { return r.Header.Get("X-Test-Account"), "admin" }
	rec := audit.NewRecorder(store, who, addr, slog.New(slog.NewTextHandler(io.Discard, nil)), opts...)
	t.Cleanup(func() { rec.Close(t.Context()) })
	// A stand-in for the accounts' middleware: "deny" refuses, anything
	// else is identified.
	guard := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("X-Test-Account") {
		case "":
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		case "deny":
			http.Error(w, "Too many failed logins", http.StatusTooManyRequests)
		default:
			rec.Identify(next).ServeHTTP(w, r)
		}
	})
	srv := httptest.NewServer(rec.Wrap(base, guard))
	t.Cleanup(srv.Close)
	return rec, store, srv
}

func send(t *testing.T, srv *httptest.Server, method, path, account, address string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if account != "" {
		req.Header.Set("X-Test-Account", account)
		req.SetBasicAuth("claimed-"+account, "pw")
	}
	if address != "" {
		req.Header.Set("X-Test-Address", address)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func all(t *testing.T, s audit.Store) []audit.Record {
	t.Helper()
	p, err := s.List(t.Context(), audit.Query{Limit: audit.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	return p.Records
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	audit.Note(r.Context(), "", 41, 42)
	w.Write([]byte("done"))
})

func TestOneRecordPerChangeNoneForReads(t *testing.T) {
	_, store, srv := setup(t, ok)
	for _, m := range []string{"GET", "HEAD", "OPTIONS"} {
		send(t, srv, m, "/rest/seed.json", "alice", "")
	}
	if got := all(t, store); len(got) != 0 {
		t.Fatalf("reads left %d records, want none", len(got))
	}
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		send(t, srv, m, "/rest/seed/a%2Fb+c.json", "alice", "192.0.2.1")
	}
	got := all(t, store)
	if len(got) != 4 {
		t.Fatalf("4 changes left %d records, want 4", len(got))
	}
	for i, r := range got {
		if r.Method != []string{"PATCH", "DELETE", "PUT", "POST"}[i] || r.Account != "alice" || r.Unverified || r.Role != "admin" ||
			r.Address != "192.0.2.1" || r.Path != "/rest/seed/a/b+c.json" || r.Layer != "a/b c" || len(r.Tasks) != 2 ||
			r.Status != 200 || r.Message != "" || r.Count != 0 {
			t.Errorf("record %d = %+v", i, r)
		}
	}
}

// TestEightConcurrentClients: 8 clients sending 50 changes each leave 400
// records.
func TestEightConcurrentClients(t *testing.T) {
	_, store, srv := setup(t, ok)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				send(t, srv, "POST", "/rest/seed/a.json", "alice", "")
			}
		})
	}
	wg.Wait()
	var n int
	q := audit.Query{Limit: audit.MaxLimit}
	for range 10 {
		p, err := store.List(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		n += len(p.Records)
		if q.After = p.Next; p.Next == "" {
			break
		}
	}
	if n != 400 {
		t.Fatalf("8 clients × 50 changes: %d records, want 400", n)
	}
}

func TestFailureMessage(t *testing.T) {
	long := strings.Repeat("upstream said <b>no</b>\n", 50)
	_, store, srv := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, long, http.StatusBadGateway)
	}))
	send(t, srv, "POST", "/rest/masstruncate", "alice", "")
	got := all(t, store)
	if len(got) != 1 || got[0].Status != 502 || len(got[0].Message) > audit.MaxMessage ||
		!strings.HasPrefix(got[0].Message, "upstream said <b>no</b> upstream") || strings.Contains(got[0].Message, "\n") {
		t.Fatalf("records %+v; want one 502 with the body's start on one line, at most %d bytes", got, audit.MaxMessage)
	}
}

// TestRefusalsAggregatePerAddress: an address's first refusal is written
// at once, those in the window after it make one record with their count
// once the window ended; reads are recorded when refused; another
// address has a window of its own.
func TestRefusalsAggregatePerAddress(t *testing.T) {
	c := &clock{now: time.Now()}
	_, store, srv := setup(t, ok, audit.WithClock(c.Now))
	send(t, srv, "GET", "/rest/seed.json", "", "192.0.2.1")
	c.Add(time.Millisecond) // records of one time have no order
	send(t, srv, "POST", "/rest/seed", "deny", "192.0.2.2")
	for range 3 {
		c.Add(time.Second)
		send(t, srv, "GET", "/rest/seed.json", "", "192.0.2.1")
	}
	got := all(t, store)
	if len(got) != 2 || got[0].Address != "192.0.2.2" || got[0].Status != 429 || got[0].Account != "claimed-deny" || !got[0].Unverified ||
		got[0].Role != "" || got[1].Address != "192.0.2.1" || got[1].Account != "" || got[1].Count != 1 || got[1].Method != "GET" {
		t.Fatalf("records %+v; want one refusal per address, written at once", got)
	}
	c.Add(audit.RefusalWindow)
	send(t, srv, "GET", "/rest/seed.json", "", "192.0.2.1") // ends the window, opens another
	got = all(t, store)
	counts := map[int]int{}
	for _, r := range got {
		counts[r.Count]++
	}
	if len(got) != 4 || counts[1] != 3 || counts[3] != 1 {
		t.Fatalf("records %+v; want the window's 3 later refusals in one record, and the new window's first", got)
	}
}

// TestRefusalAddressesBounded: past the most addresses with an open
// window, refusals share one window (address "*"); Close writes what was
// counted.
func TestRefusalAddressesBounded(t *testing.T) {
	rec, store, srv := setup(t, ok, audit.WithRefusalWindow(time.Hour, 3))
	for i := range 10 {
		send(t, srv, "POST", "/rest/seed", "", "198.51.100."+string(rune('0'+i)))
	}
	if got := all(t, store); len(got) != 4 || got[0].Address != "*" {
		t.Fatalf("%d records (newest %+v); want 3 addresses and one shared window", len(got), got[0])
	}
	rec.Close(t.Context())
	got := all(t, store)
	total := 0
	for _, r := range got {
		total += r.Count
	}
	if len(got) != 5 || got[0].Address != "*" || got[0].Count != 6 || total != 10 {
		t.Fatalf("after Close: %+v; want the shared window's 6 later refusals in one record, 10 in all", got)
	}
}

// TestScope: only the administration interface and the console below the
// base path are recorded, their paths without it.
func TestScope(t *testing.T) {
	_, store, srv := setupAt(t, "/gwc", ok)
	for _, p := range []string{"/gwc/tiles/a/0/0/0.png", "/gwc/restx", "/rest/seed", "/gwc/metrics", "/gwc/consoles"} {
		send(t, srv, "POST", p, "alice", "")
		send(t, srv, "GET", p, "", "")
	}
	if got := all(t, store); len(got) != 0 {
		t.Fatalf("requests outside the scope left %+v, want none", got)
	}
	send(t, srv, "POST", "/gwc/rest/layers/x.xml", "alice", "")
	send(t, srv, "DELETE", "/gwc/console/x", "alice", "")
	send(t, srv, "PUT", "/gwc/rest", "alice", "")
	got := all(t, store)
	if len(got) != 3 || got[2].Path != "/rest/layers/x.xml" || got[2].Layer != "x" || got[1].Path != "/console/x" || got[0].Path != "/rest" {
		t.Fatalf("records %+v; want /rest/layers/x.xml (layer x), /console/x and /rest", got)
	}
}

// TestPanicRecorded: a change whose handler panicked is recorded as a 500.
func TestPanicRecorded(t *testing.T) {
	_, store, srv := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		audit.Note(r.Context(), "a", 7)
		panic("boom")
	}))
	req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/rest/seed/a.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Test-Account", "alice")
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close() // the server drops the connection: no answer
	}
	got := all(t, store)
	if len(got) != 1 || got[0].Status != 500 || got[0].Layer != "a" || len(got[0].Tasks) != 1 || got[0].Message == "" {
		t.Fatalf("records %+v; want the panicked change as a 500", got)
	}
}

func TestPathLayer(t *testing.T) {
	for path, want := range map[string]string{
		"/rest/seed/topp:states.json":            "topp:states",
		"/rest/seed/a%2Fb+c":                     "a/b c",
		"/rest/layers/x.xml":                     "x",
		"/rest/layers/from-capabilities.json":    "",
		"/rest/estimate/x.json":                  "x",
		"/rest/diskquota/pages/x/EPSG:4326.json": "x",
		"/rest/seed":                             "",
		"/rest/masstruncate":                     "",
		"/rest/schedules/nightly.json":           "",
	} {
		if got := audit.PathLayer(path); got != want {
			t.Errorf("PathLayer(%s) = %q, want %q", path, got, want)
		}
	}
}

// TestHandlerRefusesBadQueries: each bad parameter is a 400 whose message
// names it and says what to give instead.
func TestHandlerRefusesBadQueries(t *testing.T) {
	rec, _, _ := setup(t, ok)
	srv := httptest.NewServer(rec.Handler(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(srv.Close)
	for q, want := range map[string]string{
		"since=yesterday": `Invalid since "yesterday": give a time in RFC 3339, such as 2026-12-02T00:00:00Z`,
		"limit=0":         `Invalid limit "0": give a number from 1 to 1000`,
		"limit=ten":       `Invalid limit "ten": give a number from 1 to 1000`,
		"after=x":         `Invalid after "x": give the next of a previous answer`,
	} {
		res, err := http.Get(srv.URL + audit.Path + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || strings.TrimSpace(string(body)) != want {
			t.Errorf("GET %s?%s: %d %q, want 400 %q", audit.Path, q, res.StatusCode, body, want)
		}
	}
}
