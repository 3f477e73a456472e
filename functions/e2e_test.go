package functions_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
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

type row = [5]int64

func decodeRows(t testing.TB, body string) []row {
	t.Helper()
	var doc struct {
		Rows []row `json:"long-array-array"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("decode task list %q: %v", body, err)
	}
	return doc.Rows
}

// TestServerlessEndToEnd runs the whole serverless path on the local AWS
// stack, with the functions' real bootstraps under the Lambda Runtime
// Interface Emulator: a seed request enters ApiFunction as an API Gateway
// (payload 2.0) event; lane messages are received from the queue and
// handed to WorkerFunction as SQS events, acknowledged unless reported as
// batch item failures, until the tasks finish; every tile of the request
// is then in the bucket, the worker's EMF lines count them, ApiFunction
// lists the finished tasks, and one tile goes back out through the API
// adapter as a binary (base64) response.
func TestServerlessEndToEnd(t *testing.T) {
	r := lambdatest.NewResources(t)
	// A pool of 2 for 3 lanes (the third starts when a thread frees), and
	// slices of 50 ms so that lanes (about 200 ms of work each here) continue in new messages.
	settings := map[string]string{"TILECACHE_SEED_THREADS": "2", "TILECACHE_LANE_SLICE": "50ms"}
	apiFn := lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: lambdatest.Bootstrap(t, "api"), Name: "tilecache-ApiFunction",
		Env: functionEnv(t, r, "ApiFunction", settings)})
	workerFn := lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: lambdatest.Bootstrap(t, "worker"), Name: "tilecache-WorkerFunction",
		Env: functionEnv(t, r, "WorkerFunction", settings), Timeout: time.Minute})
	worker := lambdatest.Worker(t, lambdatest.Env(t, r, settings)) // reads the tasks and tiles; never invoked

	ev := lambdatest.V2Request("POST", "/rest/seed/demo:world.json",
		`{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":4,"format":"image/png","threadCount":3}}`,
		false, "authorization", lambdatest.BasicAuth(), "content-type", "application/json")
	var res events.APIGatewayV2HTTPResponse
	apiFn.InvokeJSON(t, ev, &res)
	if res.StatusCode != 200 {
		t.Fatalf("seed: %d %s", res.StatusCode, res.Body)
	}
	rows := decodeRows(t, res.Body)
	const want = 2 + 8 + 32 + 128 + 512 // EPSG:4326 z0-4
	var total int64
	for _, rw := range rows {
		total += rw[1]
	}
	if len(rows) != 3 || total != want {
		t.Fatalf("seed: tasks %v, want 3 holding %d tiles", rows, want)
	}

	src := &lambdatest.EventSource{Client: lambdatest.SQS(t), QueueURL: r.QueueURL, QueueArn: r.QueueArn(), Timeout: time.Minute}
	final := make([]task.Task, len(rows))
	start := time.Now()
	src.RunUntil(t, workerFn.SQSHandler(), 50*time.Second, func() bool {
		for i, rw := range rows {
			tk, err := worker.Tasks.Get(t.Context(), rw[3])
			if err != nil {
				t.Fatal(err)
			}
			if final[i] = tk; tk.Status.Active() {
				return false
			}
		}
		return true
	})
	t.Logf("%d tiles in %v: %d worker invocations, %d batch item failures", want, time.Since(start).Round(time.Millisecond), src.Invocations, src.Failures)
	var done int64
	for _, tk := range final {
		if tk.Status != task.Done || tk.Done != tk.Total {
			t.Errorf("task %d: %v with %d of %d tiles, want DONE", tk.ID, tk.Status, tk.Done, tk.Total)
		}
		done += tk.Done
	}
	if done != want {
		t.Errorf("tasks processed %d tiles, want %d", done, want)
	}
	if src.Invocations <= len(rows) || src.Failures != 0 {
		t.Errorf("%d invocations with %d failures: want lanes continued in new messages (slice 50 ms) and no failure", src.Invocations, src.Failures)
	}
	// The worker's metrics, as CloudWatch would read them from its log.
	var stored float64
	for _, rec := range lambdatest.EMF(t, workerFn.Log()) {
		if n, ok := rec["TilesStored"].(float64); ok && rec["Function"] == "tilecache-WorkerFunction" {
			stored += n
		}
	}
	if stored != want {
		t.Errorf("EMF TilesStored of the worker's invocations add up to %v, want %d", stored, want)
	}

	// Every tile, and nothing else, is in the bucket.
	set := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, Prefix: r.Prefix, LayerID: "demo:world", Ext: "png"}
	tiles := lambdatest.Tiles(t, r)
	checkBucketHolds(t, tiles, r.Prefix, set, 5)
	// The finished tasks, as the API lists them within the retention time.
	var list events.APIGatewayV2HTTPResponse
	apiFn.InvokeJSON(t, lambdatest.V2Request("GET", "/rest/seed/demo:world.json", "", false, "authorization", lambdatest.BasicAuth()), &list)
	for _, rw := range decodeRows(t, list.Body) {
		if rw[4] != int64(task.Done) || rw[0] != rw[1] || rw[2] != 0 {
			t.Errorf("task list after the run: %v, want only DONE tasks", list.Body)
		}
	}
	if rest := lambdatest.Drain(t, src.Client, r.QueueURL); len(rest) != 0 {
		t.Errorf("lane messages left in the queue: %q", rest)
	}

	t.Run("binary response through httpadapter.NewV2", func(t *testing.T) {
		checkBinaryResponse(t, worker.Tiles.Get, tiles.Get, set.Key(2, 3, 1))
	})
}

