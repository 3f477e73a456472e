package app_test

// Exports as tasks (issue 52): POST /rest/export/{layer}.json writes a
// layer's stored tiles to a PMTiles, MBTiles or GeoPackage archive among
// the service's own objects, as a task listed, killed and resumed as
// seeds are.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/archive"
	"tilecache/internal/archive/archivetest"
	"tilecache/internal/archive/gpkg"
	"tilecache/internal/archive/mbtiles"
	"tilecache/internal/archive/pmtiles"
	"tilecache/internal/task"
)

// exportAnswer is the answer to an export request.
type exportAnswer struct {
	Task    int64    `json:"task"`
	Layer   string   `json:"layer"`
	Archive string   `json:"archive"`
	Key     string   `json:"key"`
	Status  [5]int64 `json:"status"`
}

// exportReq posts an export request of layer and returns the answer.
func exportReq(t testing.TB, a *apptest.App, layer, body string) exportAnswer {
	t.Helper()
	res := a.Do(t, "POST", "/rest/export/"+layer+".json", body)
	if res.Status != 200 {
		t.Fatalf("POST export %s: got %d %q, want 200", body, res.Status, res.Body)
	}
	var ans exportAnswer
	if err := json.Unmarshal([]byte(res.Body), &ans); err != nil {
		t.Fatalf("export answer %q: %v", res.Body, err)
	}
	return ans
}

// archiveBytes reads the archive of an export from the store.
func archiveBytes(t testing.TB, a *apptest.App, key string) []byte {
	t.Helper()
	data, _, found := a.Get(t, strings.TrimPrefix(key, a.Prefix))
	if !found {
		t.Fatalf("no archive at %s", key)
	}
	return data
}

