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
