package rest_test

// Schedules of saved requests (an extension of this project): saving,
// listing, reading and deleting them, and every refusal at save time —
// the request is prepared then, so a bad layer or zoom level is a 400 at
// once. Firing is tested in internal/app (schedule_test.go) and by the
// store suite (scheduletest).

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
)

var ctJSONHeader = []string{"Content-Type", ctJSON}

// scheduleDoc is a schedule as the interface shows it.
type scheduleDoc struct {
	Name      string          `json:"name"`
	Cron      string          `json:"cron"`
	Timezone  string          `json:"timezone"`
	Request   json.RawMessage `json:"request"`
	Created   time.Time       `json:"created"`
	NextRun   *time.Time      `json:"nextRun"`
	LastRun   *runDoc         `json:"lastRun"`
	LastStart *runDoc         `json:"lastStarted"`
	LastError *runDoc         `json:"lastError"`
}

type runDoc struct {
	Due     time.Time `json:"due"`
	Outcome string    `json:"outcome"`
	Job     int64     `json:"job"`
	Tasks   []int64   `json:"tasks"`
	Reason  string    `json:"reason"`
}

func decodeSchedule(t testing.TB, body string) scheduleDoc {
	t.Helper()
	var d scheduleDoc
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatalf("decode schedule %q: %v", body, err)
	}
	return d
}

func scheduleBody(name, cron, request string) string {
	return `{"name":"` + name + `","cron":"` + cron + `","request":` + request + `}`
}

const statesRequest = `{"layer":"topp:states","seedRequest":{"zoomStart":0,"zoomStop":2,"type":"reseed","threadCount":2}}`

