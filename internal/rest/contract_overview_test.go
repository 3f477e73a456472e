package rest_test

// GET /rest/overview.json, an extension of this project: the console's
// first page in one answer, each figure the same as the REST answer it
// summarises.

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

type overviewDoc struct {
	Layers []struct {
		Name      string   `json:"name"`
		Title     string   `json:"title"`
		ManagedBy string   `json:"managedBy"`
		GridSets  []string `json:"gridSets"`
		Formats   []string `json:"formats"`
		Usage     *struct {
			Bytes          int64 `json:"bytes"`
			Tiles          int64 `json:"tiles"`
			RecountPending bool  `json:"recountPending"`
		} `json:"usage"`
		Quota *struct {
			Bytes  int64  `json:"bytes"`
			Policy string `json:"policy"`
		} `json:"quota"`
		Tasks struct {
			Running int `json:"running"`
			Pending int `json:"pending"`
		} `json:"tasks"`
		LastFinished *struct {
			ID       int64     `json:"id"`
			Type     string    `json:"type"`
			Status   string    `json:"status"`
			Killed   bool      `json:"killed"`
			Done     int64     `json:"done"`
			Total    int64     `json:"total"`
			Finished time.Time `json:"finished"`
		} `json:"lastFinished"`
	} `json:"layers"`
	GridSets []struct {
		Name      string `json:"name"`
		ManagedBy string `json:"managedBy"`
	} `json:"gridSets"`
	Quota *struct {
		Enabled        bool       `json:"enabled"`
		Policy         string     `json:"policy"`
		GlobalQuota    int64      `json:"globalQuotaBytes"`
		UsedBytes      int64      `json:"usedBytes"`
		UsedTiles      int64      `json:"usedTiles"`
		Counted        bool       `json:"counted"`
		LastCleanUp    *time.Time `json:"lastCleanUp"`
		RecountPending []string   `json:"recountPending"`
	} `json:"quota"`
}

type usageDoc struct {
	U struct {
		Enabled        bool   `json:"enabled"`
		UsedBytes      int64  `json:"usedBytes"`
		UsedTiles      int64  `json:"usedTiles"`
		Policy         string `json:"globalExpirationPolicyName"`
		RecountPending bool   `json:"recountPending"`
		Layers         []struct {
			Layer          string `json:"layer"`
			UsedBytes      int64  `json:"usedBytes"`
			UsedTiles      int64  `json:"usedTiles"`
			RecountPending bool   `json:"recountPending"`
			Policy         string `json:"expirationPolicyName"`
		} `json:"layers"`
	} `json:"diskQuotaUsage"`
}

func getOverview(t *testing.T, a *apptest.App) overviewDoc {
	t.Helper()
	res := a.Do(t, "GET", "/rest/overview.json", "")
	wantOK(t, res, ctJSON)
	var d overviewDoc
	if err := json.Unmarshal([]byte(res.Body), &d); err != nil {
		t.Fatalf("decode %s: %v", res.Body, err)
	}
	return d
}

