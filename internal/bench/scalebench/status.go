package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/state/bolt"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/task"
)

// statusFigures are the task status's figures: the store's List, which
// GET /rest/seed.json calls, with many finished tasks kept and many
// running.
type statusFigures struct {
	Finished, Running int
	Age               time.Duration // how long before the calls the finished tasks finished
	Table             string
	SetupSeconds      float64
	FirstMs           float64 // the first List (it drops old finished tasks from the index)
	FirstItems        int64
	MedianMs          float64 // median of the next ones
	MedianServerMs    float64 // median of the same calls' time in HTTP round trips (DynamoDB Local answering)
	Items, Requests   int64   // per call, after the first
	Listed            int
}

// statusRun says how runStatus runs.
type statusRun struct {
	Finished, Layers, Lanes int
	Age                     time.Duration
	Table                   string // an existing table to time List on (no set-up); "" makes one
	Keep                    bool   // leave the table made for a later -status-table run
	Calls                   int    // timed calls after the first
	CPUProfile              string // a CPU profile of the timed calls, when set
	Bolt                    bool   // the embedded store (a bbolt file in a temporary directory) instead
}

// roundTrips times the HTTP round trips of a client, the whole answer
// body read: the time DynamoDB Local takes to answer plus the transfer,
// without the client's decoding.
type roundTrips struct {
	next http.RoundTripper
	ns   atomic.Int64
}

func (rt *roundTrips) RoundTrip(r *http.Request) (*http.Response, error) {
	t0 := time.Now()
	resp, err := rt.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	rt.ns.Add(int64(time.Since(t0)))
	return resp, nil
}

// runStatus creates finished tasks (jobs of 99 lanes, promoted and
// finished age before now) and running ones (layers × lanes, promoted),
// then times List as the status does (finished within the last 3 s).
func runStatus(ctx context.Context, cfg aws.Config, r statusRun) (statusFigures, error) {
	if r.Bolt {
		return runStatusBolt(ctx, r)
	}
	f := statusFigures{Finished: r.Finished, Running: r.Layers * r.Lanes, Age: r.Age}
	var ic itemCounter
	rt := &roundTrips{next: http.DefaultTransport}
	cfg.HTTPClient = &http.Client{Transport: rt}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, ic.add) })
	table := r.Table
	if table == "" {
		table = fmt.Sprintf("scalebench-status-%d", time.Now().UnixNano())
		if err := dynamo.CreateTable(ctx, client, table); err != nil {
			return f, err
		}
		if !r.Keep {
			defer func() {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
				defer cancel()
				client.DeleteTable(dctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
			}()
		}
	}
	f.Table = table
	// The deployed store keeps finished tasks listed for the lanes' stale
	// time (2 minutes by default) and a minute more (internal/app/aws.go).
	store := dynamo.New(client, table, dynamo.WithFinishedKeep(3*time.Minute)).Tasks()
	if r.Table == "" {
		start := time.Now()
		if err := statusSetup(ctx, store, r); err != nil {
			return f, err
		}
		f.SetupSeconds = time.Since(start).Seconds()
	}
	list := func() (float64, float64, int64, int64, int, error) {
		ic.items.Store(0)
		ic.requests.Store(0)
		rt.ns.Store(0)
		t0 := time.Now()
		ts, err := store.List(ctx, time.Now().Add(-3*time.Second))
		return float64(time.Since(t0).Microseconds()) / 1000, float64(rt.ns.Load()) / 1e6, ic.items.Load(), ic.requests.Load(), len(ts), err
	}
	var err error
	if f.FirstMs, _, f.FirstItems, _, _, err = list(); err != nil {
		return f, err
	}
	if r.CPUProfile != "" {
		pf, err := os.Create(r.CPUProfile)
		if err != nil {
			return f, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return f, err
		}
		defer pprof.StopCPUProfile()
	}
	var ms, server []float64
	for range max(r.Calls, 1) {
		d, sd, items, reqs, n, err := list()
		if err != nil {
			return f, err
		}
		ms, server = append(ms, d), append(server, sd)
		f.Items, f.Requests, f.Listed = items, reqs, n
	}
	slices.Sort(ms)
	slices.Sort(server)
	f.MedianMs, f.MedianServerMs = ms[len(ms)/2], server[len(server)/2]
	return f, nil
}

