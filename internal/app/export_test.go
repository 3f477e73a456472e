package app_test

// Exports as tasks (issue 52): POST /rest/export/{layer}.json writes a
// layer's stored tiles to a PMTiles, MBTiles or GeoPackage archive among
// the service's own objects, as a task listed, killed and resumed as
// seeds are.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"

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

// goPMTilesReads has go-pmtiles, the format's reference tool, verify the
// archive at path and read its tiles of levels 0..hi by z/x/y: each is
// the stored one, byte for byte.
func goPMTilesReads(t testing.TB, a *apptest.App, path, prefix string, hi int) {
	t.Helper()
	cli := testenv.RequirePMTilesCLI(t)
	cli.Run(t, "verify", path)
	for z := 0; z <= hi; z++ {
		for x := int64(0); x < 1<<z; x++ {
			for y := int64(0); y < 1<<z; y++ {
				got := cli.Run(t, "tile", path, fmt.Sprint(z), fmt.Sprint(x), fmt.Sprint(y))
				key := fmt.Sprintf("%s%d/%d/%d.png", prefix, z, x, int64(1)<<z-1-y)
				want, _, ok := a.Get(t, key)
				if !ok || !bytes.Equal(got, want) {
					t.Fatalf("go-pmtiles tile %d/%d/%d: %d bytes, the stored one (%s) %d (%v)", z, x, y, len(got), key, len(want), ok)
				}
			}
		}
	}
}

// waitExport waits until export task id finishes and returns its record.
func waitExport(t testing.TB, a *apptest.App, id int64, timeout time.Duration) task.Task {
	t.Helper()
	return waitFinished(t, a, []int64{id}, timeout)[0]
}

