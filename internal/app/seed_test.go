package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/grid"
	"tilecache/internal/queue"
	"tilecache/internal/source"
	"tilecache/internal/source/testpattern"
	"tilecache/internal/task"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
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

func seedReq(t testing.TB, a *apptest.App, layer, body string) []row {
	t.Helper()
	res := a.Do(t, "POST", "/rest/seed/"+layer+".json", body)
	if res.Status != 200 {
		t.Fatalf("POST seed %s: got %d %q, want 200", body, res.Status, res.Body)
	}
	return decodeRows(t, res.Body)
}

func listRows(t testing.TB, a *apptest.App, path string) []row {
	t.Helper()
	res := a.Do(t, "GET", path, "")
	if res.Status != 200 {
		t.Fatalf("GET %s: got %d %q", path, res.Status, res.Body)
	}
	return decodeRows(t, res.Body)
}

// waitFinished waits until the tasks are absent from the list and returns
// their final records from the task store.
func waitFinished(t testing.TB, a *apptest.App, ids []int64, timeout time.Duration) []task.Task {
	t.Helper()
	testenv.Eventually(t, timeout, fmt.Sprintf("tasks %v to finish", ids), func() bool {
		for _, r := range listRows(t, a, "/rest/seed.json") {
			if slices.Contains(ids, r[3]) && (r[4] == 0 || r[4] == 1) {
				return false
			}
		}
		return true
	})
	out := make([]task.Task, len(ids))
	for i, id := range ids {
		tk, err := a.Local.Tasks.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = tk
	}
	return out
}

func ids(rows []row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r[3]
	}
	return out
}

func sumTotals(rows []row) int64 {
	var n int64
	for _, r := range rows {
		n += r[1]
	}
	return n
}

// keys lists the stored tiles' keys under prefix.
func keys(t testing.TB, a *apptest.App, prefix string) []string {
	t.Helper()
	return a.TileKeys(t, prefix)
}