func TestSchedulesSaveListDelete(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	before := time.Now()
	res := a.Do(t, "POST", "/rest/schedules.json", scheduleBody("states-nightly", "0 3 * * *", statesRequest), ctJSONHeader...)
	if res.Status != http.StatusCreated || res.Header.Get("Content-Type") != ctJSON || res.Header.Get("Location") != "/rest/schedules/states-nightly.json" {
		t.Fatalf("POST: got %d %q Location %q, want 201 application/json at /rest/schedules/states-nightly.json (%s)",
			res.Status, res.Header.Get("Content-Type"), res.Header.Get("Location"), res.Body)
	}
	s := decodeSchedule(t, res.Body)
	next := time.Date(before.Year(), before.Month(), before.Day(), 3, 0, 0, 0, time.UTC)
	if !next.After(before) {
		next = next.AddDate(0, 0, 1)
	}
	if s.Name != "states-nightly" || s.Cron != "0 3 * * *" || s.Timezone != "UTC" || s.NextRun == nil || !s.NextRun.Equal(next) ||
		s.LastRun != nil || s.LastStart != nil || s.LastError != nil || s.Created.Before(before.Add(-time.Second)) {
		t.Fatalf("saved: got %+v, want next run %v and no runs", s, next)
	}
	var req, want any
	json.Unmarshal(s.Request, &req)
	json.Unmarshal([]byte(statesRequest), &want)
	if got, _ := json.Marshal(req); string(got) != mustJSON(t, want) {
		t.Errorf("request: got %s, want %s", s.Request, statesRequest)
	}
	// Saving records no task.
	if rows := list(t, a, "/rest/seed.json"); len(rows) != 0 {
		t.Errorf("saving a schedule started tasks: %v", rows)
	}

	// A time zone: @daily in Paris is midnight there.
	res = a.Do(t, "POST", "/rest/schedules.json",
		`{"name":"a.world","cron":"@daily","timezone":"Europe/Paris","request":{"layer":"demo:world","seedRequest":{"zoomStart":0,"zoomStop":1}}}`, ctJSONHeader...)
	if res.Status != http.StatusCreated {
		t.Fatalf("POST with a time zone: got %d %q", res.Status, res.Body)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	if s := decodeSchedule(t, res.Body); s.Timezone != "Europe/Paris" || s.NextRun == nil || s.NextRun.In(paris).Hour() != 0 || s.NextRun.In(paris).Minute() != 0 {
		t.Errorf("got timezone %q, next run %v; want Europe/Paris midnight", s.Timezone, s.NextRun)
	}

	// A name in use.
	res = a.Do(t, "POST", "/rest/schedules.json", scheduleBody("states-nightly", "@hourly", statesRequest), ctJSONHeader...)
	wantError(t, res, http.StatusConflict, "Schedule states-nightly exists")

	// The list, by name; one schedule.
	res = a.Do(t, "GET", "/rest/schedules.json", "")
	wantOK(t, res, ctJSON)
	var doc struct {
		Schedules []scheduleDoc `json:"schedules"`
	}
	if err := json.Unmarshal([]byte(res.Body), &doc); err != nil || len(doc.Schedules) != 2 ||
		doc.Schedules[0].Name != "a.world" || doc.Schedules[1].Name != "states-nightly" || doc.Schedules[1].Cron != "0 3 * * *" {
		t.Fatalf("list: got %s, want a.world then states-nightly", res.Body)
	}
	res = a.Do(t, "GET", "/rest/schedules/states-nightly.json", "")
	wantOK(t, res, ctJSON)
	if got := decodeSchedule(t, res.Body); got.Name != "states-nightly" || got.NextRun == nil || !got.NextRun.Equal(next) {
		t.Errorf("GET: got %+v", got)
	}

	// Delete.
	res = a.Do(t, "DELETE", "/rest/schedules/states-nightly.json", "")
	if res.Status != http.StatusNoContent || res.Body != "" {
		t.Fatalf("DELETE: got %d %q, want 204 and no body", res.Status, res.Body)
	}
	wantError(t, a.Do(t, "GET", "/rest/schedules/states-nightly.json", ""), http.StatusNotFound, "Schedule states-nightly not found")
	wantError(t, a.Do(t, "DELETE", "/rest/schedules/states-nightly.json", ""), http.StatusNotFound, "Schedule states-nightly not found")
	res = a.Do(t, "GET", "/rest/schedules.json", "")
	if !strings.Contains(res.Body, `"a.world"`) || strings.Contains(res.Body, "states-nightly") {
		t.Errorf("list after delete: %s", res.Body)
	}
	// The name is free again.
	if res := a.Do(t, "POST", "/rest/schedules.json", scheduleBody("states-nightly", "@hourly", statesRequest), ctJSONHeader...); res.Status != http.StatusCreated {
		t.Errorf("POST after delete: got %d %q, want 201", res.Status, res.Body)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestScheduleMethodsAndPaths(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	for _, c := range []struct{ method, path, allow string }{
		{"PUT", "/rest/schedules.json", "GET, POST"},
		{"DELETE", "/rest/schedules.json", "GET, POST"},
		{"POST", "/rest/schedules/x.json", "GET, DELETE"},
		{"PUT", "/rest/schedules/x.json", "GET, DELETE"},
	} {
		res := a.Do(t, c.method, c.path, "")
		if res.Status != http.StatusMethodNotAllowed || res.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: got %d Allow %q, want 405 Allow %q", c.method, c.path, res.Status, res.Header.Get("Allow"), c.allow)
		}
	}
	for _, p := range []string{"/rest/schedules.xml", "/rest/schedules/x.xml", "/rest/schedules/x", "/rest/schedules/a/b.json", "/rest/schedules/.json"} {
		if res := a.Do(t, "GET", p, ""); res.Status != http.StatusNotFound {
			t.Errorf("GET %s: got %d, want 404", p, res.Status)
		}
	}
	// Without credentials, nothing.
	if res := a.DoAuth(t, "", "", "GET", "/rest/schedules.json", ""); res.Status != http.StatusUnauthorized {
		t.Errorf("GET without credentials: got %d, want 401", res.Status)
	}
}

func TestScheduleErrors(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	req := func(seed string) string { return `{"layer":"topp:states","seedRequest":{` + seed + `}}` }
	z := `"zoomStart":0,"zoomStop":2`
	cases := []errCase{
		// The schedule.
		{name: "bad cron", body: scheduleBody("n", "0 3 * *", req(z)), parts: []string{"Invalid cron expression 0 3 * *", "expected exactly 5 fields"}},
		{name: "cron out of range", body: scheduleBody("n", "0 25 * * *", req(z)), parts: []string{"Invalid cron expression 0 25 * * *"}},
		{name: "no cron", body: `{"name":"n","request":` + req(z) + `}`, parts: []string{"needs a cron expression"}},
		{name: "cron never fires", body: scheduleBody("n", "0 0 30 2 *", req(z)), want: "Cron expression 0 0 30 2 * never fires"},
		{name: "every too often", body: scheduleBody("n", "@every 5s", req(z)), parts: []string{"@every needs an interval of at least 1m0s"}},
		{name: "zone in the expression", body: scheduleBody("n", "CRON_TZ=Europe/Paris 0 3 * * *", req(z)), parts: []string{`give the time zone in "timezone"`}},
		{name: "unknown time zone", body: `{"name":"n","cron":"@daily","timezone":"Europe/Atlantis","request":` + req(z) + `}`, parts: []string{"Unknown time zone Europe/Atlantis"}},
		{name: "no name", body: scheduleBody("", "@daily", req(z)), want: "A schedule needs a name"},
		{name: "bad name", body: scheduleBody("a b", "@daily", req(z)), parts: []string{"Invalid schedule name a b"}},
		{name: "unknown field", body: `{"name":"n","crontab":"@daily","request":` + req(z) + `}`, want: "Unknown field: crontab"},
		{name: "cron not a string", body: `{"name":"n","cron":5,"request":` + req(z) + `}`, parts: []string{"Field cron must be a string"}},
		{name: "not an object", body: `[1]`, parts: []string{"A schedule is a JSON object"}},
		{name: "malformed", body: `{"name":`, parts: []string{"Malformed JSON"}},
		{name: "empty", body: ``, parts: []string{"Empty body"}},
		{name: "trailing text", body: scheduleBody("n", "@daily", req(z)) + `x`, parts: []string{"text after the schedule object"}},
		// Its request, prepared as a dry run.
		{name: "no request", body: `{"name":"n","cron":"@daily"}`, parts: []string{"needs a request"}},
		{name: "request not an object", body: scheduleBody("n", "@daily", `"seed"`), parts: []string{"The request of a schedule is a JSON object"}},
		{name: "request without layer", body: scheduleBody("n", "@daily", `{"seedRequest":{`+z+`}}`), parts: []string{"needs its layer"}},
		{name: "unknown layer", body: scheduleBody("n", "@daily", `{"layer":"nosuchlayer","seedRequest":{`+z+`}}`), want: "Unknown layer: nosuchlayer"},
		{name: "zoom above the grid", body: scheduleBody("n", "@daily", req(`"zoomStart":13,"zoomStop":14`)), want: "zoomStart 13 is above the highest zoom level 12 of grid set EPSG:4326"},
		{name: "zoomStop missing", body: scheduleBody("n", "@daily", req(`"zoomStart":1`)), want: "zoomStop is required"},
		{name: "unknown seed field", body: scheduleBody("n", "@daily", req(`"zoomstop":1,"zoomStart":0`)), want: "Unknown field: zoomstop"},
		{name: "bad type", body: scheduleBody("n", "@daily", req(`"type":"explode",`+z)), want: "Unknown type: explode"},
		{name: "bad parameter", body: scheduleBody("n", "@daily", req(`"parameters":{"entry":[{"string":["STYLES","foo"]}]},`+z)), want: "Invalid value for parameter STYLES: foo"},
		{name: "a key beside seedRequest", body: scheduleBody("n", "@daily", `{"layer":"topp:states","seedRequest":{`+z+`},"extra":1}`), parts: []string{"Unknown field of the request of a schedule: extra"}},
		{name: "no seedRequest", body: scheduleBody("n", "@daily", `{"layer":"topp:states"}`), parts: []string{"needs its seedRequest"}},
		{name: "seedRequest not an object", body: scheduleBody("n", "@daily", `{"layer":"topp:states","seedRequest":3}`), parts: []string{"seedRequest"}},
	}
	for i := range cases {
		cases[i].path = "/rest/schedules.json"
		cases[i].header = ctJSONHeader
	}
	runErrCases(t, a, "POST", cases)

	wantUnsupported(t, a.Do(t, "POST", "/rest/schedules.json", scheduleBody("n", "@daily", req(z)), "Content-Type", "text/plain"))
	wantUnsupported(t, a.Do(t, "POST", "/rest/schedules.json", scheduleBody("n", "@daily", req(z))))
	res := a.Do(t, "POST", "/rest/schedules.json", `{"name":"n","cron":"@daily","request":{"layer":"topp:states","seedRequest":{`+z+`,"name":"`+strings.Repeat("x", 300<<10)+`"}}}`, ctJSONHeader...)
	if res.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("a 300 KiB request: got %d %q, want 413", res.Status, res.Body)
	}
	// Nothing was saved, and no task recorded.
	if res := a.Do(t, "GET", "/rest/schedules.json", ""); res.Body != `{"schedules":[]}` {
		t.Errorf("after refusals: got %s, want no schedules", res.Body)
	}
	if rows := list(t, a, "/rest/seed.json"); len(rows) != 0 {
		t.Errorf("refused schedules recorded tasks: %v", rows)
	}
}
