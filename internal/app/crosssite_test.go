package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

// TestCrossSiteKillRefused: a page of another site that posts
// GeoWebCache's kill form to /rest/seed (the browser adds the
// administrator's cached credentials, its Origin and Sec-Fetch-Site) kills
// nothing, through the server and through the API function's handler
// alike; the same form sent by curl still kills.
func TestCrossSiteKillRefused(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":6,"threadCount":1}}`)
	id := rows[0][3]
	running := func() bool {
		for _, r := range listRows(t, a, "/rest/seed.json") {
			if r[3] == id {
				return r[4] == 1
			}
		}
		return false
	}
	testenv.Eventually(t, 10*time.Second, "the seed to run", running)
	browser := []string{"Content-Type", "application/x-www-form-urlencoded", "Origin", "https://evil.example",
		"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document"}
	res := a.Do(t, "POST", "/rest/seed", "kill_all=all", browser...)
	if res.Status != http.StatusForbidden || !strings.Contains(res.Body, "Sec-Fetch-Site is cross-site") {
		t.Fatalf("cross-site kill through the server: got %d %q, want 403 naming Sec-Fetch-Site", res.Status, res.Body)
	}
	// Through the API function's handler (API Gateway's event).
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RawPath: "/rest/seed", Body: "kill_all=all",
		Headers: map[string]string{"content-type": "application/x-www-form-urlencoded", "origin": "https://evil.example",
			"authorization": basicAuth(), "host": "abc.execute-api.eu-west-1.amazonaws.com", "x-forwarded-proto": "https"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "abc.execute-api.eu-west-1.amazonaws.com", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
			Method: "POST", Path: "/rest/seed", Protocol: "HTTP/1.1", SourceIP: "203.0.113.9"}},
	}
	out, err := a.Local.HandleAPI(t.Context(), ev)
	if err != nil || out.StatusCode != http.StatusForbidden || !strings.Contains(out.Body, "Origin https://evil.example is not this service's origin") {
		t.Fatalf("cross-site kill through the API function: got %d %q, %v; want 403 naming the Origin", out.StatusCode, out.Body, err)
	}
	// The seed keeps running: still RUNNING, its count still moving.
	before, _ := a.Local.Tasks.Get(t.Context(), id)
	testenv.Eventually(t, 10*time.Second, "the seed to make progress", func() bool {
		now, _ := a.Local.Tasks.Get(t.Context(), id)
		return now.Done > before.Done
	})
	if !running() {
		t.Fatalf("task %d is no longer RUNNING after refused kills", id)
	}
	// The same page of the service's own origin (through API Gateway's
	// host) passes the guard.
	ev.Headers["origin"] = "https://abc.execute-api.eu-west-1.amazonaws.com"
	ev.Body = "kill_all=pending"
	if out, err := a.Local.HandleAPI(t.Context(), ev); err != nil || out.StatusCode != http.StatusOK {
		t.Errorf("a same-origin kill through the API function: got %d %q, %v; want 200", out.StatusCode, out.Body, err)
	}
	// curl: no Origin, no Sec-Fetch-Site: the kill works.
	page := kill(t, a, "/rest/seed", "all")
	if !strings.Contains(page, "slow:world, SEED, RUNNING") {
		t.Errorf("curl's kill page does not list the running task: %s", page)
	}
	testenv.Eventually(t, 10*time.Second, "the killed seed to stop", func() bool { return !running() })
}

func basicAuth() string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(apptest.User, apptest.Password)
	return req.Header.Get("Authorization")
}
