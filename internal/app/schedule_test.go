package app_test

// Schedules of saved requests, end to end: saved through the REST
// interface, fired through the engine's Submit (the path of POST
// /rest/seed), on the embedded backends or, with
// TILECACHE_TEST_BACKEND=aws, on DynamoDB, S3 and SQS. The due times are
// the tests' own: they call the program's ticker with the "now" they want
// (Program.Schedules.Tick), so no test waits for a minute to pass.

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/app/maintenance"
	"tilecache/internal/schedule"
	"tilecache/internal/testkit/testenv"
)

// scheduleDoc is what GET /rest/schedules/{name}.json shows.
type scheduleDoc struct {
	NextRun   *time.Time `json:"nextRun"`
	LastRun   *runDoc    `json:"lastRun"`
	LastStart *runDoc    `json:"lastStarted"`
}

type runDoc struct {
	Due     time.Time `json:"due"`
	Outcome string    `json:"outcome"`
	Job     int64     `json:"job"`
	Tasks   []int64   `json:"tasks"`
	Reason  string    `json:"reason"`
}

func saveSchedule(t testing.TB, a *apptest.App, name, cron, request string) scheduleDoc {
	t.Helper()
	res := a.Do(t, "POST", "/rest/schedules.json", `{"name":"`+name+`","cron":"`+cron+`","request":`+request+`}`, "Content-Type", "application/json")
	if res.Status != http.StatusCreated {
		t.Fatalf("POST schedule %s: got %d %q, want 201", name, res.Status, res.Body)
	}
	return getSchedule(t, a, name)
}

func getSchedule(t testing.TB, a *apptest.App, name string) scheduleDoc {
	t.Helper()
	res := a.Do(t, "GET", "/rest/schedules/"+name+".json", "")
	if res.Status != http.StatusOK {
		t.Fatalf("GET schedule %s: got %d %q", name, res.Status, res.Body)
	}
	var d scheduleDoc
	if err := json.Unmarshal([]byte(res.Body), &d); err != nil {
		t.Fatalf("decode schedule %q: %v", res.Body, err)
	}
	return d
}

// tick fires the app's due schedules at now.
func tick(t testing.TB, a *apptest.App, now time.Time) []schedule.Run {
	t.Helper()
	runs, err := a.Local.Schedules.Tick(t.Context(), now)
	if err != nil {
		t.Fatalf("Tick(%v): %v", now, err)
	}
	return runs
}

// A yearly cron: the program's own ticker (every 20 s, on the clock) never
// finds it due while a test runs; the tests fire it at its due times.
const yearly = "0 3 1 1 *"

func TestScheduleFiresSkipsWhileRunningFiresAgain(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{SeedThreads: 1})
	// 42 metatiles of 40 ms: a job that runs for a couple of seconds.
	s := saveSchedule(t, a, "slow", yearly, `{"layer":"slow:world","seedRequest":{"zoomStart":0,"zoomStop":2}}`)
	due := *s.NextRun

	runs := tick(t, a, due)
	if len(runs) != 1 || runs[0].Outcome != schedule.Started || len(runs[0].Tasks) != 1 {
		t.Fatalf("at its time: got %+v, want one started run", runs)
	}
	first := runs[0]
	if got := ids(listRows(t, a, "/rest/seed/slow:world.json")); !slices.Equal(got, first.Tasks) {
		t.Fatalf("listed tasks %v, want the run's %v", got, first.Tasks)
	}
	s = getSchedule(t, a, "slow")
	if s.LastRun == nil || s.LastRun.Outcome != "started" || s.LastRun.Job != first.Job || !slices.Equal(s.LastRun.Tasks, first.Tasks) ||
		s.NextRun == nil || !s.NextRun.Equal(due.AddDate(1, 0, 0)) {
		t.Fatalf("after the run: got %+v, want it started with job %d, next a year on", s, first.Job)
	}

	// Due again while the job works: skipped, saying why.
	runs = tick(t, a, *s.NextRun)
	if len(runs) != 1 || runs[0].Outcome != schedule.Skipped || !strings.Contains(runs[0].Reason, fmt.Sprintf("Job %d of the previous run", first.Job)) {
		t.Fatalf("while job %d goes: got %+v, want a skipped run naming it", first.Job, runs)
	}
	s = getSchedule(t, a, "slow")
	if s.LastRun.Outcome != "skipped" || s.LastRun.Reason != runs[0].Reason || s.LastStart == nil || s.LastStart.Job != first.Job {
		t.Fatalf("after the skip: got last %+v, started %+v", s.LastRun, s.LastStart)
	}
	if got := ids(listRows(t, a, "/rest/seed.json")); !slices.Equal(got, first.Tasks) {
		t.Fatalf("listed tasks %v after the skip, want only the first run's %v", got, first.Tasks)
	}

	// Once the job is done, the next due time starts it again.
	for _, tk := range waitFinished(t, a, first.Tasks, time.Minute) {
		if tk.Done != tk.Total {
			t.Fatalf("task %d: %d of %d tiles", tk.ID, tk.Done, tk.Total)
		}
	}
	runs = tick(t, a, *s.NextRun)
	if len(runs) != 1 || runs[0].Outcome != schedule.Started || runs[0].Job <= first.Job {
		t.Fatalf("after the job finished: got %+v, want a new job started", runs)
	}
	waitFinished(t, a, runs[0].Tasks, time.Minute)
}

