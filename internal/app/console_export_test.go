package app_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
)

// TestConsoleExports: the seed page exports what it describes. Chosen as
// "export to MBTiles", Submit posts an export request and the status line
// links to the archive; the link (same origin, the browser's credentials)
// downloads the archive the task wrote. Chosen as "publish as the tile
// set's PMTiles", the export writes the tile set's served archive.
func TestConsoleExports(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "the console's forms (their requests run on both backends in the REST suites)")
	a := apptest.Start(t, apptest.Options{})
	seedWorld(t, a, 2)
	page := openConsole(t, a, "#seed?layer=demo:world&gridSet=EPSG:900913&format=image/png&type=export:mbtiles&zoomStart=0&zoomStop=2")
	waitEval(t, page, `document.querySelector('#estimate').dataset.tiles === '21'`, 20*time.Second)
	page.Do(t, "submit", chromedp.Click(chromedp.CSS(`#seed-submit`)))
	waitEval(t, page, `!!document.getElementById('export-download')`, 10*time.Second)
	status := page.Eval(t, `document.getElementById('status').textContent`)
	m := regexp.MustCompile(`^Export task (\d+) of demo:world`).FindStringSubmatch(status)
	if m == nil {
		t.Fatalf("status %q: want the export's task", status)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	if tk := waitExport(t, a, id, 60*time.Second); tk.Status != task.Done {
		t.Fatalf("the console's export: %+v", tk)
	}
	href := page.Eval(t, `document.getElementById('export-download').href`)
	if want := fmt.Sprintf("%s/rest/export/demo%%3Aworld.json?archive=%d.mbtiles", a.URL, id); href != want {
		t.Errorf("the download link is %s, want %s", href, want)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", href, nil)
	req.SetBasicAuth(apptest.User, apptest.Password)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	want := archiveBytes(t, a, fmt.Sprintf("_tilecache/exports/demo:world/%d.mbtiles", id))
	if res.StatusCode != 200 || !bytes.Equal(got, want) {
		t.Errorf("the link: %d, %d bytes, want the archive's %d", res.StatusCode, len(got), len(want))
	}

	// Published: the tile set's PMTiles.
	page.Eval(t, `location.hash = '#seed?layer=demo:world&gridSet=EPSG:900913&format=image/png&type=publish:pmtiles&zoomStart=0&zoomStop=2'; ''`)
	waitEval(t, page, `document.querySelector('#estimate').dataset.tiles === '21' && document.querySelector('#seed-submit') && !document.querySelector('#seed-submit').disabled`, 20*time.Second)
	page.Do(t, "submit", chromedp.Click(chromedp.CSS(`#seed-submit`)))
	waitEval(t, page, `/^Export task \d+ of demo:world: once it is done, the CDN serves/.test(document.getElementById('status').textContent)`, 10*time.Second)
	status = page.Eval(t, `document.getElementById('status').textContent`)
	m = regexp.MustCompile(`^Export task (\d+) `).FindStringSubmatch(status)
	id, _ = strconv.ParseInt(m[1], 10, 64)
	if tk := waitExport(t, a, id, 60*time.Second); tk.Status != task.Done {
		t.Fatalf("the console's published export: %+v", tk)
	}
	if _, _, ok := a.Get(t, "archives/demo:world/EPSG:900913/png/default.pmtiles"); !ok {
		t.Error("the published export wrote no archive at the tile set's key")
	}
}