// expectKeys enumerates, independently of the engine, the keys of every
// tile of a whole-world EPSG:4326 level range.
func expectKeys(prefix string, z0, z1 int, ext string) []string {
	var out []string
	for z := z0; z <= z1; z++ {
		for x := range int64(2) << z {
			for y := range int64(1) << z {
				out = append(out, fmt.Sprintf("%s%d/%d/%d.%s", prefix, z, x, y, ext))
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestRequestTotals(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{SeedThreads: 1})
	tests := []struct {
		name, body string
		want       int64
	}{
		{"contract 10.2 quarter", `{"seedRequest":{"gridSetId":"EPSG:4326","bounds":{"coords":{"double":[-180,-90,0,0]}},"zoomStart":12,"zoomStop":12,"threadCount":3}}`, 8388608},
		{"contract 10.2 whole level", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":12,"zoomStop":12,"threadCount":7}}`, 33554432},
		{"900913 z0-5", `{"seedRequest":{"srs":{"number":3857},"zoomStart":0,"zoomStop":5,"type":"truncate"}}`, 1 + 4 + 16 + 64 + 256 + 1024},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := seedReq(t, a, "demo:world", tt.body)
			if got := sumTotals(rows); got != tt.want {
				t.Errorf("got total %d, want %d (rows %v)", got, tt.want, rows)
			}
			for i, r := range rows {
				if r[0] != 0 || r[2] != r[1] || r[4] < 0 || r[4] > 1 {
					t.Errorf("row %d = %v: want a fresh PENDING or RUNNING task", i, r)
				}
				if i > 0 && r[3] != rows[i-1][3]+1 {
					t.Errorf("ids not consecutive: %v", rows)
				}
			}
			res := a.Do(t, "POST", "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded")
			if res.Status != 200 {
				t.Fatalf("kill: got %d %q", res.Status, res.Body)
			}
		})
	}
}

func TestSmallSeedEndToEnd(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{SeedThreads: 4})
	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2,"format":"image/png","threadCount":2}}`)
	if len(rows) != 2 || sumTotals(rows) != 42 {
		t.Fatalf("got rows %v, want 2 tasks holding 42 tiles", rows)
	}
	// Progress is visible while the lanes work.
	testenv.Eventually(t, 10*time.Second, "visible progress", func() bool {
		for _, r := range listRows(t, a, "/rest/seed/slow:world.json") {
			if r[4] == 1 && r[0] > 0 && r[0] < r[1] && r[2] == r[1]-r[0] {
				return true
			}
		}
		return false
	})
	// DONE is listed at most briefly, then the tasks are gone.
	sawDone := false
	testenv.Eventually(t, 15*time.Second, "tasks to leave the list", func() bool {
		rows := listRows(t, a, "/rest/seed/slow:world.json")
		for _, r := range rows {
			if r[4] == 2 {
				sawDone = true
				if r[0] != r[1] || r[2] != 0 {
					t.Errorf("DONE row %v: want all tiles processed", r)
				}
			}
		}
		return len(rows) == 0
	})
	if !sawDone {
		t.Log("finished tasks left the list before a poll saw them DONE")
	}
	for _, tk := range waitFinished(t, a, ids(rows), time.Second) {
		if tk.Status != task.Done || tk.Done != tk.Total {
			t.Errorf("task %d: got %s with %d/%d, want DONE with all tiles", tk.ID, tk.Status, tk.Done, tk.Total)
		}
	}
	got := keys(t, a, "slow:world/")
	want := expectKeys("slow:world/EPSG:4326/png/default/", 0, 2, "png")
	if !slices.Equal(got, want) {
		t.Fatalf("stored keys:\ngot  %v\nwant %v", got, want)
	}
	// Every tile is the test pattern of its own position.
	src, err := testpattern.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := grid.Builtin("EPSG:4326")
	for _, k := range []string{"slow:world/EPSG:4326/png/default/2/7/3.png", "slow:world/EPSG:4326/png/default/0/1/0.png"} {
		var z int
		var x, y int64
		fmt.Sscanf(strings.TrimPrefix(k, "slow:world/EPSG:4326/png/default/"), "%d/%d/%d.png", &z, &x, &y)
		want, err := src.Tile(source.Request{Layer: "slow:world", GridSet: g, Z: z, Format: "image/png"}, x, y)
		if err != nil {
			t.Fatal(err)
		}
		data, meta, found := a.Get(t, k)
		if !found || !bytes.Equal(data, want) || meta.ContentType != "image/png" {
			t.Errorf("%s: found %v, %d bytes, type %q; want the test pattern of %d/%d/%d", k, found, len(data), meta.ContentType, z, x, y)
		}
	}
}

func TestSeedSkipsReseedOverwrites(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	body := func(typ string) string {
		return `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":1,"zoomStop":1,"type":"` + typ + `"}}`
	}
	waitFinished(t, a, ids(seedReq(t, a, "demo:world", body("seed"))), 10*time.Second)
	key := "demo:world/EPSG:4326/png/default/1/2/1.png"
	orig, meta, found := a.Get(t, key)
	if !found {
		t.Fatalf("%s not stored", key)
	}
	if meta.CacheControl != "public, max-age=60" {
		t.Errorf("got Cache-Control %q, want the layer's", meta.CacheControl)
	}
	a.Put(t, key, []byte("stale"), meta)
	// seed finds the metatile's tile present and leaves it alone.
	waitFinished(t, a, ids(seedReq(t, a, "demo:world", body("seed"))), 10*time.Second)
	if got, _, _ := a.Get(t, key); string(got) != "stale" {
		t.Fatalf("seed rewrote an existing tile: got %d bytes", len(got))
	}
	// reseed renders again and overwrites.
	tasks := waitFinished(t, a, ids(seedReq(t, a, "demo:world", body("ReSeed"))), 10*time.Second)
	if got, _, _ := a.Get(t, key); !bytes.Equal(got, orig) {
		t.Fatalf("reseed did not overwrite: got %q", got)
	}
	if tasks[0].Type != task.Reseed || tasks[0].Status != task.Done || tasks[0].Done != 8 {
		t.Fatalf("got %+v, want a DONE reseed of 8 tiles", tasks[0])
	}
}

