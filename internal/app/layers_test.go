package app_test

// Layers and grid sets managed at run time through GeoWebCache's REST
// representation, on the project's MapServer WMS: the whole cycle (PUT,
// GET equal to the document in its normalised form, a seed with the
// definition, a change with its orphaned tiles reported and truncated, a
// seed with the new definition, DELETE), optimistic versions, the
// refusals, the configuration surviving a restart, and a second process
// seeing a change within its refresh delay.

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/grid"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

// runLayerDoc is a wmsLayer document as GeoWebCache's documentation
// writes one, on the test WMS, in the custom grid set Quarter (EPSG:4326
// in 3 levels of 512-pixel tiles).
func runLayerDoc(wmsURL, formats, zoomStop string) string {
	var fs strings.Builder
	for _, f := range strings.Split(formats, ",") {
		fs.WriteString("<string>" + f + "</string>")
	}
	return `<wmsLayer>
  <name>run:world</name>
  <metaInformation><title>Run time</title></metaInformation>
  <mimeFormats>` + fs.String() + `</mimeFormats>
  <gridSubsets>
    <gridSubset><gridSetName>EPSG:4326</gridSetName><zoomStart>0</zoomStart><zoomStop>` + zoomStop + `</zoomStop></gridSubset>
    <gridSubset><gridSetName>Quarter</gridSetName></gridSubset>
  </gridSubsets>
  <metaWidthHeight><int>2</int><int>2</int></metaWidthHeight>
  <expireClients>3600</expireClients>
  <wmsUrl><string>` + wmsURL + `</string></wmsUrl>
  <wmsLayers>hillshade,polygons,lines,points</wmsLayers>
</wmsLayer>`
}