func TestOverview(t *testing.T) {
	wms := testenv.RequireWMS(t)
	a := apptest.Start(t, apptest.Options{SeedThreads: 1})
	xml := []string{"Content-Type", "text/xml"}
	// A grid set and a layer changed through the interface.
	if res := a.Do(t, "PUT", "/rest/gridsets/Mine.xml", gridSetDoc(t, "Mine", 4, 2), xml...); res.Status != http.StatusOK && res.Status != http.StatusCreated {
		t.Fatalf("PUT grid set: %d %s", res.Status, res.Body)
	}
	res := postFromCaps(t, a, `{"url":"`+wms+`","layers":["points"]}`)
	var caps fromCapsDoc
	if err := json.Unmarshal([]byte(res.Body), &caps); err != nil || len(caps.Proposed) != 1 {
		t.Fatalf("proposal: %d %s", res.Status, res.Body)
	}
	if res := a.Do(t, "PUT", caps.Proposed[0].Path, caps.Proposed[0].XML, xml...); res.Status != http.StatusOK && res.Status != http.StatusCreated {
		t.Fatalf("PUT layer: %d %s", res.Status, res.Body)
	}
	if res := a.Do(t, "PUT", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"layerQuotas":[{"layer":"topp:states","expirationPolicyName":"LRU","quota":{"value":"10","units":"MiB"}}]}}`); res.Status != http.StatusOK {
		t.Fatalf("PUT quota: %d %s", res.Status, res.Body)
	}
	seedJSON(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":1,"format":"image/png"}}`)
	testenv.Eventually(t, 60*time.Second, "the seed to finish", func() bool { return len(list(t, a, "/rest/seed.json")) == 0 })
	// One running and one pending task of slow:world (one seed thread).
	slow := seedJSON(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":6,"threadCount":2}}`)
	testenv.Eventually(t, 10*time.Second, "slow:world to run", func() bool {
		st := map[int64]int64{}
		for _, r := range list(t, a, "/rest/seed/slow:world.json") {
			st[r[3]] = r[4]
		}
		return st[slow[0][3]] == 1 && st[slow[1][3]] == 0
	})

	d := getOverview(t, a)
	var u usageDoc
	if err := json.Unmarshal([]byte(a.Do(t, "GET", "/rest/diskquota/usage.json", "").Body), &u); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range d.Layers {
		names = append(names, l.Name)
	}
	if want := []string{"demo:world", "topp:states", "slow:world", "broken:world", "points"}; !slices.Equal(names, want) {
		t.Fatalf("layers: got %v, want %v", names, want)
	}
	for _, l := range d.Layers {
		switch l.Name {
		case "demo:world":
			if l.ManagedBy != "file" || !slices.Equal(l.GridSets, []string{"EPSG:4326", "EPSG:900913", "TopLeft4326"}) ||
				!slices.Equal(l.Formats, []string{"image/png", "image/jpeg"}) || l.Quota != nil || l.Tasks.Running+l.Tasks.Pending != 0 {
				t.Errorf("demo:world: %+v", l)
			}
			if f := l.LastFinished; f == nil || f.Type != "SEED" || f.Status != "DONE" || f.Killed || f.Done != f.Total || f.Total == 0 ||
				time.Since(f.Finished) > time.Minute {
				t.Errorf("demo:world's last finished task: %+v, want a SEED DONE just now", f)
			}
		case "topp:states":
			if l.Quota == nil || l.Quota.Bytes != 10<<20 || l.Quota.Policy != "LRU" {
				t.Errorf("topp:states' quota: %+v, want 10 MiB LRU", l.Quota)
			}
		case "slow:world":
			if l.Tasks.Running != 1 || l.Tasks.Pending != 1 || l.LastFinished != nil {
				t.Errorf("slow:world: tasks %+v, last finished %+v; want 1 running, 1 pending, none finished", l.Tasks, l.LastFinished)
			}
		case "points":
			// Its title is its name: the WMS layer's title is its name too.
			if l.ManagedBy != "rest" || l.Title != "points" || !slices.Equal(l.GridSets, []string{"EPSG:4326", "EPSG:900913"}) {
				t.Errorf("points: %+v, want managed by rest, titled points, in EPSG:4326 and EPSG:900913", l)
			}
		}
		// The usage is the usage report's.
		i := slices.IndexFunc(u.U.Layers, func(x struct {
			Layer          string `json:"layer"`
			UsedBytes      int64  `json:"usedBytes"`
			UsedTiles      int64  `json:"usedTiles"`
			RecountPending bool   `json:"recountPending"`
			Policy         string `json:"expirationPolicyName"`
		}) bool {
			return x.Layer == l.Name
		})
		if l.Usage == nil || (i >= 0 && (l.Usage.Bytes != u.U.Layers[i].UsedBytes || l.Usage.Tiles != u.U.Layers[i].UsedTiles)) ||
			(i < 0 && (l.Usage.Bytes != 0 || l.Usage.Tiles != 0)) {
			t.Errorf("%s's usage %+v: want the usage report's (%+v)", l.Name, l.Usage, u.U.Layers)
		}
	}
	if d.Layers[0].Usage == nil || d.Layers[0].Usage.Tiles != 10 {
		t.Errorf("demo:world's usage: %+v, want the 10 tiles seeded", d.Layers[0].Usage)
	}
	gs := map[string]string{}
	for _, g := range d.GridSets {
		gs[g.Name] = g.ManagedBy
	}
	if gs["EPSG:4326"] != "builtin" || gs["EPSG:900913"] != "builtin" || gs["TopLeft4326"] != "file" || gs["Mine"] != "rest" {
		t.Errorf("grid sets: %v", gs)
	}
	q := d.Quota
	if q == nil || q.Enabled != u.U.Enabled || q.Policy != "LFU" || q.GlobalQuota != 500<<20 || q.UsedBytes != u.U.UsedBytes || q.UsedTiles != u.U.UsedTiles {
		t.Errorf("quota: %+v, want the usage report's %+v", q, u.U)
	}

	// Killed: slow:world's last finished task is ABORTED, killed.
	killAll(t, a)
	testenv.Eventually(t, 10*time.Second, "slow:world's tasks to stop", func() bool { return len(list(t, a, "/rest/seed/slow:world.json")) == 0 })
	d = getOverview(t, a)
	for _, l := range d.Layers {
		if l.Name == "slow:world" {
			if f := l.LastFinished; f == nil || f.Status != "ABORTED" || !f.Killed || f.Type != "SEED" || l.Tasks.Running+l.Tasks.Pending != 0 {
				t.Errorf("slow:world after the kill: tasks %+v, last finished %+v; want an ABORTED, killed seed", l.Tasks, f)
			}
		}
	}
	for _, m := range []string{"PUT", "POST", "DELETE"} {
		wantError(t, a.Do(t, m, "/rest/overview.json", ""), http.StatusMethodNotAllowed, "Method "+m+" not allowed on /rest/overview.json")
	}
	if res := a.DoAuth(t, "", "", "GET", "/rest/overview.json", ""); res.Status != http.StatusUnauthorized {
		t.Errorf("without credentials: got %d, want 401", res.Status)
	}
}
