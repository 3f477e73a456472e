package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/state/dynamo"
	"tilecache/internal/task"
)

// statusFigures are the task status's figures: the store's List, which
// GET /rest/seed.json calls, with many finished tasks kept and many
// running.
type statusFigures struct {
	Finished, Running int
	Age               time.Duration // how long before the calls the finished tasks finished
	SetupSeconds      float64
	FirstMs           float64 // the first List (it drops old finished tasks from the index)
	FirstItems        int64
	MedianMs          float64 // median of the next ones
	Items, Requests   int64   // per call, after the first
	Listed            int
}

// runStatus creates finished tasks (jobs of 99 lanes, promoted and
// finished age before now) and running ones (layers × lanes, promoted),
// then times List as the status does (finished within the last 3 s).
func runStatus(ctx context.Context, cfg aws.Config, finished, layers, lanes int, age time.Duration) (statusFigures, error) {
	f := statusFigures{Finished: finished, Running: layers * lanes, Age: age}
	var ic itemCounter
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, ic.add) })
	table := fmt.Sprintf("scalebench-status-%d", time.Now().UnixNano())
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		return f, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		client.DeleteTable(dctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}()
	// The deployed store keeps finished tasks listed for the lanes' stale
	// time (2 minutes by default) and a minute more (internal/app/aws.go).
	store := dynamo.New(client, table, dynamo.WithFinishedKeep(3*time.Minute)).Tasks()
	start := time.Now()
	job := func(layer string, n int) (task.Job, []task.Lane) {
		ls := make([]task.Lane, n)
		for i := range ls {
			ls[i] = task.Lane{Start: int64(i), End: int64(i), Tiles: 1} // one metatile: done at its start
		}
		return task.Job{Layer: layer, Type: task.Seed, GridSetID: "EPSG:4326", Format: "image/png", ParametersID: "default",
			ZoomStop: 5, MetaWidth: 4, MetaHeight: 4, Metatiles: int64(n), Tiles: int64(n), Lanes: n}, ls
	}
	// Finished: created, promoted and finished age before each call.
	for left := finished; left > 0; {
		past := time.Now().Add(-age)
		n := min(left, 99)
		j, ls := job("bench:done", n)
		if _, _, err := store.Create(ctx, j, ls, past); err != nil {
			return f, err
		}
		ts, err := store.Promote(ctx, n, func(string) int { return n }, past)
		if err != nil {
			return f, err
		}
		for _, t := range ts {
			if _, err := store.Finish(ctx, t.ID, task.Done, past); err != nil {
				return f, err
			}
		}
		left -= n
	}
	// Running: lanes per layer, promoted now.
	now := time.Now()
	for l := range layers {
		j, ls := job(fmt.Sprintf("bench:run%d", l), lanes)
		if _, _, err := store.Create(ctx, j, ls, now); err != nil {
			return f, err
		}
	}
	if _, err := store.Promote(ctx, layers*lanes, func(string) int { return lanes }, now); err != nil {
		return f, err
	}
	f.SetupSeconds = time.Since(start).Seconds()
	live := store
	list := func() (float64, int64, int64, int, error) {
		ic.items.Store(0)
		ic.requests.Store(0)
		t0 := time.Now()
		ts, err := live.List(ctx, time.Now().Add(-3*time.Second))
		return float64(time.Since(t0).Microseconds()) / 1000, ic.items.Load(), ic.requests.Load(), len(ts), err
	}
	var err error
	if f.FirstMs, f.FirstItems, _, _, err = list(); err != nil {
		return f, err
	}
	var ms []float64
	for range 15 {
		d, items, reqs, n, err := list()
		if err != nil {
			return f, err
		}
		ms = append(ms, d)
		f.Items, f.Requests, f.Listed = items, reqs, n
	}
	slices.Sort(ms)
	f.MedianMs = ms[len(ms)/2]
	return f, nil
}

func printStatus(w io.Writer, f statusFigures) {
	fmt.Fprintf(w, "task status (List of GET /rest/seed.json): %d finished tasks kept (finished %s before), %d running (set up in %.0fs)\n", f.Finished, f.Age, f.Running, f.SetupSeconds)
	fmt.Fprintf(w, "  first call %.0f ms, %d items read (drops the old finished tasks from the index)\n", f.FirstMs, f.FirstItems)
	fmt.Fprintf(w, "  then: median %.0f ms, %d items read, %d requests, %d tasks listed per call\n", f.MedianMs, f.Items, f.Requests, f.Listed)
}