func TestTruncateRemovesExactlyItsRange(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	for _, body := range []string{
		`{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":2,"zoomStop":4,"format":"image/png","threadCount":2}}`,
		`{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":3,"zoomStop":3,"format":"image/jpeg","threadCount":2}}`,
	} {
		waitFinished(t, a, ids(seedReq(t, a, "demo:world", body)), 60*time.Second)
	}
	before := keys(t, a, "demo:world/")
	if want := 32 + 128 + 512 + 128; len(before) != want {
		t.Fatalf("seeded %d tiles, want %d", len(before), want)
	}
	// Truncate png z3-4 over a box in the north-east quarter.
	rows := seedReq(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","bounds":{"coords":{"double":[10,5,100,60]}},
		"zoomStart":3,"zoomStop":4,"format":"image/png","type":"truncate","threadCount":8}}`)
	if len(rows) != 1 {
		t.Fatalf("truncate created %d tasks, want 1", len(rows))
	}
	tasks := waitFinished(t, a, ids(rows), 10*time.Second)
	// The expected range, computed here from contract §10.2: tile size at z is
	// 180/2^z degrees. The task processes the range widened to 4×4
	// metatiles and clipped to the grid (its total), and deletes the
	// range's tiles alone.
	removed := map[string]bool{}
	var positions int64
	for z := 3; z <= 4; z++ {
		size := 180 / math.Pow(2, float64(z))
		cols, rows := int64(2)<<z, int64(1)<<z
		x0, x1 := int64(math.Floor((10+180)/size)), int64(math.Ceil((100+180)/size))-1
		y0, y1 := int64(math.Floor((5+90)/size)), int64(math.Ceil((60+90)/size))-1
		for x := x0; x <= x1; x++ {
			for y := y0; y <= y1; y++ {
				removed[fmt.Sprintf("demo:world/EPSG:4326/png/default/%d/%d/%d.png", z, x, y)] = true
			}
		}
		x0, y0 = x0-x0%4, y0-y0%4
		x1, y1 = min(x1-x1%4+3, cols-1), min(y1-y1%4+3, rows-1)
		positions += (x1 - x0 + 1) * (y1 - y0 + 1)
	}
	if tasks[0].Total != positions || tasks[0].Done != positions || tasks[0].Status != task.Done {
		t.Errorf("got task %+v, want DONE with %d positions", tasks[0], positions)
	}
	after := keys(t, a, "demo:world/")
	var want []string
	for _, k := range before {
		if !removed[k] {
			want = append(want, k)
		}
	}
	if !slices.Equal(after, want) {
		t.Fatalf("after truncate: got %d keys, want %d (removed %d)", len(after), len(want), len(removed))
	}
}

func TestPoolOfTwoWithFiveTasks(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	// z0-3 of the slow layer: 170 metatiles of 1 tile, 34 per task, 40 ms each.
	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":5}}`)
	if len(rows) != 5 || sumTotals(rows) != 170 {
		t.Fatalf("got %v, want 5 tasks holding 170 tiles", rows)
	}
	var status []int64
	for _, r := range listRows(t, a, "/rest/seed.json") {
		status = append(status, r[4])
	}
	if !slices.Equal(status, []int64{1, 1, 0, 0, 0}) {
		t.Fatalf("got statuses %v, want the two oldest RUNNING and three PENDING", status)
	}
	// As threads free, pending tasks start, never more than two at once.
	seenRunning := map[int64]bool{}
	testenv.Eventually(t, 30*time.Second, "all five to run", func() bool {
		running := 0
		for _, r := range listRows(t, a, "/rest/seed.json") {
			if r[4] == 1 {
				running++
				seenRunning[r[3]] = true
			}
		}
		if running > 2 {
			t.Fatalf("%d tasks RUNNING with a pool of 2", running)
		}
		return len(seenRunning) == 5
	})
	for _, tk := range waitFinished(t, a, ids(rows), 30*time.Second) {
		if tk.Status != task.Done || tk.Done != tk.Total {
			t.Errorf("task %d: got %s %d/%d, want DONE", tk.ID, tk.Status, tk.Done, tk.Total)
		}
	}
	if got := len(keys(t, a, "slow:world/")); got != 170 {
		t.Errorf("got %d tiles, want 170", got)
	}
}

func kill(t testing.TB, a *apptest.App, path, code string) string {
	t.Helper()
	res := a.Do(t, "POST", path, "kill_all="+code, "Content-Type", "application/x-www-form-urlencoded")
	if res.Status != 200 || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("kill %s %s: got %d %q %q", path, code, res.Status, res.Header.Get("Content-Type"), res.Body)
	}
	return res.Body
}

