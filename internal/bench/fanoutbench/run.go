package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/app"
	"tilecache/internal/auth"
	"tilecache/internal/bench/benchenv"
	"tilecache/internal/config"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// job is one seed to measure with a number of worker processes.
type job struct {
	workers, lanesPerWorker int
	layers                  string // the layer file's text
	layer                   string // the layer seeded
	body                    string // the seed request
	timeout                 time.Duration
	blockSize               int64 // diskBlockSize of the usage count
	wmsPID                  int   // count this process tree's CPU as the WMS's (0: none)
	stackPIDs               []int // count these processes' CPU as the AWS stack's
	proxy                   *delayProxy
	cap                     int // the layer's maxConcurrent (0: none)
}

// row is one run's figures.
type row struct {
	Workers        int                `json:"workers"`
	Lanes          int                `json:"lanes"`
	Cap            int                `json:"cap,omitempty"`
	State          string             `json:"state"` // DONE, ABORTED or TIMEOUT
	Tiles          int64              `json:"tiles"` // the job's tiles
	Done           int64              `json:"done"`  // tiles done by each task's last status row
	Stored         int64              `json:"stored"`
	StoredBytes    int64              `json:"storedBytes"`
	StoredBlocks   int64              `json:"storedBlocks"` // bytes rounded up to diskBlockSize per tile
	UsageTiles     int64              `json:"usageTiles"`
	UsageBytes     int64              `json:"usageBytes"`
	RecountPending bool               `json:"recountPending"`
	Seconds        float64            `json:"seconds"`
	TilesPerSec    float64            `json:"tilesPerSec"`
	Efficiency     float64            `json:"efficiency"`
	PeakGetMaps    int                `json:"peakGetMaps"`
	GetMaps        int64              `json:"getMaps"`
	DynamoWrites   int64              `json:"dynamoWrites"` // workers' and the API program's, from the submit on
	WritesPer1000  float64            `json:"writesPer1000"`
	WritesByOp     map[string]float64 `json:"writesByOpPer1000"`
	S3PutsPer1000  float64            `json:"s3PutsPer1000"`
	SQSPer1000     float64            `json:"sqsSentPer1000"`
	WorkerCPU      float64            `json:"workerCPUSeconds"`
	WMSCPU         float64            `json:"wmsCPUSeconds"`
	StackCPU       float64            `json:"stackCPUSeconds"` // MinIO, DynamoDB Local, the SQS server, less their idle use
	StackIdle      float64            `json:"stackIdleCores"`  // their CPU use before the seed, idle
	APICPU         float64            `json:"apiCPUSeconds"`   // this process: the API program and the proxy
	MachineBusy    float64            `json:"machineBusy"`     // fraction of all cores busy during the run (everything on the machine)
	WorkerPeakRSS  float64            `json:"workerPeakRSSMiB"`
}

// workerProc is one worker process and the reports it printed.
type workerProc struct {
	cmd     *exec.Cmd
	ready   chan struct{}
	reports chan report
	done    chan error
	exited  atomic.Bool
}

// startWorker starts this program with -worker and env.
func startWorker(env []string, i int) (*workerProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program: %w", err)
	}
	cmd := exec.Command(self, "-worker")
	cmd.Env = env
	cmd.Stderr = &prefixWriter{prefix: fmt.Sprintf("worker %d: ", i), w: os.Stderr}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker %d: %w", i, err)
	}
	w := &workerProc{cmd: cmd, ready: make(chan struct{}), reports: make(chan report, 4), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if line == readyLine {
				close(w.ready)
				continue
			}
			var r report
			if err := json.Unmarshal([]byte(line), &r); err == nil {
				w.reports <- r
			}
		}
		err := cmd.Wait()
		w.exited.Store(true)
		w.done <- err
	}()
	return w, nil
}

// snapshot asks the worker for its counts so far (SIGUSR1) and returns them.
func (w *workerProc) snapshot(wait time.Duration) (report, error) {
	if err := w.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return report{}, err
	}
	select {
	case r := <-w.reports:
		return r, nil
	case <-time.After(wait):
		return report{}, fmt.Errorf("worker %d: no report within %v", w.cmd.Process.Pid, wait)
	}
}

