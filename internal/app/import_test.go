package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/archive"
	"tilecache/internal/archive/archivetest"
	"tilecache/internal/archive/mbtiles"
	"tilecache/internal/archive/pmtiles"
	"tilecache/internal/task"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"

	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/maptile"
)

// importLayers are the layers the import tests copy archives into.
const importLayers = `
layers:
  - name: imp:gdal
    gridSubsets: [{gridSet: EPSG:900913, zoomStop: 6}]
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: testpattern}
  - name: imp:pm
    gridSubsets: [{gridSet: EPSG:900913, zoomStop: 8}]
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: testpattern}
  - name: imp:jpeg
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/jpeg]
    source: {type: testpattern}
  - name: imp:geo
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
`

// archiveAt makes the archive in file path reachable by the app: the path
// itself on the embedded backend, else an s3:// object of the app's
// bucket holding its bytes.
func archiveAt(t *testing.T, a *apptest.App, path string) string {
	t.Helper()
	if a.Prefix == "" {
		return path
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	key := "imports/" + filepath.Base(path)
	a.Put(t, key, data, tilestore.Meta{ContentType: "application/octet-stream"})
	bucket := os.Getenv("TILECACHE_S3_BUCKET")
	if bucket == "" {
		bucket = "tilecache-tiles"
	}
	return "s3://" + bucket + "/" + a.Prefix + key
}

// postImport sends an import request of layer.
func postImport(t *testing.T, a *apptest.App, layer, body string) apptest.Response {
	t.Helper()
	return a.Do(t, "POST", "/rest/import/"+layer+".json", body, "Content-Type", "application/json")
}

// importAndWait imports archive into layer and returns its finished task.
func importAndWait(t *testing.T, a *apptest.App, layer, body string) task.Task {
	t.Helper()
	res := postImport(t, a, layer, body)
	if res.Status != 200 {
		t.Fatalf("POST import %s: %d %q, want 200", body, res.Status, res.Body)
	}
	rows := decodeRows(t, res.Body)
	if len(rows) != 1 {
		t.Fatalf("import answered %v, want one task", rows)
	}
	tk := waitFinished(t, a, ids(rows), 120*time.Second)[0]
	if tk.Type != task.Import {
		t.Errorf("task %d is of type %s, want IMPORT", tk.ID, tk.Type)
	}
	return tk
}

// wantArchiveStored compares every tile of the archive r holds with the
// tile stored under prefix (rows from the bottom), and the stored keys
// with the archive's tiles, and returns their number and bytes.
func wantArchiveStored(t *testing.T, a *apptest.App, r archive.Reader, prefix string) (n int, size int64) {
	t.Helper()
	want := map[string]bool{}
	err := r.Tiles(t.Context(), func(z int, x, y int64, data []byte) error {
		key := fmt.Sprintf("%s%d/%d/%d.png", prefix, z, x, int64(1)<<z-1-y)
		want[key] = true
		got, meta, ok := a.Get(t, key)
		switch {
		case !ok:
			return fmt.Errorf("tile %d/%d/%d of the archive is not stored (%s)", z, x, y, key)
		case !bytes.Equal(got, data):
			return fmt.Errorf("tile %d/%d/%d: stored %d bytes, the archive holds %d", z, x, y, len(got), len(data))
		case meta.ContentType != "image/png":
			return fmt.Errorf("tile %d/%d/%d stored as %q", z, x, y, meta.ContentType)
		}
		n++
		size += int64(len(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := keys(t, a, prefix)
	for _, k := range stored {
		if !want[k] {
			t.Errorf("stored %s, which the archive does not hold", k)
		}
	}
	if len(stored) != n {
		t.Errorf("%d tiles stored, the archive holds %d", len(stored), n)
	}
	return n, size
}

// TestImportGDALMBTiles: an MBTiles GDAL wrote (gdal_translate of a
// raster, its overviews by gdaladdo) is imported into a layer as one
// IMPORT task — from the file on the embedded backend, from the bucket on
// the AWS one — every stored tile the archive's bytes under GeoWebCache's
// key of its row from the bottom, and the disk usage counting them.
func TestImportGDALMBTiles(t *testing.T) {
	t.Parallel()
	gdal := archivetest.RequireGDAL(t)
	dir := t.TempDir()
	world := filepath.Join(dir, "world.png")
	if err := os.WriteFile(world, archivetest.Quadrants(1024, [4]color.RGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {255, 255, 0, 255}}), 0o600); err != nil {
		t.Fatal(err)
	}
	mbPath := filepath.Join(dir, "gdal.mbtiles")
	const m = "20037508.342789244"
	gdal.Run(t, gdal.Translate, "-q", "-of", "MBTiles", "-a_srs", "EPSG:3857", "-a_ullr", "-"+m, m, m, "-"+m, world, mbPath)
	if addo := strings.Replace(gdal.Translate, "gdal_translate", "gdaladdo", 1); addo != gdal.Translate {
		if _, err := os.Stat(addo); err == nil {
			gdal.Run(t, addo, "-q", "-r", "nearest", mbPath, "2", "4") // levels 1 and 0
		}
	}
	r, err := mbtiles.Open(t.Context(), mbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	total, err := r.Count(t.Context(), 0, 31)
	if err != nil || total < 16 {
		t.Fatalf("GDAL's MBTiles holds %d tiles (%v), want level 2's 16 at least", total, err)
	}

	a := apptest.Start(t, apptest.Options{Layers: importLayers, StaleAfter: 2 * time.Second})
	loc := archiveAt(t, a, mbPath)
	tk := importAndWait(t, a, "imp:gdal", fmt.Sprintf(`{"archive":%q,"gridSetId":"EPSG:900913","format":"image/png"}`, loc))
	if tk.Status != task.Done || tk.Done != total || tk.Total != total {
		t.Fatalf("import task: %s with %d/%d tiles, want DONE with the archive's %d", tk.Status, tk.Done, tk.Total, total)
	}
	n, size := wantArchiveStored(t, a, r, "imp:gdal/EPSG:900913/png/default/")
	if int64(n) != total {
		t.Fatalf("compared %d tiles, the archive counts %d", n, total)
	}
	u := waitSettled(t, a)
	bs := u.DiskBlockSize
	var blocks int64
	err = r.Tiles(t.Context(), func(_ int, _, _ int64, data []byte) error {
		blocks += (int64(len(data)) + bs - 1) / bs * bs
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if l := u.layer("imp:gdal"); l.UsedTiles != total || l.UsedBytes != blocks {
		t.Errorf("usage of imp:gdal: %d tiles, %d bytes; want the archive's %d tiles, %d bytes (%d in %d-byte blocks)", l.UsedTiles, l.UsedBytes, total, blocks, size, bs)
	}

	// Imported again: every tile is there already, nothing changes.
	again := importAndWait(t, a, "imp:gdal", fmt.Sprintf(`{"archive":%q}`, loc))
	if again.Status != task.Done || again.Done != total {
		t.Fatalf("second import: %s with %d/%d tiles", again.Status, again.Done, again.Total)
	}
	if l := waitSettled(t, a).layer("imp:gdal"); l.UsedTiles != total || l.UsedBytes != blocks {
		t.Errorf("usage after a second import: %d tiles, %d bytes; want %d, %d", l.UsedTiles, l.UsedBytes, total, blocks)
	}
}

// writePMTiles writes a PMTiles archive of levels 0..maxZ with our own
// writer to path: solid tiles of 16 colours, so that contents repeat.
func writePMTiles(t *testing.T, path string, maxZ int) (archive.Reader, int64) {
	t.Helper()
	ctx := context.Background()
	palette := make([][]byte, 16)
	for i := range palette {
		palette[i] = archivetest.SolidPNG(color.RGBA{byte(16 * i), byte(255 - 16*i), byte(7 * i), 255})
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pmtiles.Create(t.TempDir(), f, pmtiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for z := 0; z <= maxZ; z++ {
		for x := range int64(1) << z {
			for y := range int64(1) << z {
				if err := w.Put(ctx, z, x, y, palette[(x+3*y+int64(z))%16]); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
	}
	if err := w.Close(ctx, archive.Metadata{Format: "png", MaxZoom: maxZ}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pmtiles.Open(ctx, pmtiles.ReaderAt(bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	return r, n
}

// TestImportPMTilesKilled: an import of a PMTiles our writer wrote is
// listed with its own type (IMPORT) and a total of the archive's tiles,
// and a kill stops it part-way, the tiles it stored counted in the
// usage; a second import copies the whole archive, every tile equal.
func TestImportPMTilesKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pmPath := filepath.Join(dir, "ours.pmtiles")
	r, total := writePMTiles(t, pmPath, 7) // 21,845 tiles
	a := apptest.Start(t, apptest.Options{Layers: importLayers, StaleAfter: 2 * time.Second})
	loc := archiveAt(t, a, pmPath)
	res := postImport(t, a, "imp:pm", fmt.Sprintf(`{"archive":%q,"zoomStart":0,"zoomStop":7}`, loc))
	if res.Status != 200 {
		t.Fatalf("POST import: %d %q", res.Status, res.Body)
	}
	rows := decodeRows(t, res.Body)
	if len(rows) != 1 || rows[0][1] != total {
		t.Fatalf("import answered %v, want one task of %d tiles", rows, total)
	}
	id := rows[0][3]
	// Listed as an import, by request.
	var listed struct {
		Requests []struct {
			Type  string `json:"type"`
			Layer string `json:"layer"`
		} `json:"requests"`
	}
	if res := a.Do(t, "GET", "/rest/seed.json?requests=1", ""); res.Status != 200 || json.Unmarshal([]byte(res.Body), &listed) != nil {
		t.Fatalf("GET requests: %d %q", res.Status, res.Body)
	}
	found := false
	for _, q := range listed.Requests {
		found = found || (q.Layer == "imp:pm" && q.Type == "IMPORT")
	}
	if !found {
		t.Errorf("the requests listed %+v, want imp:pm's IMPORT", listed.Requests)
	}
	var row []int64
	testenv.Eventually(t, 60*time.Second, "the import to store some tiles", func() bool {
		for _, r := range listRows(t, a, "/rest/seed/imp:pm.json") {
			if r[3] == id {
				row = r[:]
			}
		}
		return row != nil && (row[0] >= 300 || row[4] == int64(task.Done))
	})
	if row[4] == int64(task.Done) {
		t.Fatalf("the import finished before it was killed: %v", row)
	}
	if res := a.Do(t, "POST", "/rest/seed/imp:pm", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded"); res.Status != 200 {
		t.Fatalf("kill: %d %q", res.Status, res.Body)
	}
	waitFinished(t, a, []int64{id}, 60*time.Second)
	// Its lane stores what it took before it noticed, and counts it.
	testenv.Eventually(t, 10*time.Second, "the killed lane to stop", func() bool { return !a.Local.Engine.Worker.Working(id) })
	killed, err := a.Local.Tasks.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	stored := int64(len(keys(t, a, "imp:pm/EPSG:900913/png/default/")))
	if killed.Status != task.Aborted || !killed.Killed || stored == 0 || stored >= total || killed.Done > total {
		t.Fatalf("killed import: %s (killed %v) at %d/%d, %d tiles stored; want ABORTED part-way", killed.Status, killed.Killed, killed.Done, killed.Total, stored)
	}
	if killed.Done != stored {
		t.Errorf("the killed import's row says %d tiles done, %d are stored", killed.Done, stored)
	}
	if l := waitSettled(t, a).layer("imp:pm"); l.UsedTiles != stored {
		t.Errorf("usage after the kill: %d tiles, %d are stored", l.UsedTiles, stored)
	}

	start := time.Now()
	tk := importAndWait(t, a, "imp:pm", fmt.Sprintf(`{"archive":%q}`, loc))
	took := time.Since(start)
	if tk.Status != task.Done || tk.Done != total {
		t.Fatalf("second import: %s with %d/%d tiles", tk.Status, tk.Done, tk.Total)
	}
	n, _ := wantArchiveStored(t, a, r, "imp:pm/EPSG:900913/png/default/")
	if l := waitSettled(t, a).layer("imp:pm"); l.UsedTiles != int64(n) {
		t.Errorf("usage: %d tiles, %d are stored", l.UsedTiles, n)
	}
	t.Logf("imported %d tiles (%d of them stored before) in %v: %.0f tiles/s", total, stored, took, float64(total)/took.Seconds())
}

// TestImportResumesAfterRestart: an import whose process stops part-way
// is taken up again by the next process on the same data (its stale lane
// re-enqueued) from its checkpoint, and ends with every tile of the
// archive stored and counted once.
func TestImportResumesAfterRestart(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "a process restarted on the same task database")
	pmPath := filepath.Join(t.TempDir(), "ours.pmtiles")
	r, total := writePMTiles(t, pmPath, 7)
	data := t.TempDir()
	a := apptest.Start(t, apptest.Options{Layers: importLayers, DataDir: data, StaleAfter: 2 * time.Second, Backend: "embedded"})
	res := postImport(t, a, "imp:pm", fmt.Sprintf(`{"archive":%q}`, pmPath))
	if res.Status != 200 {
		t.Fatalf("POST import: %d %q", res.Status, res.Body)
	}
	id := decodeRows(t, res.Body)[0][3]
	var before task.Task
	testenv.Eventually(t, 60*time.Second, "a checkpoint of the import", func() bool {
		var err error
		before, err = a.Local.Tasks.Get(t.Context(), id)
		return err == nil && before.Cursor >= 300
	})
	a.Stop()
	if before.Status != task.Running || before.Cursor >= total {
		t.Fatalf("the import was not stopped part-way: %+v", before)
	}

	b := apptest.Start(t, apptest.Options{Layers: importLayers, DataDir: data, StaleAfter: 2 * time.Second, Backend: "embedded"})
	tk := waitFinished(t, b, []int64{id}, 120*time.Second)[0]
	if tk.Status != task.Done || tk.Done != total {
		t.Fatalf("resumed import: %s with %d/%d tiles", tk.Status, tk.Done, tk.Total)
	}
	n, _ := wantArchiveStored(t, b, r, "imp:pm/EPSG:900913/png/default/")
	if l := waitSettled(t, b).layer("imp:pm"); l.UsedTiles != int64(n) {
		t.Errorf("usage: %d tiles, %d are stored", l.UsedTiles, n)
	}
}

// TestImportRefusals: what an import request gets wrong is a 4xx naming
// the problem, and records no task.
func TestImportRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pmPath := filepath.Join(dir, "small.pmtiles")
	writePMTiles(t, pmPath, 1)
	notArchive := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notArchive, []byte("not an archive at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := apptest.Start(t, apptest.Options{Layers: importLayers})
	loc := archiveAt(t, a, pmPath)
	bad := archiveAt(t, a, notArchive)
	cases := []struct {
		name, layer, body string
		status            int
		says              string
	}{
		{"unknown layer", "imp:none", fmt.Sprintf(`{"archive":%q}`, loc), 404, "Unknown layer"},
		{"no archive", "imp:pm", `{"gridSetId":"EPSG:900913"}`, 400, "archive is required"},
		{"unknown field", "imp:pm", fmt.Sprintf(`{"archive":%q,"zoom":3}`, loc), 400, "zoom"},
		{"not an archive", "imp:pm", fmt.Sprintf(`{"archive":%q}`, bad), 400, "neither a PMTiles"},
		{"missing archive", "imp:pm", fmt.Sprintf(`{"archive":%q}`, archiveMissing(a, dir)), 400, "archive"},
		{"format mismatch", "imp:jpeg", fmt.Sprintf(`{"archive":%q}`, loc), 400, "image/png"},
		{"format not the layer's", "imp:pm", fmt.Sprintf(`{"archive":%q,"format":"image/jpeg"}`, loc), 400, "image/jpeg"},
		{"grid set not Web Mercator", "imp:geo", fmt.Sprintf(`{"archive":%q,"gridSetId":"EPSG:4326"}`, loc), 400, "GeoPackage"},
		{"no Web Mercator grid set", "imp:geo", fmt.Sprintf(`{"archive":%q}`, loc), 400, "Web Mercator"},
		{"levels beyond the grid", "imp:pm", fmt.Sprintf(`{"archive":%q,"zoomStart":9}`, loc), 400, "zoomStart 9"},
		{"no tile at the levels", "imp:pm", fmt.Sprintf(`{"archive":%q,"zoomStart":5,"zoomStop":8}`, loc), 400, "no tile"},
		{"a web address of the deployment's network", "imp:pm", `{"archive":"https://10.1.2.3/a.pmtiles"}`, 400, "10.1.2.3"},
	}
	if a.Prefix != "" {
		cases = append(cases, struct {
			name, layer, body string
			status            int
			says              string
		}{"a file path on the AWS backend", "imp:pm", fmt.Sprintf(`{"archive":%q}`, pmPath), 400, "embedded backend"})
	}
	for _, c := range cases {
		res := postImport(t, a, c.layer, c.body)
		if res.Status != c.status || !strings.Contains(res.Body, c.says) {
			t.Errorf("%s: %d %q, want %d saying %q", c.name, res.Status, res.Body, c.status, c.says)
		}
	}
	if res := a.Do(t, "POST", "/rest/import/imp:pm.json", fmt.Sprintf(`{"archive":%q}`, loc), "Content-Type", "text/plain"); res.Status != 415 {
		t.Errorf("a text/plain import: %d %q, want 415", res.Status, res.Body)
	}
	if rows := listRows(t, a, "/rest/seed.json"); len(rows) != 0 {
		t.Errorf("refused imports left tasks: %v", rows)
	}
	if res := a.DoAuth(t, apptest.ViewerUser, apptest.Password, "POST", "/rest/import/imp:pm.json", fmt.Sprintf(`{"archive":%q}`, loc), "Content-Type", "application/json"); res.Status != 403 {
		t.Errorf("a viewer's import: %d %q, want 403", res.Status, res.Body)
	}
}

// archiveMissing is a location of no archive, of the kind the app reads.
func archiveMissing(a *apptest.App, dir string) string {
	if a.Prefix == "" {
		return filepath.Join(dir, "missing.pmtiles")
	}
	bucket := os.Getenv("TILECACHE_S3_BUCKET")
	if bucket == "" {
		bucket = "tilecache-tiles"
	}
	return "s3://" + bucket + "/" + a.Prefix + "imports/missing.pmtiles"
}

// TestImportSkipsBlankTiles: where the layer's source skips blank tiles
// (skipBlank), the archive's blank tiles are walked and not stored, as a
// seed of the layer would leave them; the others are stored as they are.
func TestImportSkipsBlankTiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pmPath := filepath.Join(t.TempDir(), "holes.pmtiles")
	f, err := os.Create(pmPath)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pmtiles.Create(t.TempDir(), f, pmtiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	transparent := archivetest.SolidPNG(color.RGBA{})
	want := map[string][]byte{}
	for x := range int64(4) {
		for y := range int64(4) {
			data := transparent
			if (x+y)%2 == 0 {
				data = archivetest.SolidPNG(color.RGBA{byte(60 * x), byte(60 * y), 200, 255})
				want[fmt.Sprintf("skip:blank/EPSG:900913/png/default/2/%d/%d.png", x, 3-y)] = data
			}
			if err := w.Put(ctx, 2, x, y, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(ctx, archive.Metadata{Format: "png", MinZoom: 2, MaxZoom: 2}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	a := apptest.Start(t, apptest.Options{Layers: `
layers:
  - name: skip:blank
    gridSubsets: [{gridSet: EPSG:900913, zoomStop: 4}]
    formats: [image/png]
    source: {type: xyz, url: "http://127.0.0.1:1/{z}/{x}/{y}.png", skipBlank: transparent}
`})
	tk := importAndWait(t, a, "skip:blank", fmt.Sprintf(`{"archive":%q}`, archiveAt(t, a, pmPath)))
	if tk.Status != task.Done || tk.Done != 16 {
		t.Fatalf("import: %s with %d/%d tiles, want DONE with 16", tk.Status, tk.Done, tk.Total)
	}
	stored := keys(t, a, "skip:blank/EPSG:900913/png/default/")
	if len(stored) != len(want) {
		t.Errorf("stored %v, want the %d tiles that are not blank", stored, len(want))
	}
	for key, data := range want {
		if got, _, _ := a.Get(t, key); !bytes.Equal(got, data) {
			t.Errorf("%s: stored %d bytes, want the archive's %d", key, len(got), len(data))
		}
	}
	if l := waitSettled(t, a).layer("skip:blank"); l.UsedTiles != int64(len(want)) {
		t.Errorf("usage: %d tiles, want %d", l.UsedTiles, len(want))
	}
}

// TestImportArchiveReplaced: an archive replaced while it is imported is
// not mixed with the new one: the import stops, ABORTED, its reason (the
// archive was replaced) listed in the failures, what it stored before
// counted.
func TestImportArchiveReplaced(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pmPath := filepath.Join(dir, "moving.pmtiles")
	writePMTiles(t, pmPath, 7)
	a := apptest.Start(t, apptest.Options{Layers: importLayers, StaleAfter: 2 * time.Second})
	loc := archiveAt(t, a, pmPath)
	res := postImport(t, a, "imp:pm", fmt.Sprintf(`{"archive":%q}`, loc))
	if res.Status != 200 {
		t.Fatalf("POST import: %d %q", res.Status, res.Body)
	}
	id := decodeRows(t, res.Body)[0][3]
	testenv.Eventually(t, 60*time.Second, "the import to store some tiles", func() bool {
		tk, err := a.Local.Tasks.Get(t.Context(), id)
		return err == nil && tk.Done >= 200
	})
	// Another archive where it lies: a file written anew, an object put
	// again (a new ETag).
	other := filepath.Join(t.TempDir(), "moving.pmtiles")
	writePMTiles(t, other, 3)
	data, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if a.Prefix == "" {
		if err := os.WriteFile(pmPath+".new", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(pmPath+".new", pmPath); err != nil {
			t.Fatal(err)
		}
	} else {
		a.Put(t, "imports/moving.pmtiles", data, tilestore.Meta{ContentType: "application/octet-stream"})
	}
	tk := waitFinished(t, a, []int64{id}, 60*time.Second)[0]
	if tk.Status != task.Aborted || tk.Killed || tk.Done >= tk.Total {
		t.Fatalf("import of a replaced archive: %s (killed %v) at %d/%d, want ABORTED part-way", tk.Status, tk.Killed, tk.Done, tk.Total)
	}
	var failures struct {
		Failures []struct {
			ID     int64  `json:"id"`
			Reason string `json:"reason"`
		} `json:"failures"`
	}
	if res := a.Do(t, "GET", "/rest/failures.json", ""); res.Status != 200 || json.Unmarshal([]byte(res.Body), &failures) != nil {
		t.Fatalf("GET failures: %d %q", res.Status, res.Body)
	}
	found := false
	for _, f := range failures.Failures {
		found = found || (f.ID == id && strings.Contains(f.Reason, "replaced"))
	}
	if !found {
		t.Errorf("failures %+v, want task %d's saying the archive was replaced", failures.Failures, id)
	}
	testenv.Eventually(t, 10*time.Second, "the lane to stop", func() bool { return !a.Local.Engine.Worker.Working(id) })
	stored := int64(len(keys(t, a, "imp:pm/EPSG:900913/png/default/")))
	if l := waitSettled(t, a).layer("imp:pm"); l.UsedTiles != stored || stored == 0 {
		t.Errorf("usage: %d tiles, %d are stored", l.UsedTiles, stored)
	}
}

// TestImportVectorPMTiles: a PMTiles of gzip-compressed Mapbox vector
// tiles is imported into a vector layer: each tile checked and stored as
// the archive holds it, with its gzip Content-Encoding.
func TestImportVectorPMTiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pmPath := filepath.Join(t.TempDir(), "places.pmtiles")
	f, err := os.Create(pmPath)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pmtiles.Create(t.TempDir(), f, pmtiles.Options{TileCompression: pmtiles.Gzip})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for z := range 3 {
		for x := range int64(1) << z {
			for y := range int64(1) << z {
				tl := maptile.New(uint32(x), uint32(y), maptile.Zoom(z))
				fc := geojson.NewFeatureCollection()
				pt := geojson.NewFeature(tl.Center())
				pt.Properties["name"] = fmt.Sprintf("tile %d/%d/%d", z, x, y)
				fc.Append(pt)
				layers := mvt.NewLayers(map[string]*geojson.FeatureCollection{"places": fc})
				layers.ProjectToTile(tl)
				data, err := mvt.MarshalGzipped(layers)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.Put(ctx, z, x, y, data); err != nil {
					t.Fatal(err)
				}
				want[fmt.Sprintf("imp:vector/EPSG:900913/mapbox-vectortile/default/%d/%d/%d.pbf", z, x, int64(1)<<z-1-y)] = data
			}
		}
	}
	md := archive.Metadata{Format: "pbf", MaxZoom: 2, VectorLayers: json.RawMessage(`[{"id":"places","fields":{"name":"String"}}]`)}
	if err := w.Close(ctx, md); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	a := apptest.Start(t, apptest.Options{Layers: `
layers:
  - name: imp:vector
    gridSubsets: [{gridSet: EPSG:900913, zoomStop: 6}]
    formats: [application/vnd.mapbox-vector-tile]
    metatiling: [1, 1]
    source: {type: xyz, url: "http://127.0.0.1:1/{z}/{x}/{y}.pbf"}
`})
	tk := importAndWait(t, a, "imp:vector", fmt.Sprintf(`{"archive":%q}`, archiveAt(t, a, pmPath)))
	if tk.Status != task.Done || tk.Done != int64(len(want)) {
		t.Fatalf("import: %s with %d/%d tiles, want DONE with %d", tk.Status, tk.Done, tk.Total, len(want))
	}
	if got := keys(t, a, "imp:vector/EPSG:900913/mapbox-vectortile/default/"); len(got) != len(want) {
		t.Errorf("stored %d tiles, want %d", len(got), len(want))
	}
	for key, data := range want {
		got, meta, ok := a.Get(t, key)
		if !ok || !bytes.Equal(got, data) || meta.ContentEncoding != "gzip" {
			t.Errorf("%s: stored %v, %d bytes, encoding %q; want the archive's %d bytes, gzip", key, ok, len(got), meta.ContentEncoding, len(data))
		}
	}
}