func quarterDoc(t *testing.T) string {
	t.Helper()
	g := &grid.GridSet{ID: "Quarter", EPSG: 4326, Extent: grid.Extent{MinX: -180, MinY: -90, MaxX: 180, MaxY: 90},
		TileWidth: 512, TileHeight: 512, Resolutions: []float64{0.3515625, 0.17578125, 0.087890625}}
	doc, err := gwc.EncodeGridSet(g, layer.GridSetInfo{Description: "EPSG:4326 in 512-pixel tiles"})
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

func TestLayersManagedAtRunTime(t *testing.T) {
	t.Parallel()
	wmsURL := testenv.RequireWMS(t)
	dir := t.TempDir()
	a := apptest.Start(t, apptest.Options{DataDir: dir, SeedThreads: 2})
	xml := []string{"Content-Type", "text/xml"}

	// A grid set, then a layer that uses it.
	res := a.Do(t, "PUT", "/rest/gridsets/Quarter.xml", quarterDoc(t), xml...)
	if res.Status != http.StatusOK || !strings.Contains(res.Body, "<action>created</action>") || res.Header.Get("ETag") == "" {
		t.Fatalf("PUT grid set: %d %s", res.Status, res.Body)
	}
	doc := runLayerDoc(wmsURL, "image/png", "2")
	res = a.Do(t, "PUT", "/rest/layers/run:world.xml", doc, xml...)
	if res.Status != http.StatusOK || !strings.Contains(res.Body, "<action>created</action>") {
		t.Fatalf("PUT layer: %d %s", res.Status, res.Body)
	}
	tag := res.Header.Get("ETag")

	// GET answers the document in its normalised form, with the same ETag.
	res = a.Do(t, "GET", "/rest/layers/run:world.xml", "")
	if res.Status != http.StatusOK || res.Header.Get("ETag") != tag || tag == "" {
		t.Fatalf("GET layer: %d ETag %q (PUT said %q)\n%s", res.Status, res.Header.Get("ETag"), tag, res.Body)
	}
	sent, err := gwc.DecodeLayer([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	got, err := gwc.DecodeLayer([]byte(res.Body))
	if err != nil {
		t.Fatalf("GET layer: %v\n%s", err, res.Body)
	}
	// The normalised form: the defaults written out (enabled), a first
	// level of 0 left out.
	enabled := true
	sent.Enabled = &enabled
	sent.GridSubsets[0].ZoomStart = nil
	if !reflect.DeepEqual(got, sent) {
		t.Errorf("GET answers\n%+v\nwant what was PUT\n%+v", got, sent)
	}
	res = a.Do(t, "GET", "/rest/layers", "")
	if !strings.Contains(res.Body, "<name>run:world</name>") {
		t.Errorf("the layer list lacks the new layer:\n%s", res.Body)
	}

	// A seed with that definition: z0–2 of EPSG:4326 in PNG.
	rows := seedReq(t, a, "run:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2,"format":"image/png","threadCount":2}}`)
	waitFinished(t, a, ids(rows), 2*time.Minute)
	if got, want := keys(t, a, "run:world/EPSG:4326/png/default/"), expectKeys("run:world/EPSG:4326/png/default/", 0, 2, "png"); !slices.Equal(got, want) {
		t.Fatalf("seeded %d tiles, want %d", len(got), len(want))
	}
	if _, meta, _ := a.Get(t, "run:world/EPSG:4326/png/default/0/0/0.png"); meta.CacheControl != "public, max-age=3600" {
		t.Errorf("a seeded tile's Cache-Control is %q, want the layer's expireClients", meta.CacheControl)
	}
	// Served as the CDN serves the bucket, by key and through the WMTS path.
	for _, path := range []string{"/run:world/EPSG:4326/png/default/1/3/1.png", "/wmts/run:world/EPSG:4326/png/default/1/3/0.png"} {
		if res := a.DoAuth(t, "", "", "GET", path, ""); res.Status != http.StatusOK || res.Header.Get("Content-Type") != "image/png" {
			t.Errorf("GET %s: %d %s", path, res.Status, res.Header.Get("Content-Type"))
		}
	}
	// The discovery documents follow: the tile set is in the index.
	testenv.Eventually(t, 10*time.Second, "index.json to list the new layer", func() bool {
		return strings.Contains(a.DoAuth(t, "", "", "GET", "/index.json", "").Body, `"run:world"`)
	})
	// JPEG is not a format of the layer yet.
	if res := a.Do(t, "POST", "/rest/seed/run:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":0,"format":"image/jpeg"}}`); res.Status != http.StatusBadRequest {
		t.Fatalf("a JPEG seed before the change: %d %s", res.Status, res.Body)
	}

	// Optimistic versions: a stale If-Match is a 412 and changes nothing.
	changed := runLayerDoc(wmsURL, "image/png,image/jpeg", "1")
	res = a.Do(t, "PUT", "/rest/layers/run:world.xml", changed, "Content-Type", "text/xml", "If-Match", `"0123456789abcdef01234567"`)
	if res.Status != http.StatusPreconditionFailed || !strings.Contains(res.Body, "changed since you read it") {
		t.Fatalf("a stale PUT: %d %s", res.Status, res.Body)
	}
	if res := a.Do(t, "PUT", "/rest/layers/run:world.xml", changed, "Content-Type", "text/xml", "If-None-Match", "*"); res.Status != http.StatusPreconditionFailed {
		t.Fatalf("PUT with If-None-Match: * of an existing layer: %d %s", res.Status, res.Body)
	}

	// The change (POST, GeoWebCache's modification): JPEG added, level 2
	// dropped. The answer counts the tiles of level 2, orphaned; they stay
	// until asked.
	res = a.Do(t, "POST", "/rest/layers/run:world.xml", changed, "Content-Type", "text/xml", "If-Match", tag)
	if res.Status != http.StatusOK || !strings.Contains(res.Body, "<action>modified</action>") ||
		!strings.Contains(res.Body, `tiles="32"`) || !strings.Contains(res.Body, `reason="level 2 no longer in the grid subset"`) {
		t.Fatalf("POST the change: %d %s", res.Status, res.Body)
	}
	if res.Header.Get("ETag") == tag {
		t.Errorf("the ETag did not change with the definition")
	}
	if n := len(keys(t, a, "run:world/EPSG:4326/png/default/2/")); n != 32 {
		t.Errorf("%d tiles of level 2 stored after a change without truncate, want the 32 kept", n)
	}
	// The same change again with ?truncate=true removes them.
	res = a.Do(t, "PUT", "/rest/layers/run:world.xml?truncate=true", changed, xml...)
	if res.Status != http.StatusOK || !strings.Contains(res.Body, `truncated="32"`) {
		t.Fatalf("PUT ?truncate=true: %d %s", res.Status, res.Body)
	}
	if n := len(keys(t, a, "run:world/EPSG:4326/png/default/2/")); n != 0 {
		t.Errorf("%d tiles of level 2 left after ?truncate=true", n)
	}
	if n := len(keys(t, a, "run:world/EPSG:4326/png/default/")); n != 10 {
		t.Errorf("%d tiles of levels 0–1 left, want the 10 still addressed", n)
	}

	// A seed with the new definition: JPEG.
	rows = seedReq(t, a, "run:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":1,"format":"image/jpeg"}}`)
	waitFinished(t, a, ids(rows), 2*time.Minute)
	if got, want := keys(t, a, "run:world/EPSG:4326/jpeg/default/"), expectKeys("run:world/EPSG:4326/jpeg/default/", 0, 1, "jpeg"); !slices.Equal(got, want) {
		t.Errorf("seeded %v, want %v", got, want)
	}
	// And in the custom grid set: the 2 tiles of 512 pixels of its level 0.
	rows = seedReq(t, a, "run:world", `{"seedRequest":{"gridSetId":"Quarter","zoomStart":0,"zoomStop":0,"format":"image/png"}}`)
	waitFinished(t, a, ids(rows), 2*time.Minute)
	if got := keys(t, a, "run:world/Quarter/png/default/"); !slices.Equal(got, []string{"run:world/Quarter/png/default/0/0/0.png", "run:world/Quarter/png/default/0/1/0.png"}) {
		t.Errorf("seeded %v of Quarter, want its 2 tiles of level 0", got)
	}

	// Refusals.
	wantStatus(t, a.Do(t, "PUT", "/rest/layers/other.xml", changed, xml...), http.StatusBadRequest,
		`The layer document's <name> is "run:world" but the address names layer "other": they must match`)
	wantStatus(t, a.Do(t, "POST", "/rest/layers/nope.xml", strings.Replace(changed, "run:world", "nope", 1), xml...), http.StatusNotFound,
		"Unknown layer: nope (PUT creates a layer, POST only modifies one)")
	wantStatus(t, a.Do(t, "PUT", "/rest/layers/bad.xml", strings.Replace(strings.Replace(changed, "run:world", "bad", 1), "</wmsLayer>", "<blobStoreId>x</blobStoreId></wmsLayer>", 1), xml...),
		http.StatusBadRequest, "blobStoreId")
	wantStatus(t, a.Do(t, "PUT", "/rest/layers/bad.xml", strings.Replace(strings.Replace(changed, "run:world", "bad", 1), "Quarter", "Nowhere", 1), xml...),
		http.StatusBadRequest, `unknown grid set "Nowhere"`)
	wantStatus(t, a.Do(t, "DELETE", "/rest/gridsets/Quarter.xml", ""), http.StatusConflict,
		"Grid set Quarter is used by layers run:world: remove it from them first")
	wantStatus(t, a.Do(t, "PUT", "/rest/layers/demo:world.xml", strings.Replace(changed, "run:world", "demo:world", 1), xml...), http.StatusConflict,
		"Layer demo:world is managed by the layer file")

	// The configuration survives a restart.
	a.Stop()
	a = apptest.Start(t, apptest.Options{DataDir: dir, Backend: backendOf(a)})
	if res := a.Do(t, "GET", "/rest/layers/run:world.xml", ""); res.Status != http.StatusOK || !strings.Contains(res.Body, "image/jpeg") {
		t.Fatalf("after a restart: %d %s", res.Status, res.Body)
	}

	// DELETE with a task in progress is refused; without truncate the
	// tiles stay; the grid set can go once no layer uses it.
	rows = seedReq(t, a, "run:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":1,"zoomStop":1,"format":"image/png","type":"reseed"}}`)
	if res := a.Do(t, "DELETE", "/rest/layers/run:world.xml", ""); res.Status != http.StatusConflict || !strings.Contains(res.Body, "kill them first") {
		// The reseed may have finished already: then the DELETE went
		// through, which the next checks would catch.
		if res.Status != http.StatusOK {
			t.Fatalf("DELETE with a task in progress: %d %s", res.Status, res.Body)
		}
		t.Logf("the reseed finished before the DELETE: %s", res.Body)
	} else {
		waitFinished(t, a, ids(rows), 2*time.Minute)
		res = a.Do(t, "DELETE", "/rest/layers/run:world.xml?truncate=true", "")
		if res.Status != http.StatusOK || !strings.Contains(res.Body, "<action>deleted</action>") {
			t.Fatalf("DELETE ?truncate=true: %d %s", res.Status, res.Body)
		}
		// The tiles go in the background: the truncation's end removes
		// the deletion mark, and the name is unknown again.
		testenv.EventuallyEvery(t, time.Minute, 100*time.Millisecond, "the deleted layer's truncation to end", func() bool {
			return a.Do(t, "GET", "/rest/seed/run:world.json", "").Status == http.StatusBadRequest
		})
		if n := len(keys(t, a, "run:world/")); n != 0 {
			t.Errorf("%d tiles left after DELETE ?truncate=true", n)
		}
		if body := a.DoAuth(t, "", "", "GET", "/index.json", "").Body; strings.Contains(body, `"run:world"`) {
			t.Errorf("index.json still lists the deleted layer:\n%s", body)
		}
	}
	if res := a.Do(t, "GET", "/rest/layers/run:world.xml", ""); res.Status != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d", res.Status)
	}
	if res := a.Do(t, "POST", "/rest/seed/run:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":0}}`); res.Status != http.StatusBadRequest {
		t.Errorf("a seed of the deleted layer: %d %s", res.Status, res.Body)
	}
	if res := a.Do(t, "DELETE", "/rest/gridsets/Quarter.xml", ""); res.Status != http.StatusOK {
		t.Errorf("DELETE the unused grid set: %d %s", res.Status, res.Body)
	}
	if res := a.Do(t, "GET", "/rest/gridsets/Quarter.xml", ""); res.Status != http.StatusNotFound {
		t.Errorf("GET the deleted grid set: %d", res.Status)
	}
}

