// Package embedded opens the embedded backends of `tilecache serve`: the
// tile directory, one bbolt file for the state and an in-process queue.
// Only what runs locally links it (package app, tests): no function does.
package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"tilecache/internal/app/backends"
	"tilecache/internal/app/backends/admin"
	"tilecache/internal/app/backends/scheduling"
	"tilecache/internal/audit"
	"tilecache/internal/queue/memqueue"
	"tilecache/internal/state/bolt"
	"tilecache/internal/tilestore/filestore"
)

// Open opens the tile directory and the bbolt file under dir,
// with an in-process queue.
func Open(dir string) (backends.Backends, error) {
	b, err := OpenAdmin(dir)
	return b.Backends.Backends, err
}

// OpenAdmin is Open with the schedules and the administration's state in
// the same bbolt file (a file is opened once per process).
func OpenAdmin(dir string) (admin.Backends, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return admin.Backends{}, fmt.Errorf("create data directory: %w", err)
	}
	tiles, err := filestore.New(filepath.Join(dir, "tiles"))
	if err != nil {
		return admin.Backends{}, fmt.Errorf("open tile directory: %w", err)
	}
	db, err := bolt.Open(filepath.Join(dir, "tilecache.db"))
	if err != nil {
		return admin.Backends{}, err
	}
	return admin.Backends{
		Backends: scheduling.Backends{
			Backends:  backends.Backends{Tiles: tiles, State: State(db), Queue: memqueue.New(), RecoverAll: true, Close: db.Close},
			Schedules: db.Schedules(),
		},
		Admin: Admin(db),
	}, nil
}

// State is the state adapters in db.
func State(db *bolt.DB) backends.State {
	return backends.State{Tasks: db.Tasks(), Usage: db.Usage(), Config: db.Config(), Claims: db.Claims(), ReadMarks: db.ReadMarks()}
}

// Admin is the administration's state adapters in db.
func Admin(db *bolt.DB) admin.State {
	return admin.State{Audit: func(d time.Duration) audit.Store { return db.Audit(d) }, Tokens: db.Tokens(), Accounts: db.Accounts()}
}
