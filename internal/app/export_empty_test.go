package app_test

import (
	"context"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
)

// TestExportOfNothingStored: an export of a range where no tile is
// stored. A PMTiles archive cannot be empty (the format's directories
// must not be), so the task ends ABORTED with a failure that says why,
// leaving no archive and no staged chunk; an MBTiles archive can, and is
// written with no tile.
func TestExportOfNothingStored(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	ans := exportReq(t, a, "demo:world", exportBody("pmtiles", 2))
	wantExportFailed(t, a, ans, "none of the range's tiles is stored (blank or not seeded), and a pmtiles archive cannot be empty")
	if left := stagedKeys(t, a, "demo:world", ans.Task); len(left) != 0 {
		t.Errorf("staged chunks left: %v", left)
	}

	ans = exportReq(t, a, "demo:world", exportBody("mbtiles", 2))
	if tk := waitExport(t, a, ans.Task, 60*time.Second); tk.Status != task.Done {
		t.Fatalf("the MBTiles export of nothing stored: %+v, want DONE", tk)
	}
	rd, _ := openArchive(t, "mbtiles", archiveBytes(t, a, ans.Key), t.TempDir())
	defer rd.Close()
	n := 0
	if err := rd.Tiles(context.Background(), func(int, int64, int64, []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("the empty MBTiles: %d tiles, %v; want none", n, err)
	}
}
