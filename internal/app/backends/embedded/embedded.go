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
	"tilecache/internal/audit"
	"tilecache/internal/queue/memqueue"
	"tilecache/internal/state/bolt"
	"tilecache/internal/tilestore/filestore"
)

// Open opens the tile directory and the bbolt file under dir,
// with an in-process queue.
func Open(dir string) (backends.Backends, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return backends.Backends{}, fmt.Errorf("create data directory: %w", err)
	}
	tiles, err := filestore.New(filepath.Join(dir, "tiles"))
	if err != nil {
		return backends.Backends{}, fmt.Errorf("open tile directory: %w", err)
	}
	db, err := bolt.Open(filepath.Join(dir, "tilecache.db"))
	if err != nil {
		return backends.Backends{}, err
	}
	return backends.Backends{Tiles: tiles, State: State(db), Queue: memqueue.New(), RecoverAll: true, Close: db.Close}, nil
}

// State is the state adapters in db.
func State(db *bolt.DB) backends.State {
	return backends.State{Tasks: db.Tasks(), Usage: db.Usage(), Schedules: db.Schedules(), Config: db.Config(), Claims: db.Claims(), ReadMarks: db.ReadMarks(),
		Audit: func(d time.Duration) audit.Store { return db.Audit(d) }, Tokens: db.Tokens(), Accounts: db.Accounts()}
}
