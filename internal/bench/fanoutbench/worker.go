package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"tilecache/internal/app"
	"tilecache/internal/bench/benchenv"
	"tilecache/internal/config"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/tilestore/s3store"
)

// report is what a worker process prints when it stops: the requests its
// adapters made and the resources it used.
type report struct {
	DynamoWrites int64            `json:"dynamoWrites"`
	WritesByOp   map[string]int64 `json:"writesByOp"`
	S3Requests   int64            `json:"s3Requests"`
	S3Puts       int64            `json:"s3Puts"`
	SQSSent      int64            `json:"sqsSent"`
	CPUSeconds   float64          `json:"cpuSeconds"`
	PeakRSSMiB   float64          `json:"peakRSSMiB"`
}

// readyLine is what a worker process prints on stdout once it works the
// lane queue.
const readyLine = "fanoutbench worker ready"

// worker runs the worker path of the program (app.NewWorker and
// Program.Run: what `tilecache serve` runs besides its HTTP server; the
// worker function runs the same engine per SQS batch) configured by the
// environment, until SIGTERM. It prints its counts as one JSON line on
// SIGUSR1 and when it stops.
func worker() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := config.Load(os.LookupEnv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("FANOUTBENCH_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	p, err := app.NewWorker(ctx, cfg, log)
	if err != nil {
		return fmt.Errorf("start the worker: %w", err)
	}
	defer p.Close()
	var out sync.Mutex // one line at a time on stdout
	print := func(v any) error {
		out.Lock()
		defer out.Unlock()
		return json.NewEncoder(os.Stdout).Encode(v)
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			print(counts(p))
		}
	}()
	out.Lock()
	fmt.Println(readyLine)
	out.Unlock()
	if err := p.Run(ctx); err != nil {
		return fmt.Errorf("run the worker: %w", err)
	}
	signal.Stop(usr1)
	return print(counts(p))
}

// counts returns the worker's counts so far.
func counts(p *app.Program) report {
	var r report
	if s, ok := p.Tiles.(*s3store.Store); ok {
		c := s.Requests()
		r.S3Requests, r.S3Puts = c.Total(), c.Put
	}
	if d := p.Writes; d != nil {
		r.DynamoWrites, r.WritesByOp = d.Writes(), d.WritesByOp()
	}
	if q, ok := p.Queue.(*sqsqueue.Queue); ok {
		r.SQSSent = q.Sent()
	}
	r.CPUSeconds, r.PeakRSSMiB = benchenv.SelfCPU(), benchenv.StatusMiB("VmHWM")
	return r
}
