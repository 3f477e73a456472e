package app_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"tilecache/internal/app/apptest"
	"tilecache/internal/awsconf"
	"tilecache/internal/task"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
)

// logEvents returns the JSON log records of a process with the given message.
func logEvents(p *apptest.Process, msg string) []map[string]any {
	var out []map[string]any
	for _, line := range p.Log() {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

func renderedBy(p *apptest.Process) (n int) {
	for _, rec := range logEvents(p, "lane slice") {
		n += int(rec["rendered"].(float64))
	}
	return n
}

func finalTasks(t *testing.T, ts task.Store, ids []int64) []task.Task {
	t.Helper()
	out := make([]task.Task, len(ids))
	for i, id := range ids {
		tk, err := ts.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = tk
	}
	return out
}

func TestTwoProcessesShareOneRequest(t *testing.T) {
	t.Parallel()
	awsPass(t)
	dir := t.TempDir()
	// A global pool of 4 threads, two lane workers per process.
	extra := map[string]string{"TILECACHE_SEED_THREADS": "4", "TILECACHE_WORKERS": "2"}
	pa := apptest.StartProcess(t, dir, extra)
	pb := apptest.StartProcess(t, dir, extra)
	a, b := pa.App(), pb.App()
	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":4}}`)
	if len(rows) != 4 || sumTotals(rows) != 170 {
		t.Fatalf("got %v, want 4 tasks holding 170 tiles", rows)
	}
	// Both processes answer for the shared state.
	if got := listRows(t, b, "/rest/seed/slow:world.json"); len(got) != 4 {
		t.Errorf("process B lists %v, want the 4 tasks", got)
	}
	testenv.Eventually(t, 60*time.Second, "the request to finish", func() bool {
		for _, r := range listRows(t, b, "/rest/seed.json") {
			if r[4] == 0 || r[4] == 1 {
				return false
			}
		}
		return true
	})
	backends, prefix := apptest.AWSBackends(t, dir, nil)
	for _, tk := range finalTasks(t, backends.Tasks, ids(rows)) {
		if tk.Status != task.Done || tk.Done != tk.Total || tk.Cursor != tk.End {
			t.Errorf("task %d: got %+v, want DONE with exact counts", tk.ID, tk)
		}
	}
	var got []string
	backends.Tiles.List(t.Context(), prefix+"slow:world/", func(o tilestore.Object) error {
		if k := strings.TrimPrefix(o.Key, prefix); apptest.IsTileKey(k) {
			got = append(got, k)
		}
		return nil
	})
	if want := expectKeys("slow:world/EPSG:4326/png/default/", 0, 3, "png"); !slices.Equal(got, want) {
		t.Errorf("got %d tiles, want %d", len(got), len(want))
	}
	// No double work: the 170 one-tile metatiles were rendered once in all,
	// and both processes took part.
	ra, rb := renderedBy(pa), renderedBy(pb)
	if ra+rb != 170 || ra == 0 || rb == 0 {
		t.Errorf("rendered %d by A and %d by B, want 170 in all, shared", ra, rb)
	}
	if n := len(logEvents(pa, "task finished")) + len(logEvents(pb, "task finished")); n != 4 {
		t.Errorf("got %d task finished events, want 4", n)
	}
}

// TestUpstreamCapHoldsAcrossProcesses: a layer's maxConcurrent bounds its
// upstream requests in flight across every process of a deployment (here
// two `tilecache serve` on one AWS stack, 4 lane workers each, a request
// of 8 lanes, and 16 renders on miss at once split between them), not per
// process: its lanes wait PENDING beyond their share, misses wait for a
// render slot.
func TestUpstreamCapHoldsAcrossProcesses(t *testing.T) {
	t.Parallel()
	awsPass(t)
	var inFlight, peak, calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		calls.Add(1)
		time.Sleep(60 * time.Millisecond)
		w.WriteHeader(http.StatusNotFound) // a blank tile
	}))
	defer up.Close()
	dir := t.TempDir()
	layers := filepath.Join(dir, "capped-layers.yaml")
	if err := os.WriteFile(layers, []byte(apptest.Layers+`
  - name: capped:xyz
    gridSubsets:
      - gridSet: EPSG:900913
    formats: [image/png]
    metatiling: [1, 1]
    renderOnMiss: {enabled: true}
    source: {type: xyz, url: "`+up.URL+`/{z}/{x}/{y}.png", maxConcurrent: 2}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Misses wait up to 30 s for an upstream slot (3 s by default): 16 of
	// them queue behind a cap of 2 shared with the seed, and on a loaded
	// machine the renders ahead of the last take longer than 3 s.
	extra := map[string]string{"TILECACHE_SEED_THREADS": "8", "TILECACHE_WORKERS": "4", "TILECACHE_LAYERS": layers, "TILECACHE_MISS_WAIT": "30s"}
	pa := apptest.StartProcess(t, dir, extra)
	pb := apptest.StartProcess(t, dir, extra)
	a := pa.App()
	rows := seedReq(t, a, "capped:xyz", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":8}}`)
	if len(rows) != 8 {
		t.Fatalf("got %v, want 8 tasks", rows)
	}
	running := 0
	for _, r := range listRows(t, a, "/rest/seed/capped:xyz.json") {
		if r[4] == 1 {
			running++
		}
	}
	if running > 1 {
		t.Errorf("%d tasks RUNNING at once, want at most seeding's share of the cap: 1", running)
	}
	var wg sync.WaitGroup
	var bad atomic.Int64
	procs := []*apptest.Process{pa, pb}
	for i := range 16 {
		wg.Go(func() {
			res, err := http.Get(fmt.Sprintf("%s/tiles/capped:xyz/EPSG:900913/png/5/%d/%d.png", procs[i%2].URL, i, 7))
			if err != nil {
				bad.Add(1)
				return
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Errorf("%d of 16 renders on miss failed", bad.Load())
	}
	testenv.Eventually(t, 60*time.Second, "the request to finish", func() bool {
		for _, r := range listRows(t, pb.App(), "/rest/seed.json") {
			if r[4] == 0 || r[4] == 1 {
				return false
			}
		}
		return true
	})
	backends, _ := apptest.AWSBackends(t, dir, nil)
	for _, tk := range finalTasks(t, backends.Tasks, ids(rows)) {
		if tk.Status != task.Done {
			t.Errorf("task %d: got %v, want DONE", tk.ID, tk.Status)
		}
	}
	if calls.Load() != 85+16 || peak.Load() > 2 {
		t.Errorf("the upstream saw %d requests with up to %d in flight, want 101 with at most 2", calls.Load(), peak.Load())
	}
	if ra, rb := renderedBy(pa), renderedBy(pb); ra == 0 || rb == 0 {
		t.Logf("rendered %d by A and %d by B", ra, rb)
	}
}

func TestWorkerKilledMidLaneFinishesExactly(t *testing.T) {
	t.Parallel()
	awsPass(t)
	dir := t.TempDir()
	pa := apptest.StartProcess(t, dir, nil)
	rows := seedReq(t, pa.App(), "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":2}}`)
	testenv.Eventually(t, 30*time.Second, "progress on both lanes", func() bool {
		for _, r := range listRows(t, pa.App(), "/rest/seed.json") {
			if r[0] < 10 {
				return false
			}
		}
		return true
	})
	pa.Kill() // SIGKILL mid-lane: no checkpoint, no continuation, no ack
	pb := apptest.StartProcess(t, dir, nil)
	testenv.Eventually(t, 60*time.Second, "the request to finish on the fresh process", func() bool {
		for _, r := range listRows(t, pb.App(), "/rest/seed.json") {
			if r[4] == 0 || r[4] == 1 {
				return false
			}
		}
		return true
	})
	backends, prefix := apptest.AWSBackends(t, dir, nil)
	for _, tk := range finalTasks(t, backends.Tasks, ids(rows)) {
		if tk.Status != task.Done || tk.Done != tk.Total || tk.Cursor != tk.End {
			t.Errorf("task %d: got %+v, want DONE with exact counts", tk.ID, tk)
		}
	}
	n := 0
	backends.Tiles.List(t.Context(), prefix+"slow:world/", func(o tilestore.Object) error {
		if apptest.IsTileKey(strings.TrimPrefix(o.Key, prefix)) {
			n++
		}
		return nil
	})
	if n != 170 {
		t.Errorf("got %d tiles, want 170", n)
	}
}

// minioBinary finds the MinIO the devstack installed.
func minioBinary(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("TILECACHE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "tilecache")
	}
	bin := filepath.Join(cache, "tools", "bin", "minio")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("MinIO binary not found at %s (make devstack installs it): %v", bin, err)
	}
	return bin
}

// ownMinIO runs a MinIO of this test's own on a fixed data directory.
type ownMinIO struct {
	bin, dir, addr string
	cmd            *exec.Cmd
}

func (m *ownMinIO) start(t *testing.T) {
	t.Helper()
	m.cmd = exec.Command(m.bin, "server", m.dir, "--address", m.addr, "--console-address", freeAddr(t), "--quiet")
	m.cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+os.Getenv("AWS_ACCESS_KEY_ID"),
		"MINIO_ROOT_PASSWORD="+os.Getenv("AWS_SECRET_ACCESS_KEY"), "MINIO_BROWSER=off", "MINIO_UPDATE=off")
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "MinIO to be ready", func() bool {
		res, err := httpGet("http://" + m.addr + "/minio/health/ready")
		return err == nil && res == 200
	})
}

func (m *ownMinIO) stop() {
	if m.cmd != nil && m.cmd.ProcessState == nil {
		m.cmd.Process.Kill()
		m.cmd.Wait()
	}
}

func TestMinIORestartMidSeedLosesNothing(t *testing.T) {
	t.Parallel()
	awsPass(t)
	m := &ownMinIO{bin: minioBinary(t), dir: t.TempDir(), addr: freeAddr(t)}
	m.start(t)
	t.Cleanup(m.stop)
	mc, err := minio.New(m.addr, &minio.Options{Creds: credentials.NewStaticV4(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.MakeBucket(t.Context(), "restart", minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s3 := map[string]string{"AWS_ENDPOINT_URL_S3": "http://" + m.addr, "TILECACHE_S3_BUCKET": "restart"}
	p := apptest.StartProcess(t, dir, s3)
	rows := seedReq(t, p.App(), "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":2}}`)
	testenv.Eventually(t, 30*time.Second, "progress", func() bool {
		for _, r := range listRows(t, p.App(), "/rest/seed.json") {
			if r[0] < 20 {
				return false
			}
		}
		return true
	})
	failed := len(logEvents(p, "tile write failed, trying again"))
	m.stop()
	testenv.Eventually(t, 30*time.Second, "a tile write to fail against the stopped store", func() bool {
		return len(logEvents(p, "tile write failed, trying again")) > failed
	})
	m.start(t)
	testenv.Eventually(t, 90*time.Second, "the request to finish after the restart", func() bool {
		for _, r := range listRows(t, p.App(), "/rest/seed.json") {
			if r[4] == 0 || r[4] == 1 {
				return false
			}
		}
		return true
	})
	backends, prefix := apptest.AWSBackends(t, dir, nil)
	for _, tk := range finalTasks(t, backends.Tasks, ids(rows)) {
		if tk.Status != task.Done || tk.Done != tk.Total {
			t.Errorf("task %d: got %+v, want DONE with exact counts", tk.ID, tk)
		}
	}
	store, err := s3store.New(s3store.Options{Bucket: "restart", Endpoint: s3Endpoint(m.addr), Region: "us-east-1",
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	store.List(t.Context(), prefix+"slow:world/", func(o tilestore.Object) error {
		if k := strings.TrimPrefix(o.Key, prefix); apptest.IsTileKey(k) {
			got = append(got, k)
		}
		return nil
	})
	if want := expectKeys("slow:world/EPSG:4326/png/default/", 0, 3, "png"); !slices.Equal(got, want) {
		t.Errorf("after the MinIO restart: got %d tiles, want %d", len(got), len(want))
	}
	if len(logEvents(p, "lane work failed; message will be redelivered")) == 0 {
		t.Log("no lane failed during the outage: the S3 client's own retries bridged it")
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func httpGet(url string) (int, error) {
	res, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

func s3Endpoint(addr string) awsconf.S3Endpoint {
	return awsconf.S3Endpoint{Host: addr, PathStyle: true}
}
