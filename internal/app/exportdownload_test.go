package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// TestExportDownload: GET /rest/export/{layer}.json lists the archives the
// layer's exports wrote, and ?archive= hands one out: on S3 a redirect to
// a link that reads it without credentials (the archive is far larger than
// an API answer may be), on the embedded backend the archive itself, with
// ranges. Either way the bytes are the stored archive's.
func TestExportDownload(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	seedWorld(t, a, 2)
	ans := exportReq(t, a, "demo:world", exportBody("pmtiles", 2))
	if tk := waitExport(t, a, ans.Task, 60*time.Second); tk.Status != task.Done {
		t.Fatalf("export task: %+v", tk)
	}
	want := archiveBytes(t, a, ans.Key)

	res := a.Do(t, "GET", "/rest/export/demo:world.json", "")
	var list struct {
		Layer    string
		Archives []struct {
			Task    int64
			Archive string
			Size    int64
			Href    string
		}
	}
	if res.Status != 200 || json.Unmarshal([]byte(res.Body), &list) != nil || len(list.Archives) != 1 {
		t.Fatalf("the listing: %d %s, want one archive", res.Status, res.Body)
	}
	got := list.Archives[0]
	href := fmt.Sprintf("/rest/export/demo:world.json?archive=%d.pmtiles", ans.Task)
	if got.Task != ans.Task || got.Archive != "pmtiles" || got.Size != int64(len(want)) || got.Href != href {
		t.Errorf("listed %+v, want task %d, pmtiles, %d bytes at %s", got, ans.Task, len(want), href)
	}

	// The download, as a client that does not send its credentials on.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", a.URL+got.Href, nil)
	req.SetBasicAuth(apptest.User, apptest.Password)
	dl, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(dl.Body)
	dl.Body.Close()
	if dl.StatusCode == http.StatusFound {
		link := dl.Header.Get("Location")
		t.Logf("redirected to a link of %d bytes", len(link))
		res, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Disposition"), "demo-world-") {
			t.Fatalf("GET of the link: %d %v", res.StatusCode, res.Header)
		}
	} else if dl.StatusCode != 200 || !strings.HasPrefix(dl.Header.Get("Content-Disposition"), "attachment") ||
		dl.Header.Get("Content-Type") != "application/vnd.pmtiles" {
		t.Fatalf("download: %d %v %q", dl.StatusCode, dl.Header, body)
	} else {
		// Served by the program: ranges too, as a map library reads it.
		r := a.Do(t, "GET", got.Href, "", "Range", "bytes=0-126")
		if r.Status != 206 || r.Body != string(want[:127]) {
			t.Errorf("a range of the archive: %d, %d bytes", r.Status, len(r.Body))
		}
	}
	if !bytes.Equal(body, want) {
		t.Errorf("downloaded %d bytes, want the archive's %d", len(body), len(want))
	}

	for _, c := range []struct {
		user, path string
		status     int
	}{
		{apptest.User, "/rest/export/demo:world.json?archive=999999.pmtiles", 404},
		{apptest.User, "/rest/export/demo:world.json?archive=" + url.QueryEscape("../../x.pmtiles"), 404},
		{apptest.User, "/rest/export/demo:world.json?archive=1.zip", 404},
		{apptest.User, "/rest/export/nope.json", 404},
		{apptest.ViewerUser, "/rest/export/demo:world.json", 403},
		{apptest.OperatorUser, "/rest/export/demo:world.json", 200},
	} {
		if r := a.DoAuth(t, c.user, apptest.Password, "GET", c.path, ""); r.Status != c.status {
			t.Errorf("%s GET %s: %d %q, want %d", c.user, c.path, r.Status, r.Body, c.status)
		}
	}
}

// TestExportPublished: an export with publish writes the tile set's served
// PMTiles (archives/{layer}/{grid set}/{format}/{parameters}.pmtiles), every
// tile the stored one; the tile set's TileJSON and index.json then name it.
// Only a PMTiles of a public layer is published.
func TestExportPublished(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{Layers: privateLayers, Env: map[string]string{"TILECACHE_TILE_TOKEN_KEYS": privateKeys}})
	seedWorld(t, a, 2)
	key := tilestore.ArchiveKey("demo:world", "EPSG:900913", "png", "default")
	body := `{"exportRequest":{"gridSetId":"EPSG:900913","format":"image/png","zoomStart":0,"zoomStop":2,"archive":"pmtiles","publish":true}}`
	ans := exportReq(t, a, "demo:world", body)
	if ans.Key != a.Prefix+key {
		t.Errorf("a published export writes %s, want the tile set's archive %s", ans.Key, a.Prefix+key)
	}
	if tk := waitExport(t, a, ans.Task, 60*time.Second); tk.Status != task.Done {
		t.Fatalf("export task: %+v", tk)
	}
	rd, _ := openArchive(t, "pmtiles", archiveBytes(t, a, ans.Key), t.TempDir())
	if n := checkArchiveTiles(t, a, rd, "demo:world/EPSG:900913/png/default/", 0, 2); n != 21 {
		t.Errorf("the published archive holds %d tiles, want 21", n)
	}
	tj, _, ok := a.Get(t, "demo:world/EPSG:900913/png/default/tilejson.json")
	if !ok || !strings.Contains(string(tj), `"pmtiles": "`) || !strings.Contains(string(tj), key) {
		t.Errorf("the TileJSON does not name the archive: %s", tj)
	}
	idx, _, _ := a.Get(t, "index.json")
	if !strings.Contains(string(idx), `"pmtiles":"./`+key+`"`) {
		t.Errorf("index.json does not list the archive: %s", idx)
	}
	for _, c := range []struct{ layer, body, says string }{
		{"demo:world", strings.Replace(body, `"pmtiles"`, `"mbtiles"`, 1), "give \"archive\": \"pmtiles\""},
		{"topp:states", strings.Replace(body, `"format":"image/png",`, "", 1), "private"},
		{"demo:world", strings.Replace(body, `"publish":true`, `"publish":"yes"`, 1), "publish is true or false"},
	} {
		if res := a.Do(t, "POST", "/rest/export/"+c.layer+".json", c.body); res.Status != 400 || !strings.Contains(res.Body, c.says) {
			t.Errorf("POST export of %s %s: %d %q, want 400 naming %q", c.layer, c.body, res.Status, res.Body, c.says)
		}
	}
}
