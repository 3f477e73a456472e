package rest_test

// Changes to a layer managed at run time while tasks of it run: a change
// that truncates orphaned tiles and a deletion are refused (409) while a
// task could write tiles after the truncation; once the tasks are killed,
// the deletion removes the entry, and a background task then the tiles of
// the id it removed.

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

// slowStoreLayer is a store-managed layer that draws a tile in 40 ms.
const slowStoreLayer = `  - name: run:slow
    managedBy: store
    gridSubsets:
      - gridSet: EPSG:4326
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: testpattern, delay: 40ms}
`

const slowWMSDoc = `<wmsLayer>
  <name>run:slow</name>
  <mimeFormats><string>image/png</string></mimeFormats>
  <gridSubsets><gridSubset><gridSetName>EPSG:4326</gridSetName><zoomStop>2</zoomStop></gridSubset></gridSubsets>
  <wmsUrl><string>http://127.0.0.1:1/wms</string></wmsUrl>
  <wmsLayers>roads</wmsLayers>
</wmsLayer>`

func TestLayerChangesWhileTasksRun(t *testing.T) {
	a := apptest.Start(t, apptest.Options{Layers: apptest.Layers + slowStoreLayer, SeedThreads: 1})
	xml := []string{"Content-Type", "text/xml"}
	// z0–4: 682 tiles of 40 ms on one thread, far longer than the test.
	rows := seedJSON(t, a, "run:slow", `{"seedRequest":{"zoomStart":0,"zoomStop":4,"threadCount":1}}`)
	defer killAll(t, a)
	id := ids(rows)[0]
	testenv.Eventually(t, 10*time.Second, "a tile of the seed", func() bool { return len(a.Keys(t, "run:slow/")) > 0 })

	busy := "Layer run:slow has tasks in progress (" + strconv.FormatInt(id, 10) + "): "
	wantError(t, a.Do(t, "PUT", "/rest/layers/run:slow.xml?truncate=true", slowWMSDoc, xml...), http.StatusConflict,
		busy+"its orphaned tiles cannot be truncated (?truncate=true); kill them first (POST /rest/seed/run:slow with kill_all=all) or wait for them to finish")
	wantError(t, a.Do(t, "DELETE", "/rest/layers/run:slow.xml?truncate=true", ""), http.StatusConflict,
		busy+"it cannot be deleted; kill them first (POST /rest/seed/run:slow with kill_all=all) or wait for them to finish")
	// Nothing was changed: the seed still runs on the old definition.
	if got := list(t, a, "/rest/seed/run:slow.json"); len(got) != 1 || got[0][4] != 1 {
		t.Fatalf("the seed after the refusals: %v, want it running", got)
	}

	killAll(t, a)
	testenv.Eventually(t, 30*time.Second, "the killed seed to stop", func() bool {
		for _, r := range list(t, a, "/rest/seed/run:slow.json") {
			if r[4] == 0 || r[4] == 1 {
				return false
			}
		}
		return true
	})
	res := a.Do(t, "DELETE", "/rest/layers/run:slow.xml?truncate=true", "")
	if res.Status != http.StatusOK || !strings.Contains(res.Body, "<action>deleted</action>") {
		t.Fatalf("DELETE ?truncate=true after the kill: %d %s", res.Status, res.Body)
	}
	// The tiles are truncated in the background, by a TRUNCATE task of the
	// deleted layer's name.
	testenv.Eventually(t, 30*time.Second, "the deleted layer's truncation to end", func() bool {
		res := a.Do(t, "GET", "/rest/seed/run:slow.json", "")
		return res.Status == http.StatusBadRequest // the mark is gone with the truncation
	})
	if n := len(a.Keys(t, "run:slow/")); n != 0 {
		t.Errorf("%d objects of the deleted layer left", n)
	}
	wantError(t, a.Do(t, "GET", "/rest/layers/run:slow.xml", ""), http.StatusNotFound, "Unknown layer: run:slow")
}
