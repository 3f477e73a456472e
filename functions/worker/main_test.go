package main

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/lambdatest"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

// TestRecordedEvents hands the SQS events of testdata/ to this function's
// bootstrap (main, as built for Lambda: its handler is
// worker.Program.HandleSQS) under the Lambda Runtime Interface Emulator, on
// fresh resources of the local AWS stack, and checks the partial batch
// failures, the stored tiles and the EMF lines of the function's log.
func TestRecordedEvents(t *testing.T) {
	r := lambdatest.NewResources(t)
	env := lambdatest.Env(t, r, nil)
	api := lambdatest.API(t, env)       // submits the seed request
	worker := lambdatest.Worker(t, env) // reads the tasks; never invoked
	fnEnv := maps.Clone(env)
	delete(fnEnv, "TILECACHE_ACCOUNTS") // WorkerFunction has none
	bootstrap := lambdatest.Bootstrap(t, "worker")
	fn := lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: bootstrap, Name: "tilecache-worker", Env: fnEnv, Timeout: time.Minute})

	// Tasks 1 (z0-1: 10 tiles) and 2 (z2: 32 tiles), both RUNNING.
	res := lambdatest.Do(t, api.Handler, "POST", "/rest/seed/demo:world.json",
		`{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2,"threadCount":2}}`, "content-type", "application/json")
	if res.StatusCode != 200 || res.Body != `{"long-array-array":[[0,10,10,1,1],[0,32,32,2,1]]}` {
		t.Fatalf("seed: %d %s", res.StatusCode, res.Body)
	}
	// The recorded events stand for the lane messages the API just sent.
	got := lambdatest.Drain(t, lambdatest.SQS(t), r.QueueURL)
	slices.Sort(got)
	if want := []string{`{"task":1,"cursor":0}`, `{"task":2,"cursor":2}`}; !slices.Equal(got, want) {
		t.Fatalf("lane messages sent: %q, want %q (the bodies of the recorded events)", got, want)
	}

	set := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, Prefix: r.Prefix, LayerID: "demo:world", Ext: "png"}
	tiles := lambdatest.Tiles(t, r)
	stored := func() []string { return storedTiles(t, tiles, set) }
	want := func(zs ...int) []string { return tileKeys(set, zs...) }
	// One lane message, as the event source delivers it (BatchSize 1); the
	// invocation's metrics are written to the function's log (stdout) as
	// EMF lines when it ends.
	lane, inv := handleEvent(t, fn, "sqs-lane.json")
	if got := batchFailures(lane); len(got) != 0 {
		t.Errorf("sqs-lane.json: batch item failures %v, want none", got)
	}
	checkTaskDone(t, worker.Tasks, 1, 10)
	checkLaneEMF(t, inv)
	if got, want := stored(), want(0, 1); !slices.Equal(got, want) {
		t.Errorf("after task 1: stored %v, want %v", got, want)
	}

	// A batch with a lane, a body that is no lane message, a lane message
	// without a valid task, and one for a task that does not exist (dropped):
	// only the two poison messages are reported, so that SQS redelivers them
	// and, after maxReceiveCount, moves them to the dead-letter queue.
	wantFailures := []string{"c5d7e9f1-3a5b-4c7d-9e1f-2a4b6c8d0e2f", "0e2f4a6b-8c0d-4e2f-a4b6-c8d0e2f4a6b8"}
	if res, _ := handleEvent(t, fn, "sqs-batch-poison.json"); !slices.Equal(batchFailures(res), wantFailures) {
		t.Errorf("sqs-batch-poison.json: batch item failures %v, want %v", batchFailures(res), wantFailures)
	}
	checkTaskDone(t, worker.Tasks, 2, 32)
	if got, want := stored(), want(0, 1, 2); !slices.Equal(got, want) {
		t.Errorf("after task 2: %d tiles stored, want %d", len(got), len(want))
	}

	// A redelivered message of a finished lane is acknowledged, not worked.
	if res, _ := handleEvent(t, fn, "sqs-lane.json"); len(batchFailures(res)) != 0 {
		t.Errorf("sqs-lane.json delivered again: batch item failures %v, want none", batchFailures(res))
	}
	checkTaskDone(t, worker.Tasks, 1, 10)

	// An invocation with less time left than the engine's safety margin
	// hands its messages back untouched: a function whose timeout is half
	// the margin (the emulator counts whole seconds).
	margin := worker.Engine.Options().SafetyMargin
	short := max((margin / 2).Truncate(time.Second), time.Second)
	if short >= margin {
		t.Fatalf("safety margin %v: no whole-second timeout below it", margin)
	}
	hurried := lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: bootstrap, Name: "tilecache-worker", Env: fnEnv, Timeout: short})
	if res, _ := handleEvent(t, hurried, "sqs-lane.json"); !slices.Equal(batchFailures(res), []string{"3f1b6f8e-2a4c-4d6e-9b1a-7c2d5e8f0a13"}) {
		t.Errorf("sqs-lane.json with %v left: batch item failures %v, want the message back", short, batchFailures(res))
	}
}

