package seed_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"tilecache/internal/seed"
)

// TestWarnsWhenLeaseOutlivesVisibility: an engine whose lane messages are
// visible again before a dead worker's lease lapses (5 checkpoint
// intervals) says so as it is made, since a redelivery is then dropped and
// the lane waits for the sweep; the defaults (60 s against 40 s) and a
// visibility just past the lease say nothing.
func TestWarnsWhenLeaseOutlivesVisibility(t *testing.T) {
	for _, c := range []struct {
		name string
		opts seed.Options
		warn bool
	}{
		{"defaults", seed.Options{}, false},
		{"visibility equal to the lease", seed.Options{CheckpointEvery: 8 * time.Second, Visibility: 40 * time.Second}, true},
		{"visibility shorter than the lease", seed.Options{CheckpointEvery: 2 * time.Second, Visibility: 4 * time.Second}, true},
		{"visibility just past the lease", seed.Options{CheckpointEvery: 2 * time.Second, Visibility: 11 * time.Second}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs strings.Builder
			seed.New(nil, nil, nil, nil, nil, c.opts, slog.New(slog.NewTextHandler(&logs, nil)))
			got := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "waits for the stale sweep")
			if got != c.warn {
				t.Errorf("warned %v, want %v; log:\n%s", got, c.warn, logs.String())
			}
		})
	}
}