func TestKill(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	statuses := func(path string) map[int64]int64 {
		out := map[int64]int64{}
		for _, r := range listRows(t, a, path) {
			out[r[3]] = r[4]
		}
		return out
	}
	slow := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":5,"threadCount":3}}`)  // 1,2 run; 3 pends
	demo := seedReq(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":12,"threadCount":2}}`) // pend
	s1, s3, d1 := slow[0][3], slow[2][3], demo[0][3]

	// kill pending of one layer: only slow's pending task goes.
	page := kill(t, a, "/rest/seed/slow:world", "pending")
	if !strings.Contains(page, fmt.Sprintf("<li>[%d: slow:world, SEED, PENDING]</li>", s3)) || !strings.Contains(page, `<a href="./slow:world">Go back</a>`) {
		t.Errorf("kill page does not list task %d: %s", s3, page)
	}
	st := statuses("/rest/seed.json")
	if st[s3] == 0 || st[s3] == 1 || st[s1] != 1 || st[d1] != 0 {
		t.Fatalf("after kill pending of slow:world: got %v", st)
	}
	// kill running (old spelling 1) everywhere: slow's running tasks stop,
	// demo's pending tasks start on the freed threads.
	page = kill(t, a, "/rest/seed", "1")
	if !strings.Contains(page, fmt.Sprintf("[%d: slow:world, SEED, RUNNING]", s1)) || strings.Contains(page, "Go back") {
		t.Errorf("kill page: %s", page)
	}
	st = statuses("/rest/seed.json")
	for _, r := range slow {
		if st[r[3]] == 0 || st[r[3]] == 1 {
			t.Errorf("slow task %d still listed as %d after kill", r[3], st[r[3]])
		}
	}
	if st[d1] != 1 {
		t.Errorf("demo task %d: got status %d, want RUNNING on a freed thread", d1, st[d1])
	}
	// A killed running task's counters stop moving once its lane stopped:
	// read then, they are the same at the end of the test, once demo's
	// tasks were killed too and every killed task left the list (the
	// list keeps an ended task 3 s).
	testenv.Eventually(t, 5*time.Second, "the killed lane to stop", func() bool { return !a.Local.Engine.Worker.Working(s1) })
	before, _ := a.Local.Tasks.Get(t.Context(), s1)
	if before.Status != task.Aborted {
		t.Errorf("killed task: %+v, want ABORTED", before)
	}
	defer func() {
		if after, _ := a.Local.Tasks.Get(t.Context(), s1); before.Done != after.Done || after.Status != task.Aborted {
			t.Errorf("killed task moved on: %+v then %+v", before, after)
		}
	}()
	// kill all of a layer, with the query-string spelling.
	res := a.Do(t, "POST", "/rest/seed/demo:world?kill_all=ALL", "")
	if res.Status != 200 {
		t.Fatalf("kill via query: got %d %q", res.Status, res.Body)
	}
	for id, s := range statuses("/rest/seed.json") {
		if s == 0 || s == 1 {
			t.Errorf("task %d still active after kill all: %d", id, s)
		}
	}
	// Within 5 s killed tasks leave the list.
	testenv.Eventually(t, 6*time.Second, "killed tasks to leave the list", func() bool { return len(listRows(t, a, "/rest/seed.json")) == 0 })
}

func TestRestartMidSeedFinishesWithExactCounts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := apptest.Start(t, apptest.Options{DataDir: dir, SeedThreads: 2})
	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":2}}`)
	testenv.Eventually(t, 10*time.Second, "some progress", func() bool {
		for _, r := range listRows(t, a, "/rest/seed.json") {
			if r[0] > 0 {
				return true
			}
		}
		return false
	})
	a.Stop() // the process ends mid-lane
	mid, _ := a.Local.Tasks.Get(t.Context(), rows[0][3])
	_ = mid

	b := apptest.Start(t, apptest.Options{DataDir: dir, SeedThreads: 2})
	for _, tk := range waitFinished(t, b, ids(rows), 30*time.Second) {
		if tk.Status != task.Done || tk.Done != tk.Total || tk.Cursor != tk.End {
			t.Errorf("task %d: got %+v, want DONE with done == total", tk.ID, tk)
		}
	}
	if got, want := keys(t, b, "slow:world/"), expectKeys("slow:world/EPSG:4326/png/default/", 0, 3, "png"); !slices.Equal(got, want) {
		t.Errorf("got %d tiles, want %d", len(got), len(want))
	}
	// The id sequence survived too.
	next := seedReq(t, b, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":0}}`)
	if next[0][3] != rows[1][3]+1 {
		t.Errorf("got id %d after restart, want %d", next[0][3], rows[1][3]+1)
	}
}

func TestDuplicateLaneMessageDoesNotDoubleCount(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{SeedThreads: 4})
	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3}}`)
	id := rows[0][3]
	testenv.Eventually(t, 10*time.Second, "progress", func() bool {
		tk, _ := a.Local.Tasks.Get(t.Context(), id)
		return tk.Cursor > 0
	})
	tk, _ := a.Local.Tasks.Get(t.Context(), id)
	// The current message again (two workers on one lane), and an old one.
	if err := a.Local.Queue.Send(t.Context(), queue.Message{TaskID: id, Cursor: tk.Cursor}, queue.Message{TaskID: id, Cursor: 0}); err != nil {
		t.Fatal(err)
	}
	final := waitFinished(t, a, []int64{id}, 30*time.Second)[0]
	if final.Status != task.Done || final.Done != 170 || final.Total != 170 {
		t.Fatalf("got %+v, want DONE with exactly 170 of 170", final)
	}
	if got := len(keys(t, a, "slow:world/")); got != 170 {
		t.Errorf("got %d tiles, want 170", got)
	}
}

func TestTileFailures(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	// Default retry count -1: the first failure (z2) aborts the task.
	rows := seedReq(t, a, "broken:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3}}`)
	tk := waitFinished(t, a, ids(rows), 10*time.Second)[0]
	if tk.Status != task.Aborted || tk.Killed {
		t.Errorf("got %+v, want ABORTED by the failure", tk)
	}
	// With retries and a budget, failed metatiles are skipped and counted.
	rows = seedReq(t, a, "broken:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"tileFailureRetryCount":1,
		"tileFailureRetryWaitTime":1,"totalFailuresBeforeAborting":1000,"threadCount":2}}`)
	for _, tk := range waitFinished(t, a, ids(rows), 20*time.Second) {
		if tk.Status != task.Done || tk.Done != tk.Total {
			t.Errorf("got %+v, want DONE", tk)
		}
	}
	if got := len(keys(t, a, "broken:world/EPSG:4326/png/default/2/")); got != 0 {
		t.Errorf("got %d tiles at the failing level, want 0", got)
	}
	if got := len(keys(t, a, "broken:world/EPSG:4326/png/default/3/")); got != 128 {
		t.Errorf("got %d tiles at z3, want 128", got)
	}
	// A small budget aborts every task of the request.
	rows = seedReq(t, a, "broken:world", `{"seedRequest":{"zoomStart":2,"zoomStop":2,"tileFailureRetryCount":0,
		"totalFailuresBeforeAborting":3,"threadCount":2}}`)
	for _, tk := range waitFinished(t, a, ids(rows), 20*time.Second) {
		if tk.Status != task.Aborted {
			t.Errorf("got %+v, want ABORTED once 3 failures were shared", tk)
		}
	}
}

func TestMassTruncate(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	for _, body := range []string{
		`{"seedRequest":{"zoomStart":0,"zoomStop":2}}`,
		`{"seedRequest":{"zoomStart":0,"zoomStop":1,"gridSetId":"EPSG:900913","format":"image/jpeg"}}`,
		`{"seedRequest":{"zoomStart":0,"zoomStop":1,"parameters":{"entry":{"string":["styles","pophatch"]}}}}`,
	} {
		waitFinished(t, a, ids(seedReq(t, a, "topp:states", body)), 10*time.Second)
	}
	waitFinished(t, a, ids(seedReq(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`)), 10*time.Second)
	params := keys(t, a, "topp:states/EPSG:4326/png/"+tilestore.ParametersID(map[string]string{"STYLES": "pophatch", "CQL_FILTER": ""})+"/")
	if len(params) == 0 {
		t.Fatal("no tiles stored under the parameters id")
	}
	if _, _, found := a.Get(t, tilestore.ParametersKey("", "topp:states", tilestore.ParametersID(map[string]string{"STYLES": "pophatch", "CQL_FILTER": ""}))); !found {
		t.Error("parameters side object missing")
	}
	demo := keys(t, a, "demo:world/")
	res := a.Do(t, "POST", "/rest/masstruncate", "<truncateLayer><layerName>topp:states</layerName></truncateLayer>", "Content-Type", "text/xml; charset=utf-8")
	if res.Status != 200 || res.Body != "" {
		t.Fatalf("got %d %q, want 200 and an empty body", res.Status, res.Body)
	}
	if got := keys(t, a, "topp:states/"); len(got) != 0 {
		t.Errorf("after mass truncate %d objects remain: %v", len(got), got[:min(5, len(got))])
	}
	if got := keys(t, a, "demo:world/"); !slices.Equal(got, demo) {
		t.Errorf("another layer's tiles changed: %d before, %d after", len(demo), len(got))
	}
	if entries, _ := os.ReadDir(filepath.Join(a.DataDir, "tiles", "topp:states")); a.Prefix == "" && len(entries) != 0 {
		t.Errorf("empty directories left behind: %v", entries)
	}
}