// stop ends the worker (SIGTERM) and returns its last report; a worker
// that does not stop in time is killed.
func (w *workerProc) stop(wait time.Duration) (report, error) {
	w.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var last report
	var got bool
	for {
		select {
		case r := <-w.reports:
			last, got = r, true
		case err := <-w.done:
			for len(w.reports) > 0 {
				last, got = <-w.reports, true
			}
			if !got {
				return last, fmt.Errorf("worker %d ended without a report: %v", w.cmd.Process.Pid, err)
			}
			return last, nil
		case <-timer.C:
			w.cmd.Process.Kill()
			return last, fmt.Errorf("worker %d did not stop within %v: killed", w.cmd.Process.Pid, wait)
		}
	}
}

// run measures one job: a fresh table, queue and key prefix, the API
// program in this process (it takes the request and answers the status;
// it works no lane), and the workers in processes of their own.
func (j job) run() (row, error) {
	r := row{Workers: j.workers, Lanes: j.workers * j.lanesPerWorker, Cap: j.cap}
	dir, err := os.MkdirTemp("", "fanoutbench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	users := filepath.Join(dir, "users")
	if err := auth.AddAccount(users, "bench", "bench", bcrypt.MinCost); err != nil {
		return r, err
	}
	layers := filepath.Join(dir, "layers.yaml")
	if err := os.WriteFile(layers, []byte(j.layers), 0o644); err != nil {
		return r, err
	}
	env := map[string]string{"TILECACHE_DATA": dir, "TILECACHE_USERS": users, "TILECACHE_LAYERS": layers,
		"TILECACHE_SEED_THREADS": fmt.Sprint(max(64, r.Lanes)), "TILECACHE_UPSTREAM_ALLOW": "127.0.0.0/8"}
	cleanup, err := benchenv.AWSResources("fanout", env)
	if err != nil {
		return r, err
	}
	defer cleanup()
	cfg, err := config.Load(func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, true
		}
		if strings.HasPrefix(k, "AWS_") {
			return os.LookupEnv(k)
		}
		return "", false
	})
	if err != nil {
		return r, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return r, err
	}
	defer api.Close()
	srv := httptest.NewServer(api.Handler)
	defer srv.Close()

	// The workers: the same settings, one lane worker each (by default).
	var wenv []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TILECACHE_") {
			wenv = append(wenv, kv)
		}
	}
	for k, v := range env {
		wenv = append(wenv, k+"="+v)
	}
	wenv = append(wenv, fmt.Sprintf("TILECACHE_WORKERS=%d", j.lanesPerWorker))
	var procs []*workerProc
	defer func() {
		for _, w := range procs {
			if !w.exited.Load() {
				w.cmd.Process.Kill()
			}
		}
	}()
	for i := range j.workers {
		w, err := startWorker(wenv, i+1)
		if err != nil {
			return r, err
		}
		procs = append(procs, w)
	}
	deadline := time.After(2 * time.Minute)
	for _, w := range procs {
		select {
		case <-w.ready:
		case err := <-w.done:
			return r, fmt.Errorf("a worker ended before it was ready: %v", err)
		case <-deadline:
			return r, errors.New("the workers were not ready within 2 minutes")
		}
	}
	// Usage counted from the start, so that it can be checked exact.
	if _, err := call(http.MethodPut, srv.URL+"/rest/diskquota.json", fmt.Sprintf(`{"cacheQuotaConfiguration":{"diskBlockSize":%d}}`, j.blockSize)); err != nil {
		return r, err
	}
	if err := waitSettled(srv.URL, 2*time.Minute); err != nil {
		return r, err
	}

	// The AWS stack's CPU when idle (DynamoDB Local's JVM, the SQS
	// server's long polls), taken off its figure below.
	idle0, idleAt := stackCPU(j.stackPIDs), time.Now()
	time.Sleep(3 * time.Second)
	r.StackIdle = (stackCPU(j.stackPIDs) - idle0) / time.Since(idleAt).Seconds()

	// From here on everything is counted.
	before := make([]report, len(procs))
	for i, w := range procs {
		if before[i], err = w.snapshot(30 * time.Second); err != nil {
			return r, err
		}
	}
	ddb := api.Writes
	var apiWrites0, apiSent0 int64
	var apiOps0 map[string]int64
	if ddb != nil {
		apiWrites0, apiOps0 = ddb.Writes(), ddb.WritesByOp()
	}
	q, _ := api.Queue.(*sqsqueue.Queue)
	if q != nil {
		apiSent0 = q.Sent()
	}
	if j.proxy != nil {
		j.proxy.reset()
	}
	wms0, stack0, api0 := benchenv.TreeCPU(j.wmsPID), stackCPU(j.stackPIDs), benchenv.SelfCPU()
	busy0, all0 := machineCPU()
	start := time.Now()
	body, err := call(http.MethodPost, srv.URL+"/rest/seed/"+j.layer+".json", j.body)
	if err != nil {
		return r, err
	}
	rows, err := decodeRows(body)
	if err != nil {
		return r, err
	}
	for _, x := range rows {
		r.Tiles += x[1]
	}
	r.State = "TIMEOUT"
	// Each task's last row seen: a finished task leaves the listing once
	// it is older than the retention, and its tiles still count.
	last := map[int64][5]int64{}
	end := start.Add(j.timeout)
	for time.Now().Before(end) {
		time.Sleep(pollWait(rows))
		body, err := call(http.MethodGet, srv.URL+"/rest/seed.json", "")
		if err != nil {
			return r, err
		}
		if rows, err = decodeRows(body); err != nil {
			return r, err
		}
		active, aborted := false, false
		for _, x := range rows {
			last[x[3]] = x
			active = active || x[4] == 0 || x[4] == 1
		}
		r.Done = 0
		for _, x := range last {
			r.Done += x[0]
			aborted = aborted || x[4] == -1
		}
		if aborted {
			r.State = "ABORTED"
			break
		}
		if !active {
			r.State = "DONE"
			break
		}
	}
	r.Seconds = time.Since(start).Seconds()
	busy1, all1 := machineCPU()
	r.WMSCPU, r.StackCPU, r.APICPU = benchenv.TreeCPU(j.wmsPID)-wms0, stackCPU(j.stackPIDs)-stack0-r.StackIdle*r.Seconds, benchenv.SelfCPU()-api0
	if all1 > all0 {
		r.MachineBusy = (busy1 - busy0) / (all1 - all0)
	}
	if j.proxy != nil {
		r.PeakGetMaps, r.GetMaps = j.proxy.counts()
	}
	r.TilesPerSec = float64(r.Tiles) / r.Seconds
	if r.State == "TIMEOUT" {
		fmt.Fprintf(os.Stderr, "fanoutbench: %d workers: not done after %v; stopping the workers\n", j.workers, j.timeout)
	}

	// The workers' counts, from the snapshot before the submit to their end.
	var writes int64
	ops := map[string]int64{}
	var puts, sent int64
	for i, w := range procs {
		after, err := w.stop(30 * time.Second)
		if err != nil {
			return r, err
		}
		writes += after.DynamoWrites - before[i].DynamoWrites
		for k, v := range after.WritesByOp {
			ops[k] += v - before[i].WritesByOp[k]
		}
		puts += after.S3Puts - before[i].S3Puts
		sent += after.SQSSent - before[i].SQSSent
		r.WorkerCPU += after.CPUSeconds - before[i].CPUSeconds
		r.WorkerPeakRSS = max(r.WorkerPeakRSS, after.PeakRSSMiB)
	}
	stopped := time.Since(start)
	// Every tile stored? Usage exact? (The workers are stopped: a run
	// stopped at its timeout is listed as far as it got.)
	prefix := env["TILECACHE_KEY_PREFIX"]
	err = api.Tiles.List(ctx, tilestore.LayerPrefix(prefix, j.layer), func(o tilestore.Object) error {
		if _, _, _, _, ok := tilestore.ParseLayerKey(prefix, j.layer, o.Key); !ok {
			return nil // the tile set's documents
		}
		r.Stored++
		r.StoredBytes += o.Size
		r.StoredBlocks += quota.Blocks(o.Size, j.blockSize)
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("list the seeded tiles: %w", err)
	}
	u, err := usage(srv.URL, j.layer)
	if err != nil {
		return r, err
	}
	r.UsageTiles, r.UsageBytes, r.RecountPending = u.UsedTiles, u.UsedBytes, u.RecountPending

	if q != nil {
		sent += q.Sent() - apiSent0
	}
	if ddb != nil {
		writes += ddb.Writes() - apiWrites0
		for k, v := range ddb.WritesByOp() {
			ops[k] += v - apiOps0[k]
		}
	}
	worked := r.Tiles
	if r.State != "DONE" {
		// Stopped before the end: the rate of the tiles stored until the
		// workers stopped.
		worked = r.Stored
		r.Seconds = stopped.Seconds()
		r.TilesPerSec = float64(r.Stored) / r.Seconds
	}
	per := func(n int64) float64 { return float64(n) * 1000 / float64(max(worked, 1)) }
	r.DynamoWrites, r.WritesPer1000, r.S3PutsPer1000, r.SQSPer1000 = writes, per(writes), per(puts), per(sent)
	r.WritesByOp = map[string]float64{}
	for k, v := range ops {
		if v != 0 {
			r.WritesByOp[k] = per(v)
		}
	}
	return r, nil
}