// openArchive opens an archive of kind from its bytes (the SQLite kinds
// through a file in dir).
func openArchive(t testing.TB, kind string, data []byte, dir string) (archive.Reader, string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(dir, fmt.Sprintf("archive-%d.%s", time.Now().UnixNano(), kind))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var rd archive.Reader
	var err error
	switch kind {
	case "pmtiles":
		rd, err = pmtiles.Open(ctx, pmtiles.ReaderAt(bytes.NewReader(data)))
	case "mbtiles":
		rd, err = mbtiles.Open(ctx, path)
	case "gpkg":
		rd, err = gpkg.Open(ctx, path, "tiles")
	}
	if err != nil {
		t.Fatalf("open the %s: %v", kind, err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd, path
}

// checkArchiveTiles checks that rd holds exactly the stored tiles of the
// tile set under prefix (rows from the bottom) at levels lo..hi, each
// byte for byte, and returns how many.
func checkArchiveTiles(t testing.TB, a *apptest.App, rd archive.Reader, prefix string, lo, hi int) int {
	t.Helper()
	stored := map[string]bool{}
	for _, k := range a.TileKeys(t, prefix) {
		var z int
		fmt.Sscanf(strings.TrimPrefix(k, prefix), "%d/", &z)
		if z >= lo && z <= hi {
			stored[k] = true
		}
	}
	n := 0
	err := rd.Tiles(context.Background(), func(z int, x, y int64, data []byte) error {
		n++
		key := fmt.Sprintf("%s%d/%d/%d.png", prefix, z, x, int64(1)<<z-1-y)
		want, _, ok := a.Get(t, key)
		if !ok || !bytes.Equal(want, data) {
			return fmt.Errorf("tile %d/%d/%d: %d bytes, the stored one (%s) %d (%v)", z, x, y, len(data), key, len(want), ok)
		}
		delete(stored, key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 0 {
		t.Errorf("%d stored tiles are not in the archive", len(stored))
	}
	return n
}

// waitExport waits until export task id finishes and returns its record.
func waitExport(t testing.TB, a *apptest.App, id int64, timeout time.Duration) task.Task {
	t.Helper()
	return waitFinished(t, a, []int64{id}, timeout)[0]
}

// stagedKeys lists what is staged of the export of task id of layer.
func stagedKeys(t testing.TB, a *apptest.App, layerID string, id int64) []string {
	t.Helper()
	return a.Keys(t, fmt.Sprintf("_tilecache/exports/%s/%d.stage/", layerID, id))
}

// TestExportTask: the stored tiles of a seeded layer are exported by
// the workers to PMTiles, MBTiles and GeoPackage archives among the
// service's own objects (_tilecache/exports/), each tile byte-identical
// to the stored one at its row from the top and nothing else, with the
// layer's metadata; each export is a task of its own type with exact
// counts, listed by request; its staged chunks are gone once it is done;
// GDAL reads the MBTiles and the GeoPackage.
func TestExportTask(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	rows := seedReq(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":3}}`)
	waitFinished(t, a, ids(rows), 60*time.Second)
	prefix := "demo:world/EPSG:900913/png/default/"
	if n := len(a.TileKeys(t, prefix)); n != 85 {
		t.Fatalf("%d tiles stored, want 85", n)
	}
	dir := t.TempDir()
	for _, kind := range []string{"pmtiles", "mbtiles", "gpkg"} {
		start := time.Now()
		ans := exportReq(t, a, "demo:world", `{"exportRequest":{"gridSetId":"EPSG:900913","format":"image/png","zoomStart":0,"zoomStop":3,"archive":"`+kind+`"}}`)
		if ans.Archive != kind || ans.Layer != "demo:world" || ans.Status[1] != 85 || ans.Status[3] != ans.Task ||
			ans.Key != fmt.Sprintf("%s_tilecache/exports/demo:world/%d.%s", a.Prefix, ans.Task, kind) {
			t.Fatalf("%s: answer %+v", kind, ans)
		}
		tk := waitExport(t, a, ans.Task, 60*time.Second)
		t.Logf("%s: 85 tiles exported in %s", kind, time.Since(start).Round(time.Millisecond))
		if tk.Status != task.Done || tk.Type != task.Export || tk.Done != 85 || tk.Total != 85 || tk.Cursor != tk.End {
			t.Fatalf("%s: task %+v, want a DONE export of 85 of 85 tiles", kind, tk)
		}
		if left := stagedKeys(t, a, "demo:world", ans.Task); len(left) != 0 {
			t.Errorf("%s: staged chunks left: %v", kind, left)
		}
		data := archiveBytes(t, a, ans.Key)
		rd, path := openArchive(t, kind, data, dir)
		if n := checkArchiveTiles(t, a, rd, prefix, 0, 3); n != 85 {
			t.Errorf("%s: %d tiles in the archive, want 85", kind, n)
		}
		md, err := rd.Metadata(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if md.Format != "png" || md.MinZoom != 0 || md.MaxZoom != 3 || kind != "gpkg" && (md.Bounds[0] > -179.9 || md.Bounds[3] < 85 || md.Name == "") {
			t.Errorf("%s: metadata %+v", kind, md)
		}
		if kind != "pmtiles" {
			gdal := archivetest.RequireGDAL(t)
			var info struct {
				Driver string `json:"driverShortName"`
				Size   []int  `json:"size"`
			}
			if err := json.Unmarshal(gdal.Run(t, gdal.Info, "-json", path), &info); err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{"mbtiles": "MBTiles", "gpkg": "GPKG"}[kind]; info.Driver != want || len(info.Size) != 2 || info.Size[0] != 2048 {
				t.Errorf("gdalinfo of the %s: driver %s, size %v; want %s, 2048 pixels wide (level 3)", kind, info.Driver, info.Size, want)
			}
		}
	}
	// The status folded by request lists the exports as EXPORT.
	res := a.Do(t, "GET", "/rest/seed.json?requests=1", "")
	if res.Status != 200 || strings.Count(res.Body, `"type":"EXPORT"`) != 3 {
		t.Errorf("GET /rest/seed.json?requests=1: %d %s, want the three exports of type EXPORT", res.Status, res.Body)
	}
	// A part of the layer: the north-east quarter of level 2.
	ans := exportReq(t, a, "demo:world", `{"exportRequest":{"gridSetId":"EPSG:900913","zoomStart":2,"zoomStop":2,"bounds":{"coords":{"double":[1,1,20037508,20037508]}},"archive":"pmtiles"}}`)
	if tk := waitExport(t, a, ans.Task, 30*time.Second); tk.Status != task.Done || tk.Done != 4 {
		t.Fatalf("export of a quarter: %+v", tk)
	}
	rd, _ := openArchive(t, "pmtiles", archiveBytes(t, a, ans.Key), dir)
	n := 0
	rd.Tiles(context.Background(), func(z int, x, y int64, _ []byte) error {
		if z != 2 || x < 2 || y > 1 {
			t.Errorf("tile %d/%d/%d is outside the north-east quarter of level 2", z, x, y)
		}
		n++
		return nil
	})
	if n != 4 {
		t.Errorf("%d tiles in the quarter's archive, want 4", n)
	}
}

// TestExportRefusals: an export request that cannot be worked is
// refused with a status and a message naming the problem, and records
// nothing.
func TestExportRefusals(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	for _, c := range []struct {
		layer, body string
		status      int
		says        string
	}{
		{"no:such", `{"exportRequest":{"zoomStart":0,"zoomStop":1,"archive":"pmtiles"}}`, 404, "Unknown layer: no:such"},
		{"demo:world", `{"exportRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":1,"archive":"zip"}}`, 400, "Unknown archive"},
		{"demo:world", `{"exportRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":1}}`, 400, "archive is required"},
		{"demo:world", `{"exportRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":1,"archive":"pmtiles"}}`, 400, "GeoPackage"},
		{"demo:world", `{"exportRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":1,"archive":"mbtiles"}}`, 400, "EPSG:4326"},
		{"demo:world", `{"exportRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":1,"archive":"pmtiles","threadCount":4}}`, 400, "threadCount"},
		{"demo:world", `{"exportRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"archive":"pmtiles"}}`, 400, "zoomStop is required"},
		{"demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`, 400, "exportRequest"},
	} {
		res := a.Do(t, "POST", "/rest/export/"+c.layer+".json", c.body)
		if res.Status != c.status || !strings.Contains(res.Body, c.says) {
			t.Errorf("POST /rest/export/%s.json %s: got %d %q, want %d naming %q", c.layer, c.body, res.Status, res.Body, c.status, c.says)
		}
	}
	if rows := listRows(t, a, "/rest/seed.json"); len(rows) != 0 {
		t.Errorf("refused exports recorded tasks: %v", rows)
	}
	// A viewer may not export; an operator may.
	body := `{"exportRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":0,"archive":"pmtiles"}}`
	if res := a.DoAuth(t, apptest.ViewerUser, apptest.Password, "POST", "/rest/export/demo:world.json", body, "Content-Type", "application/json"); res.Status != 403 {
		t.Errorf("a viewer's export: got %d %q, want 403", res.Status, res.Body)
	}
	if res := a.DoAuth(t, apptest.OperatorUser, apptest.Password, "POST", "/rest/export/demo:world.json", body, "Content-Type", "application/json"); res.Status != 200 {
		t.Errorf("an operator's export: got %d %q, want 200", res.Status, res.Body)
	}
}