// TestPanickingSourceFailsItsMetatileOnly: a source that panics (a decoder
// on a strange input) fails that metatile like a source error, logged with
// a stack; the process, the other lanes and the API go on.
func TestPanickingSourceFailsItsMetatileOnly(t *testing.T) {
	t.Parallel()
	var log apptest.LogBuffer
	a := apptest.Start(t, apptest.Options{Log: &log, Layers: apptest.Layers + `
  - name: panic:world
    gridSubsets:
      - gridSet: EPSG:4326
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: testpattern, panicZooms: [1]}
`})
	rows := seedReq(t, a, "panic:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2,"tileFailureRetryCount":0,"threadCount":2}}`)
	other := seedReq(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2}}`)
	for _, tk := range waitFinished(t, a, append(ids(rows), ids(other)...), 60*time.Second) {
		if tk.Status != task.Done || tk.Done != tk.Total {
			t.Errorf("task %d (%s): %v with %d of %d tiles, want DONE", tk.ID, tk.Layer, tk.Status, tk.Done, tk.Total)
		}
	}
	// Levels 0 and 2 stored; the 8 metatiles of level 1 failed.
	if got, want := len(keys(t, a, "panic:world/")), 2+32; got != want {
		t.Errorf("panic:world: got %d tiles, want %d (levels 0 and 2)", got, want)
	}
	if got, want := len(keys(t, a, "demo:world/EPSG:4326/")), 2+8+32; got != want {
		t.Errorf("demo:world: got %d tiles, want %d", got, want)
	}
	if !strings.Contains(log.String(), "source panicked") || !strings.Contains(log.String(), "goroutine") {
		t.Errorf("the panic is not logged with its stack:\n%.2000s", log.String())
	}
	if res := a.Do(t, "GET", "/rest/seed.json", ""); res.Status != 200 {
		t.Errorf("the API after the panics: got %d", res.Status)
	}
}

// TestKillStopsUpstreamTrafficMidRetry: a lane retrying a failing upstream
// (its own retries with backoff, and the request's tile retries) stops
// calling it within about a second of a kill.
func TestKillStopsUpstreamTrafficMidRetry(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	var last atomic.Int64 // unix nanos of the latest request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		last.Store(time.Now().UnixNano())
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer up.Close()
	a := apptest.Start(t, apptest.Options{Layers: apptest.Layers + `
  - name: failing:world
    gridSubsets:
      - gridSet: EPSG:900913
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: xyz, url: "` + up.URL + `/{z}/{x}/{y}.png", retries: 5, retryBackoff: 400ms, maxConcurrent: 1}
`})
	rows := seedReq(t, a, "failing:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"tileFailureRetryCount":10,"tileFailureRetryWaitTime":2000}}`)
	testenv.Eventually(t, 10*time.Second, "the upstream to be called", func() bool { return calls.Load() >= 2 })
	if res := a.Do(t, "POST", "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded"); res.Status != 200 {
		t.Fatalf("kill: got %d %q", res.Status, res.Body)
	}
	killed := time.Now()
	for _, tk := range waitFinished(t, a, ids(rows), 10*time.Second) {
		if tk.Status != task.Aborted {
			t.Errorf("task %d: got %v, want ABORTED", tk.ID, tk.Status)
		}
	}
	// Its retries would go on for seconds (5 × 400 ms, then 10 × 2 s):
	// once the lane has returned, nothing is left to call the upstream.
	testenv.Eventually(t, 30*time.Second, "the killed lane to stop", func() bool {
		return !slices.ContainsFunc(ids(rows), a.Local.Engine.Worker.Working)
	})
	if at := time.Unix(0, last.Load()); at.After(killed.Add(time.Second)) {
		t.Errorf("the upstream was called %v after the kill (%d calls in all), want none after 1 s", at.Sub(killed).Round(time.Millisecond), calls.Load())
	}
}

