package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/quota"
)

// pageHits returns the hits and last access of a layer's pages by id.
func pageHits(t testing.TB, a *apptest.App, layer string) map[string]quota.Page {
	t.Helper()
	ps, err := a.Local.Usage.Pages(t.Context(), layer)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]quota.Page{}
	for _, p := range ps {
		out[p.Key.ID()] = p
	}
	return out
}

// TestAccessBatches: reads counted from access logs, posted as batches
// of page reads, reach the usage pages once per batch id; bad batches are
// refused with a 4xx naming the problem.
func TestAccessBatches(t *testing.T) {
	t.Parallel()
	a := startQuota(t, t.TempDir())
	waitSettled(t, a)
	waitFinished(t, a, ids(seedReq(t, a, "quota:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2}}`)), time.Minute)
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	batch := func(id string, hits int) string {
		return fmt.Sprintf(`{"id":%q,"reads":[{"layer":"quota:world","gridSetId":"EPSG:4326","formatId":"png","parametersId":"default","z":2,"pageX":0,"pageY":0,"hits":%d,"last":%q}]}`,
			id, hits, at.Format(time.RFC3339))
	}
	post := func(body string, headers ...string) apptest.Response {
		t.Helper()
		if len(headers) == 0 {
			headers = []string{"Content-Type", "application/json"}
		}
		return a.Do(t, "POST", "/rest/diskquota/access.json", body, headers...)
	}
	const page = "quota:world|EPSG:4326|png|default|2|0|0"
	if res := post(batch("log-1#0", 7)); res.Status != 200 || !strings.Contains(res.Body, `"duplicate":false`) {
		t.Fatalf("first batch: %d %q", res.Status, res.Body)
	}
	if p := pageHits(t, a, "quota:world")[page]; p.Hits != 7 || !p.LastAccess.Equal(at) {
		t.Fatalf("page after the batch: %+v, want 7 hits, last access %v", p, at)
	}
	// The same batch again (a log object delivered twice) adds nothing.
	if res := post(batch("log-1#0", 7)); res.Status != 200 || !strings.Contains(res.Body, `"duplicate":true`) {
		t.Fatalf("the same batch again: %d %q", res.Status, res.Body)
	}
	if res := post(batch("log-2#0", 3)); res.Status != 200 {
		t.Fatalf("another batch: %d %q", res.Status, res.Body)
	}
	if p := pageHits(t, a, "quota:world")[page]; p.Hits != 10 {
		t.Fatalf("page after three posts, one a repeat: %d hits, want 10", p.Hits)
	}
	// Log lines name layers by their store id: other:world's is other-world.
	waitFinished(t, a, ids(seedReq(t, a, "other:world", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`)), time.Minute)
	byID := fmt.Sprintf(`{"id":"log-5#0","reads":[`+
		`{"layerId":"other-world","gridSetId":"EPSG:4326","formatId":"png","parametersId":"default","z":1,"pageX":0,"pageY":0,"hits":4,"last":%[1]q},`+
		`{"layerId":"gone-layer","gridSetId":"EPSG:4326","formatId":"png","parametersId":"default","z":1,"pageX":0,"pageY":0,"hits":4,"last":%[1]q}]}`, at.Format(time.RFC3339))
	if res := post(byID); res.Status != 200 || !strings.Contains(res.Body, `"pages":1,"skipped":1`) {
		t.Fatalf("a batch by layer id: %d %q, want 1 page recorded and 1 skipped", res.Status, res.Body)
	}
	if p := pageHits(t, a, "other:world")["other:world|EPSG:4326|png|default|1|0|0"]; p.Hits != 4 {
		t.Fatalf("other:world's page after the batch by id: %+v, want 4 hits", p)
	}
	for _, c := range []struct {
		body, ctype string
		status      int
		says        string
	}{
		{`{"reads":[]}`, "application/json", 400, "id"},
		{`{"id":"x","reads":[{"layer":"nope:layer","gridSetId":"EPSG:4326","formatId":"png","parametersId":"default","z":0,"pageX":0,"pageY":0,"hits":1,"last":"2026-11-25T12:00:00Z"}]}`, "application/json", 400, "unknown layer nope:layer"},
		{`{"id":"x","reads":[{"layer":"quota:world","gridSetId":"EPSG:4326","formatId":"png","parametersId":"default","z":0,"pageX":-1,"pageY":0,"hits":1,"last":"2026-11-25T12:00:00Z"}]}`, "application/json", 400, "must not be negative"},
		{`{"id":"x","reads":[{"layer":"quota:world","gridSetId":"EPSG:4326","formatId":"png","parametersId":"default","z":0,"pageX":0,"pageY":0,"hits":0,"last":"2026-11-25T12:00:00Z"}]}`, "application/json", 400, "hits"},
		{`{"id":"x","reads":[],"extra":1}`, "application/json", 400, "unknown field"},
		{`{"id":"x"`, "application/json", 400, "Malformed"},
		{batch("log-3#0", 1), "text/plain", 415, "application/json"},
	} {
		res := post(c.body, "Content-Type", c.ctype)
		if res.Status != c.status || !strings.Contains(res.Body, c.says) {
			t.Errorf("POST %s (%s): got %d %q, want %d naming %q", c.body, c.ctype, res.Status, res.Body, c.status, c.says)
		}
	}
	if res := a.DoAuth(t, "", "", "POST", "/rest/diskquota/access.json", batch("log-4#0", 1), "Content-Type", "application/json"); res.Status != 401 {
		t.Errorf("anonymous POST: got %d, want 401", res.Status)
	}
}
