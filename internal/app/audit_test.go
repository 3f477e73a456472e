package app_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/audit"
)

// auditRecords reads GET /rest/audit.json with query q, following the
// continuation to the end.
func auditRecords(t *testing.T, a *apptest.App, q url.Values) []audit.Record {
	t.Helper()
	var out []audit.Record
	for range 100 {
		res := a.Do(t, "GET", audit.Path+"?"+q.Encode(), "")
		if res.Status != 200 || res.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s?%s: %d %s %q", audit.Path, q.Encode(), res.Status, res.Header.Get("Content-Type"), res.Body)
		}
		var p audit.Page
		if err := json.Unmarshal([]byte(res.Body), &p); err != nil {
			t.Fatalf("GET %s: %v in %q", audit.Path, err, res.Body)
		}
		out = append(out, p.Records...)
		if p.Next == "" {
			return out
		}
		q.Set("after", p.Next)
	}
	t.Fatal("audit listing did not end within 100 pages")
	return nil
}

// TestAuditTrail: a seed, a one-task kill, a layer change, a mass
// truncate and a wrong password each leave exactly one record with who,
// role, address, route, target and outcome, read back through GET
// /rest/audit.json filtered by layer and by account; reads leave none,
// and a refused read leaves one.
func TestAuditTrail(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	start := time.Now().UTC()
	// Reads: none recorded.
	for _, p := range []string{"/rest/seed.json", "/rest/layers.xml", "/rest/gridsets.xml", "/rest/diskquota.json", audit.Path} {
		if res := a.Do(t, "GET", p, ""); res.Status != 200 {
			t.Fatalf("GET %s: %d %q", p, res.Status, res.Body)
		}
	}
	if got := auditRecords(t, a, url.Values{}); len(got) != 0 {
		t.Fatalf("after reads only: %d records %+v, want none", len(got), got)
	}

	seeded := ids(seedReq(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":1,"threadCount":2}}`))
	waitFinished(t, a, seeded, time.Minute)
	kill := a.Do(t, "POST", "/rest/seed/demo:world", fmt.Sprintf("kill_thread=1&thread_id=%d", seeded[0]), "Content-Type", "application/x-www-form-urlencoded")
	if kill.Status != 200 {
		t.Fatalf("kill task %d: %d %q", seeded[0], kill.Status, kill.Body)
	}
	if res := a.Do(t, "PUT", "/rest/gridsets/Quarter.xml", quarterDoc(t), "Content-Type", "text/xml"); res.Status != 200 {
		t.Fatalf("PUT grid set: %d %q", res.Status, res.Body)
	}
	if res := a.Do(t, "PUT", "/rest/layers/run:world.xml", runLayerDoc("http://127.0.0.1:9/wms", "image/png", "2"), "Content-Type", "text/xml"); res.Status != 200 {
		t.Fatalf("PUT layer: %d %q", res.Status, res.Body)
	}
	if res := a.Do(t, "POST", "/rest/masstruncate", "<truncateLayer><layerName>topp:states</layerName></truncateLayer>", "Content-Type", "text/xml"); res.Status != 200 {
		t.Fatalf("mass truncate: %d %q", res.Status, res.Body)
	}
	if res := a.DoAuth(t, apptest.User, "wrong", "POST", "/rest/masstruncate", "<truncateLayer><layerName>demo:world</layerName></truncateLayer>", "Content-Type", "text/xml"); res.Status != 401 {
		t.Fatalf("wrong password: %d %q, want 401", res.Status, res.Body)
	}
	// Refused by the cross-site guard, before the accounts' middleware.
	if res := a.Do(t, "POST", "/rest/seed/demo:world", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "cross-site"); res.Status != 403 {
		t.Fatalf("cross-site kill: %d %q, want 403", res.Status, res.Body)
	}
	// A failed request: recorded with its message.
	if res := a.Do(t, "POST", "/rest/masstruncate", "<truncateLayer><layerName>no:such</layerName></truncateLayer>", "Content-Type", "text/xml"); res.Status/100 != 4 {
		t.Fatalf("mass truncate of no layer: %d %q, want a 4xx", res.Status, res.Body)
	}

	got := auditRecords(t, a, url.Values{})
	type want struct {
		account    string
		unverified bool
		method     string
		path       string
		layer      string
		tasks      []int64
		status     int
	}
	u := apptest.User
	wants := []want{ // newest first
		{u, false, "POST", "/rest/masstruncate", "no:such", nil, 400},
		{u, true, "POST", "/rest/seed/demo:world", "demo:world", nil, 403},
		{u, true, "POST", "/rest/masstruncate", "", nil, 401},
		{u, false, "POST", "/rest/masstruncate", "topp:states", nil, 200},
		{u, false, "PUT", "/rest/layers/run:world.xml", "run:world", nil, 200},
		{u, false, "PUT", "/rest/gridsets/Quarter.xml", "", nil, 200},
		{u, false, "POST", "/rest/seed/demo:world", "demo:world", seeded[:1], 200},
		{u, false, "POST", "/rest/seed/demo:world.json", "demo:world", seeded, 200},
	}
	if len(got) != len(wants) {
		for _, r := range got {
			t.Logf("%+v", r)
		}
		t.Fatalf("%d records, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		r := got[i]
		if r.Account != w.account || r.Unverified != w.unverified || r.Method != w.method || r.Path != w.path ||
			r.Layer != w.layer || !slices.Equal(r.Tasks, w.tasks) || r.Status != w.status {
			t.Errorf("record %d = %+v\nwant %+v", i, r, w)
		}
		if wantRole := map[bool]string{false: "admin", true: ""}[w.unverified]; r.Role != wantRole {
			t.Errorf("record %d: role %q, want %q", i, r.Role, wantRole)
		}
		if r.Address != "127.0.0.1" || r.At.Before(start.Add(-time.Second)) || r.At.After(time.Now()) || r.At.Location() != time.UTC {
			t.Errorf("record %d: address %q at %v; want 127.0.0.1, in UTC since %v", i, r.Address, r.At, start)
		}
		if (r.Status >= 400) != (r.Message != "") {
			t.Errorf("record %d: status %d with message %q; want a message for failures only", i, r.Status, r.Message)
		}
		if audit.Refused(w.status) && r.Count != 1 {
			t.Errorf("record %d: a refusal counting %d, want 1", i, r.Count)
		}
	}

	// Filters.
	layerRecs := auditRecords(t, a, url.Values{"layer": {"topp:states"}})
	if len(layerRecs) != 1 || layerRecs[0].Path != "/rest/masstruncate" {
		t.Errorf("layer=topp:states: %+v; want the mass truncate", layerRecs)
	}
	layerRecs = auditRecords(t, a, url.Values{"layer": {"run:world"}})
	if len(layerRecs) != 1 || layerRecs[0].Method != "PUT" {
		t.Errorf("layer=run:world: %+v; want the layer change", layerRecs)
	}
	if n := len(auditRecords(t, a, url.Values{"account": {u}})); n != len(wants) {
		t.Errorf("account=%s: %d records, want %d", u, n, len(wants))
	}
	if n := len(auditRecords(t, a, url.Values{"account": {"nobody"}})); n != 0 {
		t.Errorf("account=nobody: %d records, want none", n)
	}
	if n := len(auditRecords(t, a, url.Values{"layer": {"demo:world"}, "limit": {"1"}})); n != 3 {
		t.Errorf("layer=demo:world in pages of 1: %d records, want 3 (the seed, the kill, the cross-site refusal)", n)
	}
	if n := len(auditRecords(t, a, url.Values{"since": {got[3].At.Format(time.RFC3339Nano)}})); n != 4 {
		t.Errorf("since the mass truncate: %d records, want 4", n)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=ten", "since=yesterday", "after=x"} {
		if res := a.Do(t, "GET", audit.Path+"?"+q, ""); res.Status != 400 {
			t.Errorf("GET %s?%s: %d %q, want 400", audit.Path, q, res.Status, res.Body)
		}
	}

	// A refused read is recorded; the read itself is not.
	if res := a.DoAuth(t, "", "", "GET", "/rest/seed.json", ""); res.Status != 401 {
		t.Fatalf("anonymous GET: %d, want 401", res.Status)
	}
	got = auditRecords(t, a, url.Values{})
	if len(got) != len(wants)+1 || got[0].Method != "GET" || got[0].Path != "/rest/seed.json" || got[0].Account != "" || got[0].Status != 401 || got[0].Count < 1 {
		t.Fatalf("after an anonymous GET: newest %+v of %d; want the refused GET, anonymous, on top of %d", got[0], len(got), len(wants))
	}
}

// TestAuditLoginFlood: 500 wrong passwords from one address leave a
// bounded number of records (one at once, then one per window and per
// listing), whose counts add up to the 500 refusals.
func TestAuditLoginFlood(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	// The administrator logs in from this address first: a known pair
	// passes the address's lock (auth.Authenticator), so it can read the
	// trail after the flood.
	if got := auditRecords(t, a, url.Values{}); len(got) != 0 {
		t.Fatalf("%d records at start, want none", len(got))
	}
	const n, workers = 500, 96
	var next atomic.Int64
	var wg sync.WaitGroup
	var bad atomic.Int64
	began := time.Now()
	for range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= n; i = next.Add(1) {
				res := a.DoAuth(t, "mallory", fmt.Sprintf("guess-%d", i), "POST", "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded")
				if res.Status != 401 && res.Status != 429 {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	if bad.Load() != 0 {
		t.Fatalf("%d of the wrong passwords not refused", bad.Load())
	}
	got := auditRecords(t, a, url.Values{"account": {"mallory"}})
	total := 0
	for _, r := range got {
		if !r.Unverified || r.Role != "" || (r.Status != 401 && r.Status != 429) || r.Path != "/rest/seed" {
			t.Errorf("record %+v: want an unverified refusal of POST /rest/seed", r)
		}
		total += r.Count
	}
	// Per window: one written at once and one counting the rest when it
	// ends; one more by the listing.
	bound := 2*(1+int(elapsed/audit.RefusalWindow)) + 1
	t.Logf("%d wrong passwords in %v: %d records, counts adding up to %d", n, elapsed.Round(time.Millisecond), len(got), total)
	if len(got) > bound || total != n {
		t.Fatalf("%d records counting %d refusals; want at most %d counting %d", len(got), total, bound, n)
	}
}

// TestAuditRecordsRoles: a request beyond its account's role is refused
// (403) and recorded with the account and its role, and the audit trail
// is an administrator's to read.
func TestAuditRecordsRoles(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	if res := a.DoAuth(t, apptest.ViewerUser, apptest.Password, "POST", "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded"); res.Status != 403 {
		t.Fatalf("a viewer's kill: %d %q, want 403", res.Status, res.Body)
	}
	if res := a.DoAuth(t, apptest.OperatorUser, apptest.Password, "GET", audit.Path, ""); res.Status != 403 {
		t.Errorf("an operator's read of the audit trail: %d %q, want 403", res.Status, res.Body)
	}
	got := auditRecords(t, a, url.Values{"account": {apptest.ViewerUser}})
	if len(got) != 1 || got[0].Role != "viewer" || got[0].Status != 403 || got[0].Path != "/rest/seed" || got[0].Unverified {
		t.Fatalf("records of %s: %+v, want the refused kill with the viewer role", apptest.ViewerUser, got)
	}
}