// TestSlowRenderKeepsOneWorkerPerLane: a lane busy in renders longer than
// the staleness window keeps its heartbeat fresh, so neither the sweep nor
// a redelivery hands it to a second worker: every tile is asked of the
// upstream exactly once.
func TestSlowRenderKeepsOneWorkerPerLane(t *testing.T) {
	t.Parallel()
	// Each render is held until the heartbeats of the running lanes were
	// written a staleness window (2 s) after it began, and a sweep ran.
	const staleAfter = 2 * time.Second
	type render struct {
		start   time.Time
		release chan struct{}
	}
	renders, free := make(chan render), make(chan struct{})
	var mu sync.Mutex
	calls := map[string]int{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Path]++
		mu.Unlock()
		h := render{start: time.Now(), release: make(chan struct{})}
		select {
		case renders <- h:
			select {
			case <-h.release:
			case <-r.Context().Done():
				return
			}
		case <-free: // the test has seen its five renders
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(http.StatusNotFound) // a blank tile
	}))
	defer up.Close()
	defer close(free)
	// Staleness 2 s: heartbeats every 0.5 s keep the lane fresh unless the
	// store stalls for 1.5 s, which a loaded 2-core machine does for 1 s.
	var log apptest.LogBuffer
	a := apptest.Start(t, apptest.Options{StaleAfter: staleAfter, SeedThreads: 4, Log: &log, Layers: apptest.Layers + `
  - name: slow:xyz
    gridSubsets:
      - gridSet: EPSG:900913
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: xyz, url: "` + up.URL + `/{z}/{x}/{y}.png", retries: -1, timeout: 10s}
`})
	// Two tasks (lanes of 3 and 2 tiles), two of the four workers left
	// idle to take a lane that looks stale.
	rows := seedReq(t, a, "slow:xyz", `{"seedRequest":{"zoomStart":0,"zoomStop":1,"threadCount":2}}`)
	if len(rows) != 2 {
		t.Fatalf("threadCount 2: %d tasks, want 2", len(rows))
	}
	// fresh reports whether every running lane's heartbeat was written at
	// or after at.
	fresh := func(at time.Time) bool {
		for _, id := range ids(rows) {
			tk, err := a.Local.Tasks.Get(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if tk.Status == task.Running && tk.Heartbeat.Before(at) {
				return false
			}
		}
		return true
	}
	for i := range 5 {
		var h render
		select {
		case h = <-renders:
		case <-time.After(30 * time.Second * testenv.WaitScale()):
			t.Fatalf("the upstream was asked for %d tiles, want 5", i)
		}
		// (A sweep's re-enqueue refreshes the heartbeat too: it ends the
		// test.)
		reenqueued := func() bool { return strings.Contains(log.String(), "lane re-enqueued") }
		testenv.Eventually(t, 10*time.Second, "the lanes' heartbeats to be written a staleness window after a render began", func() bool {
			return reenqueued() || fresh(h.start.Add(staleAfter))
		})
		if err := a.Local.Engine.Pool.Sweep(t.Context()); err != nil {
			t.Fatal(err)
		}
		if reenqueued() {
			t.Fatalf("a sweep re-enqueued a lane busy in a render:\n%s", log.String())
		}
		close(h.release)
	}
	var done int64
	for _, tk := range waitFinished(t, a, ids(rows), 60*time.Second) {
		if tk.Status != task.Done || tk.Done != tk.Total {
			t.Errorf("task %d: %v with %d of %d tiles, want DONE with all", tk.ID, tk.Status, tk.Done, tk.Total)
		}
		done += tk.Done
	}
	if done != 5 {
		t.Errorf("the tasks did %d tiles, want 5", done)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 5 {
		t.Errorf("the upstream was asked for %d tiles, want 5: %v", len(calls), calls)
	}
	for path, n := range calls {
		if n != 1 {
			t.Errorf("%s asked %d times, want once (a second worker took the lane)", path, n)
		}
	}
	if strings.Contains(log.String(), "lane re-enqueued") {
		t.Errorf("a sweep re-enqueued a lane busy in a render:\n%s", log.String())
	}
}

// TestStatusRowsFollowProgress: a running task's processed count in the
// status rows follows its lane between checkpoints (here 20 s apart): it
// is never more than about a second behind.
func TestStatusRowsFollowProgress(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{Checkpoint: 20 * time.Second, Slice: time.Minute, SeedThreads: 1})
	// z0-3 of the slow layer: 170 one-tile metatiles, 40 ms each (6.8 s).
	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":1}}`)
	start := time.Now()
	processed := func() int64 {
		for _, r := range listRows(t, a, "/rest/seed.json") {
			if r[3] == rows[0][3] {
				return r[0]
			}
		}
		return -1
	}
	// Five times, each once 10 more tiles are stored (0.4 s of the seed):
	// the tiles stored so far, then the row's processed count, which must
	// reach them within a second (stretched by the wait scale), long
	// before the first checkpoint (20 s) however fast the machine renders.
	var stored, seen []int64
	for range 5 {
		var n, p int64
		last := int64(0)
		if len(stored) > 0 {
			last = stored[len(stored)-1]
		}
		testenv.Eventually(t, 15*time.Second, fmt.Sprintf("10 more tiles stored than %d", last), func() bool {
			n = int64(len(keys(t, a, "slow:world/")))
			return n >= last+10
		})
		stored = append(stored, n)
		testenv.Eventually(t, time.Second, fmt.Sprintf("the row to count the %d tiles stored (stored %v, processed %v so far; checkpoints are 20 s apart)", n, stored, seen), func() bool {
			p = processed()
			return p >= n
		})
		seen = append(seen, p)
	}
	t.Logf("stored tiles %v, then processed counts %v", stored, seen)
	if time.Since(start) >= 20*time.Second {
		t.Errorf("the polls outlasted the first checkpoint (20 s): they show nothing")
	}
	// What is looked at is seen: the rest of the seed (most of it; 24 s
	// of a loaded AWS pass) would show nothing more. Killed, it ends.
	kill(t, a, "/rest/seed", "running")
	waitFinished(t, a, ids(rows), 30*time.Second)
}