// TestScheduleTickersFireOnce: two tickers of the same store (as two
// processes, or two cleaner invocations) waking at the same due time start
// the request once.
func TestScheduleTickersFireOnce(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	s := saveSchedule(t, a, "world", yearly, `{"layer":"demo:world","seedRequest":{"zoomStart":0,"zoomStop":1,"threadCount":2}}`)
	other := schedule.NewTicker(a.Local.Backends.Schedules, a.Local.Tasks, maintenance.ScheduledRequests{Submitter: a.Local.Engine.Control}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		runs []schedule.Run
	)
	for _, tk := range []*schedule.Ticker{a.Local.Schedules, other, a.Local.Schedules, other} {
		wg.Go(func() {
			r, err := tk.Tick(t.Context(), *s.NextRun)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			runs = append(runs, r...)
		})
	}
	wg.Wait()
	if len(runs) != 1 || runs[0].Outcome != schedule.Started || len(runs[0].Tasks) != 2 {
		t.Fatalf("four tickers at once: got runs %+v, want one started run of 2 tasks", runs)
	}
	waitFinished(t, a, runs[0].Tasks, time.Minute)
	if tasks, _ := a.Local.Tasks.List(t.Context(), time.Time{}); len(tasks) != 2 {
		t.Errorf("got %d tasks in the store, want the one run's 2", len(tasks))
	}
}

// TestScheduleMissedRunsFireOnceOnWake: a schedule whose due times passed
// while no process was up fires once when `tilecache serve` starts (its
// ticker looks at once), not once per missed slot.
func TestScheduleMissedRunsFireOnceOnWake(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := apptest.Start(t, apptest.Options{DataDir: dir})
	// An hourly schedule saved five hours ago, its slots missed since.
	past := time.Now().Add(-5 * time.Hour)
	s, err := schedule.New("hourly", "@hourly", "", "demo:world", json.RawMessage(`{"seedRequest":{"zoomStart":0,"zoomStop":1}}`), past)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Local.Backends.Schedules.CreateSchedule(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	a.Stop()

	b := apptest.Start(t, apptest.Options{DataDir: dir})
	var got scheduleDoc
	testenv.Eventually(t, 30*time.Second, "the missed run", func() bool {
		got = getSchedule(t, b, "hourly")
		return got.LastRun != nil && got.LastRun.Outcome != "starting"
	})
	if got.LastRun.Outcome != "started" || !got.LastRun.Due.Equal(s.Next) || got.NextRun == nil || !got.NextRun.After(time.Now()) {
		t.Fatalf("after the wake-up: got last %+v, next %v; want a run due %v started and the next in the future", got.LastRun, got.NextRun, s.Next)
	}
	waitFinished(t, b, got.LastRun.Tasks, time.Minute)
	if tasks, _ := b.Local.Tasks.List(t.Context(), time.Time{}); len(tasks) != 1 {
		t.Errorf("got %d tasks, want the one run's", len(tasks))
	}
}
