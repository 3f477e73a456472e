package rest_test

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"regexp"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

// The usage report, GET /rest/diskquota/usage.json|.xml (docs/rest.md "Disk
// usage report"): read-only, behind the same authentication, 405 with Allow for
// other methods.

func TestUsageReport(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	res := a.Do(t, "PUT", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"globalQuota":{"value":"100","units":"MiB"},
		"layerQuotas":[{"layer":"topp:states","expirationPolicyName":"LRU","quota":{"value":"10","units":"MiB"}}]}}`)
	if res.Status != http.StatusOK {
		t.Fatalf("PUT: got %d %q", res.Status, res.Body)
	}
	rows := seedJSON(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`)
	testenv.Eventually(t, 10*time.Second, "the seed to finish", func() bool { return len(list(t, a, "/rest/seed.json")) == 0 })
	_ = rows

	res = a.Do(t, "GET", "/rest/diskquota/usage.json", "")
	wantOK(t, res, ctJSON)
	re := regexp.MustCompile(`^\{"diskQuotaUsage":\{"enabled":false,"diskBlockSize":4096,"usedBytes":\d+,"usedTiles":10,` +
		`"globalQuota":\{"value":"100","units":"MiB"\},"globalExpirationPolicyName":"LFU","lastCleanUp":null,"recountPending":(true|false),"layers":\[` +
		`\{"layer":"demo:world","usedBytes":\d+,"usedTiles":10,"recountPending":(true|false)\},` +
		`\{"layer":"topp:states","usedBytes":0,"usedTiles":0,"quota":\{"value":"10","units":"MiB"\},"expirationPolicyName":"LRU","recountPending":(true|false)\},` +
		`\{"layer":"slow:world",.*\]\}\}$`)
	if !re.MatchString(res.Body) {
		t.Errorf("GET usage.json: got %s", res.Body)
	}
	var doc struct {
		U struct {
			UsedBytes int64 `json:"usedBytes"`
			Layers    []struct {
				UsedBytes int64 `json:"usedBytes"`
			} `json:"layers"`
		} `json:"diskQuotaUsage"`
	}
	if err := json.Unmarshal([]byte(res.Body), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.U.UsedBytes < 10*4096 || doc.U.UsedBytes%4096 != 0 || doc.U.UsedBytes != doc.U.Layers[0].UsedBytes {
		t.Errorf("usedBytes %d: want 10 tiles in whole 4096-byte blocks, all of demo:world", doc.U.UsedBytes)
	}

	res = a.Do(t, "GET", "/rest/diskquota/usage.xml", "")
	wantOK(t, res, ctQuotaXML)
	var x struct {
		XMLName   xml.Name `xml:"diskQuotaUsage"`
		UsedTiles int64    `xml:"usedTiles"`
		Layers    []struct {
			Layer     string `xml:"layer"`
			UsedTiles int64  `xml:"usedTiles"`
			Quota     *struct {
				Value string `xml:"value"`
				Units string `xml:"units"`
			} `xml:"quota"`
		} `xml:"layers>layerUsage"`
	}
	if err := xml.Unmarshal([]byte(res.Body), &x); err != nil {
		t.Fatalf("decode %s: %v", res.Body, err)
	}
	if x.UsedTiles != 10 || len(x.Layers) != 4 || x.Layers[0].Layer != "demo:world" || x.Layers[0].UsedTiles != 10 ||
		x.Layers[1].Quota == nil || x.Layers[1].Quota.Value != "10" || x.Layers[0].Quota != nil {
		t.Errorf("GET usage.xml: got %+v from %s", x, res.Body)
	}

	for _, path := range []string{"/rest/diskquota/usage.json", "/rest/diskquota/usage.xml"} {
		for _, m := range []string{"PUT", "POST", "DELETE"} {
			res := a.Do(t, m, path, "{}")
			wantError(t, res, http.StatusMethodNotAllowed, "Method "+m+" not allowed on "+path)
			if got := res.Header.Get("Allow"); got != "GET" {
				t.Errorf("%s %s: Allow %q, want GET", m, path, got)
			}
		}
		res := a.DoAuth(t, "", "", "GET", path, "")
		if res.Status != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != `Basic realm="GeoWebCache Secured"` {
			t.Errorf("GET %s without credentials: got %d %q", path, res.Status, res.Header.Get("WWW-Authenticate"))
		}
	}
	if res := a.Do(t, "GET", "/rest/diskquota/usage", ""); res.Status != http.StatusNotFound {
		t.Errorf("GET /rest/diskquota/usage: got %d, want 404", res.Status)
	}
}