// TestRenderPastInvocationBudgetIsATileFailure: against an upstream that
// never answers, a lane worked under an invocation's deadline (a Lambda's)
// cuts the render at the deadline less half the safety margin (10 s),
// counts it as a tile failure and continues in a new message: the message
// is finished with, not redelivered onto the same metatile.
func TestRenderPastInvocationBudgetIsATileFailure(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		<-r.Context().Done() // never answers
	}))
	defer up.Close()
	a := apptest.Start(t, apptest.Options{Env: map[string]string{"TILECACHE_WORKERS": "0"}, Layers: apptest.Layers + `
  - name: hang:xyz
    gridSubsets:
      - gridSet: EPSG:900913
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: xyz, url: "` + up.URL + `/{z}/{x}/{y}.png", retries: -1, timeout: 60s}
`})
	rows := seedReq(t, a, "hang:xyz", `{"seedRequest":{"zoomStart":0,"zoomStop":1,"tileFailureRetryCount":0,"totalFailuresBeforeAborting":100}}`)
	ds, err := a.Local.Queue.Receive(t.Context(), 1, 5*time.Second, time.Hour)
	if err != nil || len(ds) != 1 {
		t.Fatalf("the lane message: %v, %v", ds, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 7*time.Second) // the invocation's deadline
	defer cancel()
	start := time.Now()
	if err := a.Local.Engine.Worker.Work(ctx, ds[0].Message, ds[0].Attempt); err != nil {
		t.Fatalf("Work: %v, want nil (the message is finished with)", err)
	}
	if took := time.Since(start); took < 1500*time.Millisecond || took > 4*time.Second {
		t.Errorf("the lane returned after %v, want about 2 s (7 s less half the 10 s margin)", took)
	}
	tk, err := a.Local.Tasks.Get(t.Context(), rows[0][3])
	if err != nil || tk.Status != task.Running || tk.Cursor != 1 {
		t.Errorf("task after the slice: %+v %v; want RUNNING past the failed metatile", tk, err)
	}
	next, err := a.Local.Queue.Receive(t.Context(), 1, 5*time.Second, time.Hour)
	if err != nil || len(next) != 1 || next[0].Message.Cursor != 1 {
		t.Errorf("continuation: %+v %v; want one message at metatile 1", next, err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the upstream was called %d times, want once", n)
	}
}