// stagedKeys lists what is staged of the export of task id of layer.
func stagedKeys(t testing.TB, a *apptest.App, layerID string, id int64) []string {
	t.Helper()
	return a.Keys(t, fmt.Sprintf("_tilecache/export-stages/%s/%d/", layerID, id))
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
		// Private: not among the objects served.
		if res := a.DoAuth(t, "", "", "GET", "/"+strings.TrimPrefix(ans.Key, a.Prefix), ""); res.Status != 404 {
			t.Errorf("%s: GET of the archive's key answered %d, want 404", kind, res.Status)
		}
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
		if kind == "pmtiles" {
			goPMTilesReads(t, a, path, prefix, 2)
		} else {
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
	// A GeoPackage of another grid set (EPSG:4326: 2^(z+1) × 2^z tiles),
	// its tile matrix set the grid set's.
	rows = seedReq(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2}}`)
	waitFinished(t, a, ids(rows), 60*time.Second)
	geo := exportReq(t, a, "demo:world", `{"exportRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2,"archive":"gpkg"}}`)
	if tk := waitExport(t, a, geo.Task, 30*time.Second); tk.Status != task.Done || tk.Done != 2+8+32 {
		t.Fatalf("GeoPackage of EPSG:4326: %+v", tk)
	}
	grd, gpath := openArchive(t, "gpkg", archiveBytes(t, a, geo.Key), dir)
	if n := checkArchiveTiles(t, a, grd, "demo:world/EPSG:4326/png/default/", 0, 2); n != 42 {
		t.Errorf("GeoPackage of EPSG:4326: %d tiles, want 42", n)
	}
	gdal := archivetest.RequireGDAL(t)
	var info struct {
		Size []int `json:"size"`
		CRS  struct {
			WKT string `json:"wkt"`
		} `json:"coordinateSystem"`
	}
	if err := json.Unmarshal(gdal.Run(t, gdal.Info, "-json", gpath), &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Size) != 2 || info.Size[0] != 2048 || info.Size[1] != 1024 || !strings.Contains(info.CRS.WKT, `ID["EPSG",4326]`) {
		t.Errorf("gdalinfo of the EPSG:4326 GeoPackage: size %v, CRS %.80q; want 2048×1024 in EPSG:4326", info.Size, info.CRS.WKT)
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
	// A body a page on another site could post (text/plain) is refused,
	// naming what the request is.
	if res := a.Do(t, "POST", "/rest/export/demo:world.json", `{"exportRequest":{}}`, "Content-Type", "text/plain"); res.Status != 415 ||
		!strings.Contains(res.Body, "an export request here must be sent as application/json") {
		t.Errorf("an export sent as text/plain: got %d %q, want 415 naming an export request", res.Status, res.Body)
	}
	// A viewer may not export; an operator may.
	body := `{"exportRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":0,"archive":"pmtiles"}}`
	if res := a.DoAuth(t, apptest.ViewerUser, apptest.Password, "POST", "/rest/export/demo:world.json", body, "Content-Type", "application/json"); res.Status != 403 {
		t.Errorf("a viewer's export: got %d %q, want 403", res.Status, res.Body)
	}
	if res := a.DoAuth(t, apptest.OperatorUser, apptest.Password, "POST", "/rest/export/demo:world.json", body, "Content-Type", "application/json"); res.Status != 200 {
		t.Errorf("an operator's export: got %d %q, want 200", res.Status, res.Body)
	}
	// As XML, answered in XML.
	res := a.Do(t, "POST", "/rest/export/demo:world.xml", `<exportRequest><gridSetId>EPSG:900913</gridSetId><zoomStart>0</zoomStart><zoomStop>0</zoomStop><archive>mbtiles</archive></exportRequest>`)
	if res.Status != 200 || !strings.Contains(res.Body, "<exportTask>") || !strings.Contains(res.Body, "<archive>mbtiles</archive>") ||
		!strings.Contains(res.Body, "<key>"+a.Prefix+"_tilecache/exports/demo:world/") {
		t.Errorf("an XML export request: got %d %q", res.Status, res.Body)
	}
}

// seedWorld seeds demo:world's EPSG:900913 PNG tiles of levels 0..z and
// returns their count.
func seedWorld(t testing.TB, a *apptest.App, z int) int {
	t.Helper()
	start := time.Now()
	rows := seedReq(t, a, "demo:world", fmt.Sprintf(`{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":%d,"threadCount":2}}`, z))
	for _, tk := range waitFinished(t, a, ids(rows), 120*time.Second) {
		if tk.Status != task.Done {
			t.Fatalf("seed task %+v", tk)
		}
	}
	n := len(a.TileKeys(t, "demo:world/EPSG:900913/png/default/"))
	t.Logf("seeded %d tiles in %s", n, time.Since(start).Round(time.Millisecond))
	return n
}

// exportBody is the export request of demo:world's EPSG:900913 PNG tiles
// of levels 0..z to an archive of kind.
func exportBody(kind string, z int) string {
	return fmt.Sprintf(`{"exportRequest":{"gridSetId":"EPSG:900913","format":"image/png","zoomStart":0,"zoomStop":%d,"archive":"%s"}}`, z, kind)
}

// midway waits until export task id has worked part of its lane and not
// all of it, reading the task store every millisecond, and returns the
// task as it was then.
func midway(t testing.TB, a *apptest.App, id int64) task.Task {
	t.Helper()
	var tk task.Task
	testenv.EventuallyEvery(t, 60*time.Second, time.Millisecond, fmt.Sprintf("export task %d to make progress", id), func() bool {
		var err error
		if tk, err = a.Local.Tasks.Get(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if tk.Cursor >= tk.End || !tk.Status.Active() {
			t.Fatalf("export task %d ended before the test could stop it mid-way: %+v", id, tk)
		}
		return tk.Cursor > 0
	})
	return tk
}

// TestExportResumesAfterRestart: an export whose process stops mid-way
// (its worker with it) is taken over by the next process from its last
// checkpoint, and ends with the same archive bytes as an export that
// never stopped: PMTiles and MBTiles.
func TestExportResumesAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := apptest.Options{DataDir: dir, StaleAfter: 2 * time.Second}
	a := apptest.Start(t, opts)
	tiles := seedWorld(t, a, 5)
	for _, kind := range []string{"pmtiles", "mbtiles"} {
		start := time.Now()
		ref := exportReq(t, a, "demo:world", exportBody(kind, 5))
		if tk := waitExport(t, a, ref.Task, 120*time.Second); tk.Status != task.Done || tk.Done != int64(tiles) {
			t.Fatalf("%s: the uninterrupted export: %+v", kind, tk)
		}
		took := time.Since(start)
		t.Logf("%s: %d tiles exported in %s (%.0f tiles/s)", kind, tiles, took.Round(time.Millisecond), float64(tiles)/took.Seconds())
		want := archiveBytes(t, a, ref.Key)

		ans := exportReq(t, a, "demo:world", exportBody(kind, 5))
		mid := midway(t, a, ans.Task)
		a.Stop()
		t.Logf("%s: stopped at metatile %d of %d", kind, mid.Cursor, mid.End)
		a = apptest.Start(t, opts)
		// The lane is taken over once its lease lapses: it cannot have
		// ended yet, unless it ended before the stop.
		if tk, err := a.Local.Tasks.Get(t.Context(), ans.Task); err != nil || tk.Status != task.Running || tk.Cursor >= tk.End {
			t.Fatalf("%s: after the restart the export is %+v (%v), want it RUNNING short of its end", kind, tk, err)
		}
		tk := waitExport(t, a, ans.Task, 120*time.Second)
		if tk.Status != task.Done || tk.Done != int64(tiles) || tk.Total != int64(tiles) {
			t.Fatalf("%s: the export resumed after a restart: %+v, want DONE with %d of %d", kind, tk, tiles, tiles)
		}
		if got := archiveBytes(t, a, ans.Key); !bytes.Equal(got, want) {
			t.Errorf("%s: the resumed export's archive (%d bytes) differs from the uninterrupted one's (%d bytes)", kind, len(got), len(want))
		}
		if left := stagedKeys(t, a, "demo:world", ans.Task); len(left) != 0 {
			t.Errorf("%s: %d staged chunks left", kind, len(left))
		}
	}
}

// TestExportKilled: a kill stops a running export, one task (kill_thread)
// or a layer's tasks (kill_all): the task is ABORTED and killed, no
// archive is written and what it staged is removed.
func TestExportKilled(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	seedWorld(t, a, 5)
	for _, kill := range []string{"kill_thread=1&thread_id=%d", "kill_all=all"} {
		ans := exportReq(t, a, "demo:world", exportBody("pmtiles", 5))
		midway(t, a, ans.Task)
		form := kill
		if strings.Contains(kill, "%d") {
			form = fmt.Sprintf(kill, ans.Task)
		}
		if res := a.Do(t, "POST", "/rest/seed/demo:world", form, "Content-Type", "application/x-www-form-urlencoded"); res.Status != 200 {
			t.Fatalf("%s: got %d %q", form, res.Status, res.Body)
		}
		tk := waitExport(t, a, ans.Task, 30*time.Second)
		if tk.Status != task.Aborted || !tk.Killed || tk.Done >= tk.Total {
			t.Errorf("%s: task %+v, want a killed ABORTED export short of its total", form, tk)
		}
		testenv.Eventually(t, 10*time.Second, "the killed export's staged chunks to be removed", func() bool {
			return len(stagedKeys(t, a, "demo:world", ans.Task)) == 0
		})
		// Once its lane has stopped, nothing can write the archive any more.
		testenv.Eventually(t, 10*time.Second, "the killed export's lane to stop", func() bool { return !a.Local.Engine.Worker.Working(ans.Task) })
		if _, _, found := a.Get(t, strings.TrimPrefix(ans.Key, a.Prefix)); found {
			t.Errorf("%s: the killed export wrote its archive", form)
		}
	}
}

// TestExportWorkerKilledResumes: the process working an export is
// killed (SIGKILL: no checkpoint, no release, no ack); another process
// takes its lane over once its lease lapses and ends with the archive
// an uninterrupted export writes, byte for byte.
func TestExportWorkerKilledResumes(t *testing.T) {
	t.Parallel()
	awsPass(t)
	dir := t.TempDir()
	pa := apptest.StartProcess(t, dir, nil)
	rows := seedReq(t, pa.App(), "demo:world", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":5,"threadCount":2}}`)
	backends, prefix := apptest.AWSBackends(t, dir, nil)
	testenv.Eventually(t, 120*time.Second, "the seed to finish", func() bool {
		for _, tk := range finalTasks(t, backends.Tasks, ids(rows)) {
			if tk.Status.Active() {
				return false
			}
		}
		return true
	})
	ans := exportReq(t, pa.App(), "demo:world", exportBody("mbtiles", 5))
	var mid task.Task
	testenv.Eventually(t, 60*time.Second, "the export to be mid-way", func() bool {
		mid = finalTasks(t, backends.Tasks, []int64{ans.Task})[0]
		if !mid.Status.Active() || mid.Cursor >= mid.End {
			t.Fatalf("the export ended before its worker could be killed: %+v", mid)
		}
		return mid.Cursor > 0
	})
	pa.Kill()
	if tk := finalTasks(t, backends.Tasks, []int64{ans.Task})[0]; tk.Status != task.Running || tk.Cursor >= tk.End {
		t.Fatalf("the export ended before its worker was killed: %+v", tk)
	}
	t.Logf("worker killed at metatile %d of %d", mid.Cursor, mid.End)
	pb := apptest.StartProcess(t, dir, nil)
	read := func(key string) []byte {
		data, _, found, err := backends.Tiles.Get(t.Context(), key)
		if err != nil || !found {
			t.Fatalf("archive %s: found %v, %v", key, found, err)
		}
		return data
	}
	wait := func(id int64) task.Task {
		var tk task.Task
		testenv.Eventually(t, 120*time.Second, fmt.Sprintf("export %d to finish", id), func() bool {
			tk = finalTasks(t, backends.Tasks, []int64{id})[0]
			return !tk.Status.Active()
		})
		return tk
	}
	tk := wait(ans.Task)
	if tk.Status != task.Done || tk.Done != tk.Total || tk.Cursor != tk.End {
		t.Fatalf("the taken-over export: %+v, want DONE with exact counts", tk)
	}
	got := read(ans.Key)
	ref := exportReq(t, pb.App(), "demo:world", exportBody("mbtiles", 5))
	if tk := wait(ref.Task); tk.Status != task.Done {
		t.Fatalf("the uninterrupted export: %+v", tk)
	}
	if want := read(ref.Key); !bytes.Equal(got, want) {
		t.Errorf("the taken-over export's archive (%d bytes) differs from an uninterrupted one's (%d bytes)", len(got), len(want))
	}
	var staged int
	backends.Tiles.List(t.Context(), fmt.Sprintf("%s_tilecache/export-stages/demo:world/%d/", prefix, ans.Task), func(tilestore.Object) error {
		staged++
		return nil
	})
	if staged != 0 {
		t.Errorf("%d staged chunks left", staged)
	}
}

// TestExportVectorTask: a vector layer (Mapbox vector tiles from an xyz
// source, some sent gzip-compressed, some not) is exported by the
// workers to PMTiles and MBTiles: every tile gzip-compressed, its
// content the stored tile's, vector_layers in the metadata from the
// tile set's TileJSON; GDAL's MBTiles driver reads the features. A
// GeoPackage of vector tiles is refused.
func TestExportVectorTask(t *testing.T) {
	t.Parallel()
	gdal := archivetest.RequireGDAL(t)
	up := archivetest.VectorUpstream(t)
	a := apptest.Start(t, apptest.Options{Layers: archivetest.VectorLayer(up.URL)})
	rows := seedReq(t, a, "vec:places", `{"seedRequest":{"zoomStart":0,"zoomStop":2}}`)
	waitFinished(t, a, ids(rows), 60*time.Second)
	prefix := "vec:places/EPSG:900913/mapbox-vectortile/default/"
	testenv.Eventually(t, 10*time.Second, "the TileJSON to list the vector layers", func() bool {
		tj, _, ok := a.Get(t, prefix+"tilejson.json")
		return ok && bytes.Contains(tj, []byte(`"places"`))
	})
	ctx := context.Background()
	dir := t.TempDir()
	for _, kind := range []string{"pmtiles", "mbtiles"} {
		ans := exportReq(t, a, "vec:places", `{"exportRequest":{"zoomStart":0,"zoomStop":2,"archive":"`+kind+`"}}`)
		if tk := waitExport(t, a, ans.Task, 30*time.Second); tk.Status != task.Done || tk.Done != 21 {
			t.Fatalf("%s: %+v", kind, tk)
		}
		data := archiveBytes(t, a, ans.Key)
		// Private: not among the objects served.
		if res := a.DoAuth(t, "", "", "GET", "/"+strings.TrimPrefix(ans.Key, a.Prefix), ""); res.Status != 404 {
			t.Errorf("%s: GET of the archive's key answered %d, want 404", kind, res.Status)
		}
		rd, path := openArchive(t, kind, data, dir)
		if p, ok := rd.(*pmtiles.Reader); ok && p.Header().TileCompression != pmtiles.Gzip {
			t.Errorf("PMTiles tile compression %d, want gzip", p.Header().TileCompression)
		}
		n := 0
		err := rd.Tiles(ctx, func(z int, x, y int64, data []byte) error {
			n++
			if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
				return fmt.Errorf("tile %d/%d/%d is not gzip-compressed", z, x, y)
			}
			stored, _, _ := a.Get(t, fmt.Sprintf("%s%d/%d/%d.pbf", prefix, z, x, int64(1)<<z-1-y))
			if !bytes.Equal(gunzipped(t, data), gunzipped(t, stored)) {
				return fmt.Errorf("tile %d/%d/%d differs from the stored one", z, x, y)
			}
			return nil
		})
		if err != nil || n != 21 {
			t.Errorf("%s: %d tiles read back, want 21: %v", kind, n, err)
		}
		md, err := rd.Metadata(ctx)
		if err != nil || md.Format != "pbf" || !bytes.Contains(md.VectorLayers, []byte(`"places"`)) {
			t.Errorf("%s metadata: %+v, %v", kind, md, err)
		}
		if kind == "mbtiles" {
			out := string(gdal.Run(t, gdal.OGRInfo, "-ro", "-al", "-q", path))
			if !strings.Contains(out, "Layer name: places") || !strings.Contains(out, "tile 2/3/1") {
				t.Errorf("ogrinfo of the exported MBTiles:\n%.2000s", out)
			}
		}
	}
	res := a.Do(t, "POST", "/rest/export/vec:places.json", `{"exportRequest":{"zoomStart":0,"zoomStop":2,"archive":"gpkg"}}`)
	if res.Status != 400 || !strings.Contains(res.Body, "GeoPackage") {
		t.Errorf("a GeoPackage of vector tiles: got %d %q, want 400 naming GeoPackage", res.Status, res.Body)
	}
}

// gunzipped returns b decompressed when it is gzip, else b.
func gunzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		return b
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExportLosingItsStagedTilesFails: an export whose staged chunks are
// gone when it resumes (removed behind its back) cannot write its
// archive: its task is ABORTED, the failure names what is missing, and
// no archive is written.
func TestExportLosingItsStagedTilesFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := apptest.Options{DataDir: dir, StaleAfter: 2 * time.Second}
	a := apptest.Start(t, opts)
	seedWorld(t, a, 5)
	ans := exportReq(t, a, "demo:world", exportBody("pmtiles", 5))
	midway(t, a, ans.Task)
	a.Stop()
	a = apptest.Start(t, opts)
	for _, k := range stagedKeys(t, a, "demo:world", ans.Task) {
		if _, err := a.Local.Tiles.Delete(t.Context(), []string{a.Prefix + k}); err != nil {
			t.Fatal(err)
		}
	}
	wantExportFailed(t, a, ans, "staged tiles of metatiles from 0")
}

// wantExportFailed waits for the export ans to end ABORTED (not killed)
// and checks that /rest/failures.json gives its failure, with because in
// its message, and that it wrote no archive.
func wantExportFailed(t testing.TB, a *apptest.App, ans exportAnswer, because string) {
	t.Helper()
	tk := waitExport(t, a, ans.Task, 60*time.Second)
	if tk.Status != task.Aborted || tk.Killed {
		t.Fatalf("export task %d: %+v, want ABORTED (not killed)", ans.Task, tk)
	}
	res := a.Do(t, "GET", "/rest/failures.json", "")
	if res.Status != 200 || !strings.Contains(res.Body, because) {
		t.Errorf("GET /rest/failures.json: %d %s, want export task %d's failure saying %q", res.Status, res.Body, ans.Task, because)
	}
	if _, _, found := a.Get(t, strings.TrimPrefix(ans.Key, a.Prefix)); found {
		t.Errorf("the failed export task %d wrote an archive", ans.Task)
	}
}
