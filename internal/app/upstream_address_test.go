package app_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
)

// TestUpstreamAddresses: with TILECACHE_UPSTREAM_ALLOW unset, an
// upstream on 127.0.0.1 is reached only by a layer of the layer file that
// sets allowPrivateUpstream. Another layer, of the file or handed to the
// store, neither seeds nor renders a miss from it: its task aborts on the
// refused address, no request reaches the upstream, nothing is stored. A
// layer document naming a loopback, link-local or private address (or
// asking for allowPrivateUpstream) is refused with a 400 at PUT.
func TestUpstreamAddresses(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "how a source treats a hostile or secret-bearing upstream")
	up := apptest.Start(t, apptest.Options{Layers: `
layers:
  - name: src:world
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    source: {type: testpattern}
`})
	var requests atomic.Int64
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		res, err := http.Get(up.URL + r.RequestURI)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	}))
	defer counting.Close()
	tmpl := counting.URL + "/tiles/src:world/EPSG:900913/png/{z}/{x}/{y}.png"

	var log apptest.LogBuffer
	a := apptest.Start(t, apptest.Options{Env: map[string]string{"TILECACHE_UPSTREAM_ALLOW": ""}, Log: &log, Layers: fmt.Sprintf(`
layers:
  - name: up:closed
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [1, 1]
    renderOnMiss: {enabled: true}
    source: {type: xyz, url: "%[1]s", retries: 2, retryBackoff: 2s}
  - name: up:store
    managedBy: store
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: xyz, url: "%[1]s"}
  - name: up:open
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: xyz, url: "%[1]s", allowPrivateUpstream: true}
`, tmpl)})

	for _, name := range []string{"up:closed", "up:store"} {
		tasks := seedAndWait(t, a, name, `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`)
		if tasks[0].Status != task.Aborted {
			t.Errorf("%s: got %+v, want ABORTED on the refused address", name, tasks[0])
		}
		if got := keys(t, a, name+"/"); len(got) != 0 {
			t.Errorf("%s: stored %v, want nothing", name, got)
		}
		if !logHas(log.String(), "task aborted on tile failure", name, "refused to connect to 127.0.0.1, a loopback address") {
			t.Errorf("%s: no record of the abort naming the address's class in the log:\n%s", name, log.String())
		}
	}
	if status, _, _ := getTile(t, a.URL, "/tiles/up:closed/EPSG:900913/png/1/0/0.png"); status == http.StatusOK {
		t.Errorf("a miss of up:closed: got 200, want it not rendered")
	}
	if got := keys(t, a, "up:closed/"); len(got) != 0 {
		t.Errorf("a miss of up:closed stored %v, want nothing", got)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests reached the upstream, want none", n)
	}

	wantDone(t, seedAndWait(t, a, "up:open", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`))
	if got := keys(t, a, "up:open/"); len(got) != 5 || requests.Load() != 5 {
		t.Errorf("up:open: stored %v after %d requests, want 5 tiles from 5", got, requests.Load())
	}

	doc := func(name, wmsURL, extra string) string {
		return `<wmsLayer><name>` + name + `</name><mimeFormats><string>image/png</string></mimeFormats>
  <gridSubsets><gridSubset><gridSetName>EPSG:4326</gridSetName></gridSubset></gridSubsets>
  <wmsUrl><string>` + wmsURL + `</string></wmsUrl><wmsLayers>x</wmsLayers>` + extra + `</wmsLayer>`
	}
	xml := []string{"Content-Type", "text/xml"}
	for u, class := range map[string]string{
		counting.URL + "/wms?apikey=s3cret":                        "loopback",
		"http://localhost:9001/2018-06-01/runtime/invocation/next": "loopback",
		"http://169.254.169.254/latest/meta-data/":                 "link-local",
		"http://[fd00:ec2::254]/latest/meta-data/":                 "unique-local",
		"http://[::ffff:10.0.0.8]/wms":                             "private",
	} {
		res := a.Do(t, "PUT", "/rest/layers/rest:inside.xml", doc("rest:inside", u, ""), xml...)
		if res.Status != http.StatusBadRequest || !strings.Contains(res.Body, "is at a "+class+" address") || strings.Contains(res.Body, "s3cret") {
			t.Errorf("PUT with wmsUrl %s: got %d %q, want 400 naming the %s class, the URL redacted", u, res.Status, res.Body, class)
		}
	}
	wantStatus(t, a.Do(t, "PUT", "/rest/layers/rest:inside.xml", doc("rest:inside", "https://wms.example.org/wms", "<allowPrivateUpstream>true</allowPrivateUpstream>"), xml...),
		http.StatusBadRequest, "allowPrivateUpstream")
	if res := a.Do(t, "GET", "/rest/layers/rest:inside.xml", ""); res.Status != http.StatusNotFound {
		t.Errorf("after the refused PUTs: GET got %d, want 404 (nothing saved)", res.Status)
	}
	if res := a.Do(t, "PUT", "/rest/layers/rest:outside.xml", doc("rest:outside", "https://wms.example.org/wms", ""), xml...); res.Status != http.StatusOK {
		t.Errorf("PUT with a public wmsUrl: got %d %q, want 200", res.Status, res.Body)
	}
}