// runStatusBolt is runStatus on the embedded store: the same tasks in a
// bbolt file, the same List calls (no requests to count).
func runStatusBolt(ctx context.Context, r statusRun) (statusFigures, error) {
	f := statusFigures{Finished: r.Finished, Running: r.Layers * r.Lanes, Age: r.Age, Table: "bbolt"}
	dir, err := os.MkdirTemp("", "scalebench-status-")
	if err != nil {
		return f, err
	}
	defer os.RemoveAll(dir)
	db, err := bolt.Open(dir + "/state.db")
	if err != nil {
		return f, err
	}
	defer db.Close()
	store := db.Tasks()
	start := time.Now()
	if err := statusSetup(ctx, store, r); err != nil {
		return f, err
	}
	f.SetupSeconds = time.Since(start).Seconds()
	list := func() (float64, int, error) {
		t0 := time.Now()
		ts, err := store.List(ctx, time.Now().Add(-3*time.Second))
		return float64(time.Since(t0).Microseconds()) / 1000, len(ts), err
	}
	if f.FirstMs, _, err = list(); err != nil {
		return f, err
	}
	var ms []float64
	for range max(r.Calls, 1) {
		d, n, err := list()
		if err != nil {
			return f, err
		}
		ms, f.Listed = append(ms, d), n
	}
	slices.Sort(ms)
	f.MedianMs = ms[len(ms)/2]
	return f, nil
}

// statusSetup writes the finished and running tasks of r.
func statusSetup(ctx context.Context, store task.Store, r statusRun) error {
	job := func(layer string, n int) (task.Job, []task.Lane) {
		ls := make([]task.Lane, n)
		for i := range ls {
			ls[i] = task.Lane{Start: int64(i), End: int64(i), Tiles: 1} // one metatile: done at its start
		}
		return task.NewSeed(task.Header{Layer: layer, Metatiles: int64(n), Tiles: int64(n), Lanes: n},
			task.Range{GridSetID: "EPSG:4326", Format: "image/png", ParametersID: "default", ZoomStop: 5, MetaWidth: 4, MetaHeight: 4},
			task.Render{}), ls
	}
	// Finished: created, promoted and finished age before each call.
	for left := r.Finished; left > 0; {
		past := time.Now().Add(-r.Age)
		n := min(left, 99)
		j, ls := job("bench:done", n)
		if _, _, err := store.Create(ctx, j, ls, past); err != nil {
			return err
		}
		ts, err := store.Promote(ctx, n, func(string) int { return n }, past)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if _, err := store.Finish(ctx, t.ID, task.Done, past); err != nil {
				return err
			}
		}
		left -= n
	}
	// Running: lanes per layer, promoted now.
	now := time.Now()
	for l := range r.Layers {
		j, ls := job(fmt.Sprintf("bench:run%d", l), r.Lanes)
		if _, _, err := store.Create(ctx, j, ls, now); err != nil {
			return err
		}
	}
	_, err := store.Promote(ctx, r.Layers*r.Lanes, func(string) int { return r.Lanes }, now)
	return err
}

func printStatus(w io.Writer, f statusFigures) {
	fmt.Fprintf(w, "task status (List of GET /rest/seed.json): %d finished tasks kept (finished %s before), %d running, table %s (set up in %.0fs)\n", f.Finished, f.Age, f.Running, f.Table, f.SetupSeconds)
	fmt.Fprintf(w, "  first call %.0f ms, %d items read (drops the old finished tasks from the index)\n", f.FirstMs, f.FirstItems)
	fmt.Fprintf(w, "  then: median %.0f ms, %d items read, %d requests, %d tasks listed per call\n", f.MedianMs, f.Items, f.Requests, f.Listed)
	fmt.Fprintf(w, "  of which HTTP round trips (DynamoDB Local answering): median %.0f ms; %.3f ms an item in all, %.3f ms an item answering\n",
		f.MedianServerMs, f.MedianMs/float64(max(f.Items, 1)), f.MedianServerMs/float64(max(f.Items, 1)))
}