// usageLayer is a layer's line of GET /rest/diskquota/usage.json.
type usageLayer struct {
	Layer          string `json:"layer"`
	UsedBytes      int64  `json:"usedBytes"`
	UsedTiles      int64  `json:"usedTiles"`
	RecountPending bool   `json:"recountPending"`
}

type usageReport struct {
	RecountPending bool         `json:"recountPending"`
	Layers         []usageLayer `json:"layers"`
}

func getUsage(base string) (usageReport, error) {
	body, err := call(http.MethodGet, base+"/rest/diskquota/usage.json", "")
	if err != nil {
		return usageReport{}, err
	}
	var doc struct {
		U usageReport `json:"diskQuotaUsage"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return usageReport{}, fmt.Errorf("decode the usage %s: %w", body, err)
	}
	return doc.U, nil
}

// usage returns a layer's usage line.
func usage(base, layer string) (usageLayer, error) {
	u, err := getUsage(base)
	if err != nil {
		return usageLayer{}, err
	}
	for _, l := range u.Layers {
		if l.Layer == layer {
			return l, nil
		}
	}
	return usageLayer{Layer: layer}, nil
}

// waitSettled waits until usage is counted with no recount pending.
func waitSettled(base string, wait time.Duration) error {
	end := time.Now().Add(wait)
	for {
		u, err := getUsage(base)
		if err != nil {
			return err
		}
		if !u.RecountPending {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("usage still has a recount pending after %v", wait)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// pollWait is how long to wait before polling the status again: a
// quarter of the longest estimate, between 100 ms and a second (as
// seedbench polls).
func pollWait(rows [][5]int64) time.Duration {
	left := int64(-1)
	for _, r := range rows {
		if r[4] == 0 || r[4] == 1 {
			left = max(left, r[2])
		}
	}
	if left < 0 {
		return time.Second / 4
	}
	return min(max(time.Duration(left)*time.Second/4, 100*time.Millisecond), time.Second)
}

// call sends a request as the bench account and returns the answer's body
// (an error unless 200).
func call(method, url, body string) ([]byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth("bench", "bench")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", method, url, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, b)
	}
	return b, nil
}

func decodeRows(b []byte) ([][5]int64, error) {
	var doc struct {
		Rows [][5]int64 `json:"long-array-array"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("decode the status %s: %w", b, err)
	}
	return doc.Rows, nil
}

// prefixWriter prefixes each write (a worker's log line) before passing it on.
type prefixWriter struct {
	prefix string
	w      io.Writer
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
