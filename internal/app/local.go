// Package app wires tilecache together: it is the only package that knows
// every adapter. NewLocal builds the one-process program of `tilecache
// serve` on the embedded backends: the REST handler, the lane workers and
// the sweeper.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tilecache/internal/auth"
	"tilecache/internal/config"
	"tilecache/internal/layer"
	"tilecache/internal/queue/memqueue"
	"tilecache/internal/rest"
	"tilecache/internal/seed"
	"tilecache/internal/source"
	"tilecache/internal/source/testpattern"
	"tilecache/internal/task/boltstore"
	"tilecache/internal/tilestore/filestore"
)

// Local is the one-process program on the embedded backends.
type Local struct {
	// Handler serves the REST interface (behind Basic auth) under the
	// configured base path, and 404 elsewhere.
	Handler http.Handler
	// Engine is the seeding engine, for tests and tools.
	Engine *seed.Engine
	// Tiles is the tile directory.
	Tiles *filestore.Store
	// Tasks is the task store.
	Tasks *boltstore.Store
	// Queue carries lane messages.
	Queue *memqueue.Queue

	cfg config.Config
	log *slog.Logger
}

// NewLocal opens the embedded backends under cfg.DataDir and wires the
// program. Close releases them.
func NewLocal(ctx context.Context, cfg config.Config, log *slog.Logger) (*Local, error) {
	layers, err := layer.Load(cfg.LayersFile)
	if err != nil {
		return nil, err
	}
	sources, err := Sources(layers)
	if err != nil {
		return nil, err
	}
	users, err := auth.LoadFile(cfg.UsersFile)
	if err != nil {
		return nil, fmt.Errorf("load accounts (create one with `tilecache useradd`): %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	tiles, err := filestore.New(filepath.Join(cfg.DataDir, "tiles"))
	if err != nil {
		return nil, fmt.Errorf("open tile directory: %w", err)
	}
	tasks, err := boltstore.Open(filepath.Join(cfg.DataDir, "tilecache.db"))
	if err != nil {
		return nil, err
	}
	q := memqueue.New()
	engine := seed.New(layers, sources, tasks, q, tiles, seed.Options{
		PoolSize: cfg.SeedThreads, KeyPrefix: cfg.KeyPrefix, CheckpointEvery: cfg.Checkpoint,
		Slice: cfg.Slice, StaleAfter: cfg.StaleAfter,
	}, log)
	api := users.Middleware(rest.New(engine, tasks, rest.Options{BasePath: cfg.BasePath}, log))
	return &Local{Handler: mount(cfg.BasePath, api), Engine: engine, Tiles: tiles, Tasks: tasks, Queue: q, cfg: cfg, log: log}, nil
}

// mount serves api for base+"/rest" and everything below it.
func mount(base string, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, base)
		if !ok || (rest != "/rest" && !strings.HasPrefix(rest, "/rest/")) {
			http.Error(w, "Not found: "+r.URL.Path+" (the administration interface is under "+base+"/rest)", http.StatusNotFound)
			return
		}
		if base == "" {
			api.ServeHTTP(w, r)
			return
		}
		http.StripPrefix(base, api).ServeHTTP(w, r)
	})
}

// Sources builds the source of every layer.
func Sources(layers *layer.Catalogue) (map[string]source.Source, error) {
	out := map[string]source.Source{}
	var errs []error
	for _, name := range layers.Names() {
		l, _ := layers.Layer(name)
		switch l.SourceType {
		case "testpattern":
			s, err := testpattern.New(&l.Source)
			if err != nil {
				errs = append(errs, fmt.Errorf("layer %s: %w", name, err))
				continue
			}
			out[name] = s
		default:
			errs = append(errs, fmt.Errorf("layer %s: unknown source type %q (known: testpattern)", name, l.SourceType))
		}
	}
	return out, errors.Join(errs...)
}

// Run recovers the lanes the previous process left RUNNING, then works
// lane messages with the pool's threads and sweeps stale lanes until ctx
// ends.
func (l *Local) Run(ctx context.Context) error {
	if err := l.Engine.Recover(ctx); err != nil {
		return fmt.Errorf("recover tasks: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Engine.RunWorkers(ctx, l.cfg.SeedThreads)
	}()
	tick := time.NewTicker(max(l.cfg.StaleAfter/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			<-done
			return nil
		case <-tick.C:
			if err := l.Engine.Sweep(ctx); err != nil && ctx.Err() == nil {
				l.log.Error("sweep", "err", err)
			}
		}
	}
}

// Close releases the embedded backends. Call it after Run returned.
func (l *Local) Close() error { return l.Tasks.Close() }

// Serve runs `tilecache serve`: the REST interface on cfg.Addr plus the
// workers, until ctx ends; then it shuts down gracefully.
func Serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	l, err := NewLocal(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer l.Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{Handler: l.Handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	runErr := make(chan error, 1)
	go func() { runErr <- l.Run(runCtx) }()
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	log.Info("tilecache serving", "url", "http://"+ln.Addr().String()+cfg.BasePath+"/rest", "data", cfg.DataDir,
		"seed_threads", cfg.SeedThreads, "backend", cfg.Backend)
	select {
	case <-ctx.Done():
	case err := <-srvErr:
		return fmt.Errorf("serve http: %w", err)
	case err := <-runErr:
		if err != nil {
			return err
		}
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutCtx)
	stopRun()
	if rerr := <-runErr; rerr != nil && err == nil {
		err = rerr
	}
	log.Info("tilecache stopped")
	return err
}
