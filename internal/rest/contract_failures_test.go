package rest_test

// An extension of this project: GET /rest/failures.json, why tasks
// failed, kept after they leave the status lists.

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/testenv"
)

type failuresDoc struct {
	Failures []struct {
		ID     int64  `json:"id"`
		Job    int64  `json:"job"`
		Layer  string `json:"layer"`
		Type   string `json:"type"`
		Reason string `json:"reason"`
		At     string `json:"at"`
		Done   int64  `json:"done"`
		Total  int64  `json:"total"`
	} `json:"failures"`
	KeptHours int `json:"keptHours"`
}

func getFailures(t testing.TB, a *apptest.App, query string) failuresDoc {
	t.Helper()
	res := a.Do(t, "GET", "/rest/failures.json"+query, "")
	wantOK(t, res, ctJSON)
	var d failuresDoc
	if err := json.Unmarshal([]byte(res.Body), &d); err != nil {
		t.Fatalf("failures %q: %v", res.Body, err)
	}
	return d
}

func TestFailureReasons(t *testing.T) {
	a := apptest.Start(t, apptest.Options{SeedThreads: 4})
	if d := getFailures(t, a, ""); len(d.Failures) != 0 || d.KeptHours != 24 {
		t.Fatalf("before any failure: got %+v, want none kept 24 hours", d)
	}
	// Retries off (the default): the first failed tile aborts its task.
	first := seedJSON(t, a, "broken:world", `{"seedRequest":{"zoomStart":2,"zoomStop":2}}`)
	// A budget of 3 failures shared by two lanes: the job aborts, both
	// tasks with it.
	budget := seedJSON(t, a, "broken:world", `{"seedRequest":{"zoomStart":2,"zoomStop":2,"threadCount":2,"tileFailureRetryCount":0,"totalFailuresBeforeAborting":3}}`)
	// A task killed by request and one that succeeds record nothing.
	killed := seedJSON(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":5}}`)
	done := seedJSON(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":0}}`)
	wantKill := a.Do(t, "POST", "/rest/seed/slow:world", "kill_all=all", "Content-Type", ctForm)
	wantOK(t, wantKill, ctHTML)
	ids := []int64{first[0][3], budget[0][3], budget[1][3]}
	testenv.Eventually(t, 20*time.Second, "the broken tasks to abort", func() bool {
		for _, id := range append(ids, done[0][3]) {
			tk, err := a.Local.Tasks.Get(t.Context(), id)
			if err != nil || tk.Status.Active() {
				return false
			}
		}
		return true
	})
	testenv.Eventually(t, 5*time.Second, "three failures recorded", func() bool { return len(getFailures(t, a, "").Failures) == 3 })
	// Gone from the status lists (contract §5.4) but still kept.
	testenv.Eventually(t, 12*time.Second, "the finished tasks to leave the status list", func() bool { return len(list(t, a, "/rest/seed.json")) == 0 })
	d := getFailures(t, a, "")
	got := map[int64]int{}
	for i, f := range d.Failures {
		got[f.ID] = i
		if f.Layer != "broken:world" || f.Type != "SEED" || f.Total <= 0 || f.Done > f.Total {
			t.Errorf("failure %+v: want a SEED task of broken:world with its counts", f)
		}
		if at, err := time.Parse(time.RFC3339Nano, f.At); err != nil || time.Since(at) > time.Minute || time.Since(at) < 0 {
			t.Errorf("failure %d at %q: want a time of the last minute", f.ID, f.At)
		}
		if i > 0 && d.Failures[i-1].ID < f.ID {
			t.Errorf("failures %d then %d: want the newest task first", d.Failures[i-1].ID, f.ID)
		}
		if len(f.Reason) > task.MaxFailureReason {
			t.Errorf("reason of %d is %d bytes, want at most %d", f.ID, len(f.Reason), task.MaxFailureReason)
		}
	}
	for _, id := range ids {
		if _, ok := got[id]; !ok {
			t.Errorf("failures %+v: want one for task %d", d.Failures, id)
		}
	}
	if len(d.Failures) == 3 {
		f := d.Failures[got[first[0][3]]]
		if !strings.HasPrefix(f.Reason, "a tile failed and retries are off (retryCount -1): tiles z2 ") || !strings.Contains(f.Reason, "fail") {
			t.Errorf("reason of the retries-off task: %q", f.Reason)
		}
		for _, r := range budget {
			f := d.Failures[got[r[3]]]
			// Two lanes fail at once: the count may pass the budget.
			re := regexp.MustCompile(`^job ` + strconv.FormatInt(budget[0][3], 10) + ` aborted: [3-9] tile failures reached its budget of 3 \(maxFailureCount\); last: tiles z2 .*failZooms`)
			if f.Job != budget[0][3] || !re.MatchString(f.Reason) {
				t.Errorf("reason of budget task %d: %+v", r[3], f)
			}
		}
	}
	if _, ok := got[killed[0][3]]; ok {
		t.Errorf("the task killed by request has a failure: %+v", d.Failures)
	}
	// limit and layer.
	if d := getFailures(t, a, "?limit=1"); len(d.Failures) != 1 || d.Failures[0].ID != budget[1][3] {
		t.Errorf("limit=1: got %+v, want the newest, task %d", d.Failures, budget[1][3])
	}
	if d := getFailures(t, a, "?layer=demo:world"); len(d.Failures) != 0 {
		t.Errorf("layer=demo:world: got %+v, want none", d.Failures)
	}
	if d := getFailures(t, a, "?layer=broken:world&limit=2"); len(d.Failures) != 2 {
		t.Errorf("layer=broken:world&limit=2: got %+v, want 2", d.Failures)
	}
	wantBadRequest(t, a.Do(t, "GET", "/rest/failures.json?limit=0", ""), "Bad limit '0'")
	wantBadRequest(t, a.Do(t, "GET", "/rest/failures.json?limit=x", ""), "Bad limit 'x'")
	wantBadRequest(t, a.Do(t, "GET", "/rest/failures.json?limit=1001", ""), "Bad limit '1001'")
	wantBadRequest(t, a.Do(t, "GET", "/rest/failures.json?layer=nope", ""), "Unknown layer: nope")
	if res := a.Do(t, "POST", "/rest/failures.json", ""); res.Status != 405 {
		t.Errorf("POST: got %d, want 405", res.Status)
	}
}