// storedTiles are the tile keys stored under set, sorted.
func storedTiles(t *testing.T, tiles *s3store.Store, set tilestore.TileSet) []string {
	t.Helper()
	var keys []string
	if err := tiles.List(t.Context(), set.Dir(), func(o tilestore.Object) error {
		if apptest.IsTileKey(o.Key) {
			keys = append(keys, o.Key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// tileKeys are the keys of every tile of set's levels zs, sorted.
func tileKeys(set tilestore.TileSet, zs ...int) []string {
	var keys []string
	for _, z := range zs {
		for x := range int64(2) << z {
			for y := range int64(1) << z {
				keys = append(keys, set.Key(z, x, y))
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// handleEvent invokes fn with the SQS event of testdata/file.
func handleEvent(t *testing.T, fn *lambdatest.RIE, file string) (events.SQSEventResponse, lambdatest.Invocation) {
	t.Helper()
	var ev events.SQSEvent
	var res events.SQSEventResponse
	inv := fn.Invoke(t, lambdatest.ReadEvent(t, filepath.Join("testdata", file), &ev))
	inv.Decode(t, &res)
	return res, inv
}

// batchFailures are the message ids res reports failed.
func batchFailures(res events.SQSEventResponse) []string {
	out := []string{}
	for _, f := range res.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

// taskGetter reads a task.
type taskGetter interface {
	Get(ctx context.Context, id int64) (task.Task, error)
}

// checkTaskDone: task id is DONE with all its total tiles.
func checkTaskDone(t *testing.T, tasks taskGetter, id, total int64) {
	t.Helper()
	tk, err := tasks.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != task.Done || tk.Done != total || tk.Total != total {
		t.Errorf("task %d: %v, %d of %d tiles; want DONE with %d", id, tk.Status, tk.Done, tk.Total, total)
	}
}

// checkLaneEMF: the invocation of task 1's lane wrote its metrics to the
// function's log as EMF lines, with their metadata.
func checkLaneEMF(t *testing.T, inv lambdatest.Invocation) {
	t.Helper()
	emfLines := map[string]map[string]any{}
	emf := inv.EMF(t)
	if len(emf) == 0 {
		t.Errorf("sqs-lane.json: no EMF line in the function's log:\n%s", strings.Join(inv.Log, "\n"))
	}
	for _, rec := range emf {
		aws, _ := rec["_aws"].(map[string]any)
		cwm, _ := aws["CloudWatchMetrics"].([]any)
		if len(cwm) != 1 || cwm[0].(map[string]any)["Namespace"] != "tilecache" || rec["Function"] != "tilecache-worker" {
			t.Fatalf("EMF line without its _aws metadata: %v", rec)
		}
		name := cwm[0].(map[string]any)["Metrics"].([]any)[0].(map[string]any)["Name"].(string)
		emfLines[name] = rec
	}
	if got := emfLines["TilesStored"]; got == nil || got["TilesStored"] != 10.0 || got["layer"] != "demo:world" {
		t.Errorf("EMF TilesStored: %v, want 10 for demo:world (task 1)", got)
	}
	if got := emfLines["MetatilesRendered"]; got == nil || got["MetatilesRendered"] != 2.0 {
		t.Errorf("EMF MetatilesRendered: %v, want 2", got)
	}
}