// backendOf returns the backend an app was started on ("" embedded).
func backendOf(a *apptest.App) string {
	if a.Prefix != "" {
		return "aws"
	}
	return ""
}

// wantStatus checks an answer's status and that its text holds part.
func wantStatus(t *testing.T, res apptest.Response, status int, part string) {
	t.Helper()
	if res.Status != status || !strings.Contains(res.Body, part) {
		t.Errorf("got %d %q, want %d with %q", res.Status, res.Body, status, part)
	}
}

// TestLayerChangeSeenByAnotherProcess: two `tilecache serve` on one AWS
// stack; a layer created through one is seeded through the other within
// the refresh delay (TILECACHE_LAYERS_REFRESH), and a change made through
// one is the definition the other's next seed uses.
func TestLayerChangeSeenByAnotherProcess(t *testing.T) {
	t.Parallel()
	awsPass(t)
	wmsURL := testenv.RequireWMS(t)
	dir := t.TempDir()
	extra := map[string]string{"TILECACHE_LAYERS_REFRESH": "1s"}
	pa := apptest.StartProcess(t, dir, extra)
	pb := apptest.StartProcess(t, dir, extra)
	a, b := pa.App(), pb.App()
	xml := []string{"Content-Type", "text/xml"}
	if res := a.Do(t, "PUT", "/rest/gridsets/Quarter.xml", quarterDoc(t), xml...); res.Status != http.StatusOK {
		t.Fatalf("PUT grid set: %d %s", res.Status, res.Body)
	}
	if res := a.Do(t, "PUT", "/rest/layers/run:world.xml", runLayerDoc(wmsURL, "image/png", "3"), xml...); res.Status != http.StatusOK {
		t.Fatalf("PUT layer: %d %s", res.Status, res.Body)
	}
	start := time.Now()
	testenv.Eventually(t, 10*time.Second, "process B to know the layer", func() bool {
		return b.Do(t, "GET", "/rest/layers/run:world.xml", "").Status == http.StatusOK
	})
	seen := time.Since(start)
	t.Logf("process B saw the new layer after %v (refresh every 1s)", seen.Round(time.Millisecond))
	if seen > 3*time.Second {
		t.Errorf("process B saw the layer after %v, more than the refresh delay allows", seen)
	}
	// A changes the formats; B's next seed of JPEG is accepted within the delay.
	if res := a.Do(t, "PUT", "/rest/layers/run:world.xml", runLayerDoc(wmsURL, "image/png,image/jpeg", "3"), xml...); res.Status != http.StatusOK {
		t.Fatalf("PUT the change: %d %s", res.Status, res.Body)
	}
	var rows []row
	testenv.Eventually(t, 10*time.Second, "process B to accept a JPEG seed", func() bool {
		res := b.Do(t, "POST", "/rest/seed/run:world.json", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":1,"format":"image/jpeg"}}`)
		if res.Status == http.StatusOK {
			rows = decodeRows(t, res.Body)
			return true
		}
		return false
	})
	testenv.Eventually(t, 2*time.Minute, "the JPEG seed to finish", func() bool {
		for _, r := range listRows(t, b, "/rest/seed.json") {
			if slices.Contains(ids(rows), r[3]) {
				return false
			}
		}
		return true
	})
	backends, prefix := apptest.AWSBackends(t, dir, nil)
	var got []string
	backends.Tiles.List(t.Context(), prefix+"run:world/EPSG:4326/jpeg/", func(o tilestore.Object) error {
		if k := strings.TrimPrefix(o.Key, prefix); apptest.IsTileKey(k) {
			got = append(got, k)
		}
		return nil
	})
	if want := expectKeys("run:world/EPSG:4326/jpeg/default/", 0, 1, "jpeg"); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestSeedOfALayerDeletedByAnotherProcess: a process whose catalogue is
// a whole refresh period behind (1 h here) reads the configuration's
// version before it records a seed, so a layer another process deleted
// (truncating its tiles) is refused at once instead of seeded again.
func TestSeedOfALayerDeletedByAnotherProcess(t *testing.T) {
	t.Parallel()
	awsPass(t)
	wmsURL := testenv.RequireWMS(t)
	dir := t.TempDir()
	extra := map[string]string{"TILECACHE_LAYERS_REFRESH": "1h"}
	pa := apptest.StartProcess(t, dir, extra)
	a := pa.App()
	xml := []string{"Content-Type", "text/xml"}
	if res := a.Do(t, "PUT", "/rest/gridsets/Quarter.xml", quarterDoc(t), xml...); res.Status != http.StatusOK {
		t.Fatalf("PUT grid set: %d %s", res.Status, res.Body)
	}
	if res := a.Do(t, "PUT", "/rest/layers/run:world.xml", runLayerDoc(wmsURL, "image/png", "3"), xml...); res.Status != http.StatusOK {
		t.Fatalf("PUT layer: %d %s", res.Status, res.Body)
	}
	// B starts knowing the layer, and would not read the configuration
	// again for an hour.
	b := apptest.StartProcess(t, dir, extra).App()
	if res := b.Do(t, "GET", "/rest/layers/run:world.xml", ""); res.Status != http.StatusOK {
		t.Fatalf("process B does not know the layer: %d %s", res.Status, res.Body)
	}
	if res := a.Do(t, "DELETE", "/rest/layers/run:world.xml?truncate=true", ""); res.Status != http.StatusOK {
		t.Fatalf("DELETE ?truncate=true: %d %s", res.Status, res.Body)
	}
	res := b.Do(t, "POST", "/rest/seed/run:world.json", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":1,"format":"image/png"}}`)
	if res.Status != http.StatusBadRequest || !strings.Contains(res.Body, "Unknown layer: run:world") {
		t.Fatalf("process B's seed of the layer A deleted: %d %s, want 400 Unknown layer", res.Status, res.Body)
	}
	if res := b.Do(t, "GET", "/rest/layers/run:world.xml", ""); res.Status != http.StatusNotFound {
		t.Errorf("process B after its refused seed: GET the layer %d, want 404 (its catalogue brought up to date)", res.Status)
	}
}

// TestLayerChangesReachTheCDN: the tiles a layer change truncates, and a
// deleted layer's tiles and the root documents that listed it, are
// invalidated in the CDN (a CloudFront-compatible server).
func TestLayerChangesReachTheCDN(t *testing.T) {
	t.Parallel()
	wmsURL := testenv.RequireWMS(t)
	c := apptest.NewCDN(t)
	a := apptest.Start(t, apptest.Options{SeedThreads: 2, Env: map[string]string{"TILECACHE_CDN_DISTRIBUTION_ID": c.ID}})
	xml := []string{"Content-Type", "text/xml"}
	if res := a.Do(t, "PUT", "/rest/gridsets/Quarter.xml", quarterDoc(t), xml...); res.Status != http.StatusOK {
		t.Fatalf("PUT grid set: %d %s", res.Status, res.Body)
	}
	if res := a.Do(t, "PUT", "/rest/layers/run:world.xml", runLayerDoc(wmsURL, "image/png", "2"), xml...); res.Status != http.StatusOK {
		t.Fatalf("PUT layer: %d %s", res.Status, res.Body)
	}
	rows := seedReq(t, a, "run:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2,"format":"image/png"}}`)
	waitFinished(t, a, ids(rows), 2*time.Minute)
	const set = "run:world/EPSG:4326/png/default/"

	// Level 2 dropped and truncated: each of its tiles is invalidated.
	before := keys(t, a, set)
	paths := cdnStep(t, a, c, func() {
		if res := a.Do(t, "PUT", "/rest/layers/run:world.xml?truncate=true", runLayerDoc(wmsURL, "image/png", "1"), xml...); res.Status != http.StatusOK {
			t.Fatalf("PUT the change: %d %s", res.Status, res.Body)
		}
	})
	gone := missing(before, keys(t, a, set))
	if len(gone) != 32 {
		t.Fatalf("%d tiles truncated, want the 32 of level 2", len(gone))
	}
	for _, k := range gone {
		if !slices.ContainsFunc(paths, func(p string) bool { return apptest.Covers(p, requestPath(k)) }) {
			t.Fatalf("truncated tile %s not invalidated (paths %q)", k, paths)
		}
	}

	// Deleted with its tiles: they and the index that listed it are invalidated.
	left := keys(t, a, set)
	paths = cdnStep(t, a, c, func() {
		if res := a.Do(t, "DELETE", "/rest/layers/run:world.xml?truncate=true", ""); res.Status != http.StatusOK {
			t.Fatalf("DELETE: %d %s", res.Status, res.Body)
		}
		// The tiles go in the background, and the CDN hears of them when
		// their truncation ends (it removes the deletion mark).
		testenv.EventuallyEvery(t, time.Minute, 100*time.Millisecond, "the deleted layer's truncation to end", func() bool {
			return a.Do(t, "GET", "/rest/seed/run:world.json", "").Status == http.StatusBadRequest
		})
	})
	for _, k := range append(left, "index.json") {
		if !slices.ContainsFunc(paths, func(p string) bool { return apptest.Covers(p, requestPath(k)) }) {
			t.Errorf("%s not invalidated after the layer's deletion (paths %q)", k, paths)
		}
	}
}
