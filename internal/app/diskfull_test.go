package app_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/testenv"
)

// TestSeedOnAFullDisk: the embedded backend's tiles on a small file system
// (a tmpfs of its own) that fills up mid-seed. The seed fails clearly (the
// log names the full disk, the task stays RUNNING, nothing is marked done
// that is not stored) and, once space is freed, finishes with every tile
// stored and usage equal to what is stored.
func TestSeedOnAFullDisk(t *testing.T) {
	t.Parallel()
	if apptest.AWSPass() {
		t.Skip("a test of the embedded backend")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting a small file system needs root")
	}
	dir := t.TempDir()
	tiles := filepath.Join(dir, "tiles")
	if err := os.MkdirAll(tiles, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", tiles).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", tiles).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", tiles, err, out)
		}
	})
	// Leave about 300 KB: a few hundred tiles fit.
	filler := filepath.Join(tiles, "filler")
	if err := os.WriteFile(filler, make([]byte, 32<<20-300<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &apptest.LogBuffer{}
	// Lane messages back after 1 s, and checkpoints every 100 ms, so that
	// the lease (5 checkpoints) has lapsed when a message comes back.
	a := apptest.Start(t, apptest.Options{Layers: quotaLayers, DataDir: dir, Backend: "embedded", SeedThreads: 2,
		Checkpoint: 100 * time.Millisecond, Log: logs, Env: map[string]string{"TILECACHE_LANE_VISIBILITY": "1s"}})
	waitSettled(t, a)
	rows := seedReq(t, a, "quota:world", `{"seedRequest":{"zoomStart":0,"zoomStop":5,"threadCount":2}}`)
	testenv.Eventually(t, time.Minute, "the disk to fill up", func() bool { return strings.Contains(logs.String(), "no space left on device") })
	for _, id := range ids(rows) {
		tk, err := a.Local.Tasks.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status == task.Done || tk.Status == task.Aborted {
			t.Fatalf("task %d is %s on a full disk, want it RUNNING (waiting for space)", id, tk.Status)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", tail(logs.String(), 4000))
		}
	})
	for _, tk := range waitFinished(t, a, ids(rows), 2*time.Minute) {
		if tk.Status != task.Done || tk.Done != tk.Total {
			t.Errorf("task %d: %s with %d of %d tiles, want DONE with all", tk.ID, tk.Status, tk.Done, tk.Total)
		}
	}
	const want = 2 + 8 + 32 + 128 + 512 + 2048 // EPSG:4326 z0-5
	if n := len(a.TileKeys(t, "quota:world/")); n != want {
		t.Errorf("stored %d tiles, want %d", n, want)
	}
	r := waitSettled(t, a)
	if l := r.layer("quota:world"); l.UsedTiles != want {
		t.Errorf("usage %+v, want %d tiles", l, want)
	}
	wantNoDrift(t, a, "after the full disk", "quota:world", r.DiskBlockSize)
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
