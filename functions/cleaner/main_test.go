package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/lambdatest"
	"tilecache/internal/task"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

// TestRecordedEvents hands the EventBridge scheduled event of testdata/ to
// this function's bootstrap (main, as built for Lambda: its handler is
// app.Program.HandleSchedule) under the Lambda Runtime Interface Emulator,
// on fresh resources of the local AWS stack: it re-enqueues a lane whose
// worker vanished and starts a pending task whose thread freed.
func TestRecordedEvents(t *testing.T) {
	r := lambdatest.NewResources(t)
	env := lambdatest.Env(t, r, map[string]string{"TILECACHE_SEED_THREADS": "2", "TILECACHE_STALE_AFTER": "2s"})
	api := lambdatest.API(t, env)        // submits the seed request
	cleaner := lambdatest.Worker(t, env) // reads and changes the tasks; never invoked
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
	time.Sleep(2100 * time.Millisecond) // task 2's heartbeat goes stale

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
