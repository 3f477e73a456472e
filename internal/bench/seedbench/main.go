// Command seedbench seeds a fixed test-pattern job through the whole local
// program (REST request, engine, lane workers, embedded tile directory and
// task store) and prints tiles per second and the process's peak RSS.
//
//	go run ./internal/bench/seedbench [-zoom 7] [-threads 4] [-runs 3] [-backend aws]
//
// With -backend aws it runs against the stack of `eval "$(make -s devstack)"`
// (a fresh table and queue per run, a fresh key prefix in the bucket) and
// also prints the S3 requests, DynamoDB writes and SQS messages per 1,000
// tiles, as counted by the adapters.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/app"
	"tilecache/internal/auth"
	"tilecache/internal/config"
)

func main() {
	zoom := flag.Int("zoom", 7, "seed EPSG:900913 levels 0..zoom of the whole world")
	threads := flag.Int("threads", runtime.NumCPU()*2, "threadCount of the request")
	runs := flag.Int("runs", 3, "repetitions; the median is reported")
	backend := flag.String("backend", "embedded", "embedded or aws")
	flag.Parse()
	if err := run(*zoom, *threads, *runs, *backend); err != nil {
		fmt.Fprintln(os.Stderr, "seedbench:", err)
		os.Exit(1)
	}
}

func run(zoom, threads, runs int, backend string) error {
	var rates []float64
	var tiles int64
	for i := range runs {
		n, d, costs, err := once(zoom, threads, backend)
		if err != nil {
			return err
		}
		tiles = n
		rates = append(rates, float64(n)/d.Seconds())
		fmt.Printf("run %d: %d tiles in %v (%.0f tiles/s)%s\n", i+1, n, d.Round(time.Millisecond), rates[i], costs)
	}
	slices.Sort(rates)
	fmt.Printf("seedbench: %s backend, EPSG:900913 z0-%d, %d tiles, threadCount %d, GOMAXPROCS %d: median %.0f tiles/s, peak RSS %s\n",
		backend, zoom, tiles, threads, runtime.GOMAXPROCS(0), rates[len(rates)/2], peakRSS())
	return nil
}

func once(zoom, threads int, backend string) (int64, time.Duration, string, error) {
	dir, err := os.MkdirTemp("", "seedbench-")
	if err != nil {
		return 0, 0, "", err
	}
	defer os.RemoveAll(dir)
	users := filepath.Join(dir, "users")
	if err := auth.AddAccount(users, "bench", "bench", bcrypt.MinCost); err != nil {
		return 0, 0, "", err
	}
	env := map[string]string{"TILECACHE_DATA": dir, "TILECACHE_USERS": users, "TILECACHE_SEED_THREADS": fmt.Sprint(max(threads, 16))}
	if backend == "aws" {
		cleanup, err := awsResources(env)
		if err != nil {
			return 0, 0, "", err
		}
		defer cleanup()
	}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		return 0, 0, "", err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := app.New(ctx, cfg, log)
	if err != nil {
		return 0, 0, "", err
	}
	defer l.Close()
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	srv := httptest.NewServer(l.Handler)
	defer srv.Close()

	start := time.Now()
	body := fmt.Sprintf(`{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":%d,"format":"image/png","threadCount":%d}}`, zoom, threads)
	rows, err := call(srv.URL+"/rest/seed/demo:world.json", body)
	if err != nil {
		return 0, 0, "", err
	}
	var total int64
	for _, r := range rows {
		total += r[1]
	}
	for {
		rows, err := call(srv.URL+"/rest/seed.json", "")
		if err != nil {
			return 0, 0, "", err
		}
		active := false
		for _, r := range rows {
			if r[4] == 0 || r[4] == 1 {
				active = true
			}
			if r[4] == -1 {
				return 0, 0, "", fmt.Errorf("task %d aborted", r[3])
			}
		}
		if !active {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	cancel()
	<-done
	return total, elapsed, costs(l, total), nil
}

func call(url, body string) ([][5]int64, error) {
	method := http.MethodGet
	if body != "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth("bench", "bench")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, b)
	}
	var doc struct {
		Rows [][5]int64 `json:"long-array-array"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("decode %s: %w", b, err)
	}
	return doc.Rows, nil
}

// peakRSS reads the process's peak resident set size from /proc.
func peakRSS() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