// checkBucketHolds: the bucket under prefix holds every tile of set's
// first levels, and no other tile.
func checkBucketHolds(t *testing.T, tiles *s3store.Store, prefix string, set tilestore.TileSet, levels int) {
	t.Helper()
	var wantKeys, gotKeys []string
	for z := range levels {
		for x := range int64(2) << z {
			for y := range int64(1) << z {
				wantKeys = append(wantKeys, set.Key(z, x, y))
			}
		}
	}
	if err := tiles.List(t.Context(), prefix+"/", func(o tilestore.Object) error {
		if apptest.IsTileKey(o.Key) {
			gotKeys = append(gotKeys, o.Key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(wantKeys)
	slices.Sort(gotKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("bucket holds %d keys under %s/, want exactly the %d tiles of the request", len(gotKeys), prefix, len(wantKeys))
	}
}

// tileGetter reads a stored tile.
type tileGetter func(ctx context.Context, key string) ([]byte, tilestore.Meta, bool, error)

// checkBinaryResponse serves the tile key, read by serve, through the
// Lambda HTTP adapter: the answer is base64-encoded and decodes to the
// tile as stored (read by stored).
func checkBinaryResponse(t *testing.T, serve, stored tileGetter, key string) {
	// The REST contract has no binary answer, so a few lines serve a
	// stored tile to show how the adapter carries one.
	tileServer := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		data, meta, found, err := serve(req.Context(), strings.TrimPrefix(req.URL.Path, "/tiles/"))
		if err != nil || !found {
			http.Error(w, "no such tile", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", meta.ContentType)
		w.Header().Set("Cache-Control", meta.CacheControl)
		w.Write(data)
	})
	want, _, _, err := stored(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	res := lambdatest.Invoke(t, tileServer, lambdatest.V2Request("GET", "/tiles/"+key, "", false))
	if res.StatusCode != 200 || res.Headers["Content-Type"] != "image/png" || res.Headers["Cache-Control"] != "public, max-age=86400" {
		t.Fatalf("GET tile: %d %v", res.StatusCode, res.Headers)
	}
	if !res.IsBase64Encoded {
		t.Fatalf("a PNG answer must come back base64-encoded (IsBase64Encoded)")
	}
	body, err := base64.StdEncoding.DecodeString(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, want) || !bytes.HasPrefix(body, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("decoded body (%d bytes) is not the stored PNG (%d bytes)", len(body), len(want))
	}
}
