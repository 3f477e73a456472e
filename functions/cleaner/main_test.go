package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/schedule"
	"tilecache/internal/task"
	"tilecache/internal/testkit/lambdatest"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

// TestRecordedEvents hands the EventBridge scheduled event of testdata/ to
// this function's bootstrap (main, as built for Lambda: its handler is
// maintenance.Program.HandleSchedule) under the Lambda Runtime Interface Emulator,
// on fresh resources of the local AWS stack: it re-enqueues a lane whose
// worker vanished and starts a pending task whose thread freed.
func TestRecordedEvents(t *testing.T) {
	r := lambdatest.NewResources(t)
	env := lambdatest.Env(t, r, map[string]string{"TILECACHE_SEED_THREADS": "2", "TILECACHE_STALE_AFTER": "2s"})
	api := lambdatest.API(t, env)             // submits the seed request
	cleaner := lambdatest.Maintenance(t, env) // reads and changes the tasks; never invoked
	fnEnv := maps.Clone(env)
	delete(fnEnv, "TILECACHE_ACCOUNTS") // CleanerFunction has none
	fn := lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: lambdatest.Bootstrap(t, "cleaner"), Name: "tilecache-CleanerFunction", Env: fnEnv})
	sqsClient := lambdatest.SQS(t)

	// Three lanes on a pool of two threads: tasks 1 and 2 RUNNING, 3 PENDING.
	res := lambdatest.Do(t, api.Handler, "POST", "/rest/seed/demo:world.json",
		`{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2,"threadCount":3}}`, "content-type", "application/json")
	if res.StatusCode != 200 {
		t.Fatalf("seed: %d %s", res.StatusCode, res.Body)
	}
	// The lane messages are lost (say, the workers died), and task 1 ends
	// without a dispatch (killed by a process that died right after).
	lambdatest.Drain(t, sqsClient, r.QueueURL)
	if _, err := cleaner.Tasks.Kill(t.Context(), 1, task.Running, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Task 2's worker died 3 s ago: its last heartbeat (a checkpoint of no
	// tiles, written with that time) is older than the 2 s stale-after.
	tk2, err := cleaner.Tasks.Get(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cleaner.Tasks.Checkpoint(t.Context(), task.Checkpoint{ID: 2, From: tk2.Cursor, To: tk2.Cursor}, time.Now().Add(-3*time.Second)); err != nil {
		t.Fatal(err)
	}

	var ev events.EventBridgeEvent
	event := lambdatest.ReadEvent(t, filepath.Join("testdata", "scheduled-event.json"), &ev)
	if ev.DetailType != "Scheduled Event" || ev.Source != "aws.events" {
		t.Fatalf("testdata/scheduled-event.json: got %q from %q", ev.DetailType, ev.Source)
	}
	sweep := func() {
		t.Helper()
		var res any
		if fn.Invoke(t, event).Decode(t, &res); res != nil {
			t.Errorf("sweep answered %v, want null", res)
		}
	}
	sweep()

	var want []string
	for _, id := range []int64{2, 3} {
		tk, err := cleaner.Tasks.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status != task.Running {
			t.Errorf("task %d: %v, want RUNNING", id, tk.Status)
		}
		want = append(want, fmt.Sprintf(`{"task":%d,"cursor":%d}`, id, tk.Cursor))
	}
	got := lambdatest.Drain(t, sqsClient, r.QueueURL)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("lane messages after the sweep: %q, want %q (task 2 re-enqueued, task 3 started)", got, want)
	}

	// A second sweep (within the 2 s stale-after) finds nothing to do: the
	// re-enqueued lane's heartbeat was refreshed.
	sweep()
	if got := lambdatest.Drain(t, sqsClient, r.QueueURL); len(got) != 0 {
		t.Errorf("second sweep sent %q, want nothing", got)
	}
}

// TestScheduledRequestOnce: two execution environments of this function
// woken by the same minute's event, with a schedule whose time came while
// none ran, submit its request once (each due time is claimed by a
// conditional write in the task table); the other invocation finds it
// claimed and does nothing more.
func TestScheduledRequestOnce(t *testing.T) {
	r := lambdatest.NewResources(t)
	env := lambdatest.Env(t, r, nil)
	store := lambdatest.Maintenance(t, env) // saves the schedule, reads the outcome; never invoked
	fnEnv := maps.Clone(env)
	delete(fnEnv, "TILECACHE_ACCOUNTS") // CleanerFunction has none
	bootstrap := lambdatest.Bootstrap(t, "cleaner")
	fns := []*lambdatest.RIE{
		lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: bootstrap, Name: "tilecache-CleanerFunction", Env: fnEnv}),
		lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: bootstrap, Name: "tilecache-CleanerFunction", Env: fnEnv}),
	}
	s, err := schedule.New("nightly", "0 3 * * *", "", "demo:world",
		[]byte(`{"seedRequest":{"zoomStart":0,"zoomStop":2,"threadCount":2}}`), time.Now().Add(-48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Backends.Schedules.CreateSchedule(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	var ev events.EventBridgeEvent
	event := lambdatest.ReadEvent(t, filepath.Join("testdata", "scheduled-event.json"), &ev)
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Go(func() {
			if inv := fn.Invoke(t, event); inv.Error != nil || string(inv.Body) != "null" {
				t.Errorf("invocation answered %s (%v), want null", inv.Body, inv.Error)
			}
		})
	}
	wg.Wait()

	got, err := store.Backends.Schedules.Schedule(t.Context(), "nightly")
	if err != nil {
		t.Fatal(err)
	}
	if got.Last == nil || got.Last.Outcome != schedule.Started || !got.Last.Due.Equal(s.Next) || len(got.Last.Tasks) != 2 || !got.Next.After(time.Now()) {
		t.Fatalf("after the invocations: last run %+v, next %v; want the run due %v started, the next in the future", got.Last, got.Next, s.Next)
	}
	tasks, err := store.Tasks.List(t.Context(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, tk := range tasks {
		ids = append(ids, tk.ID)
	}
	if !slices.Equal(ids, got.Last.Tasks) {
		t.Errorf("tasks in the table %v, want only the run's %v", ids, got.Last.Tasks)
	}
	started := 0
	for _, fn := range fns {
		for _, line := range fn.Log() {
			if strings.Contains(line, `"msg":"scheduled request started"`) {
				started++
			}
		}
	}
	if started != 1 {
		t.Errorf("%d invocations logged a start, want 1", started)
	}
}
