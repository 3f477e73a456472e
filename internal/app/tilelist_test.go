package app_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
)

// metatileKeys lists the keys of the EPSG:900913 metatile (4×4) holding
// TMS tile z/x/y, clipped to the grid (2^z × 2^z tiles).
func metatileKeys(prefix string, z int, x, y int64) []string {
	n := int64(1) << z
	var out []string
	for mx := x / 4 * 4; mx < min(x/4*4+4, n); mx++ {
		for my := y / 4 * 4; my < min(y/4*4+4, n); my++ {
			out = append(out, fmt.Sprintf("%s%d/%d/%d.png", prefix, z, mx, my))
		}
	}
	return out
}

// TestSeedByTileList: an expiry list (XYZ rows, as osm2pgsql writes them)
// truncates exactly the metatiles holding its tiles and, with parentsTo,
// those holding their parents; a gzip list reseeds exactly its metatiles.
func TestSeedByTileList(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	const prefix = "demo:world/EPSG:900913/png/default/"
	waitFinished(t, a, ids(seedReq(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":5,"threadCount":2}}`)), 60*time.Second)
	seeded := keys(t, a, "demo:world/")
	if len(seeded) != 1+4+16+64+256+1024 {
		t.Fatalf("seeded %d tiles", len(seeded))
	}
	// XYZ 5/3/2 is TMS 5/3/29; XYZ 5/30/30 is TMS 5/30/1 (listed twice);
	// parents down to z4 add TMS 4/1/14 and 4/15/0.
	list := "5/3/2\n5/30/30\n\n5/30/30\n"
	removed := map[string]bool{}
	for _, k := range slices.Concat(metatileKeys(prefix, 5, 3, 29), metatileKeys(prefix, 5, 30, 1),
		metatileKeys(prefix, 4, 1, 14), metatileKeys(prefix, 4, 15, 0)) {
		removed[k] = true
	}
	res := a.Do(t, "POST", "/rest/seed/demo:world.json?type=truncate&gridSetId=EPSG:900913&xyz=true&parentsTo=4", list, "Content-Type", "text/x-tile-list")
	if res.Status != 200 {
		t.Fatalf("tile list truncate: %d %s", res.Status, res.Body)
	}
	rows := decodeRows(t, res.Body)
	if got := sumTotals(rows); got != int64(len(removed)) {
		t.Fatalf("totals %d, want the %d tiles of the listed metatiles", got, len(removed))
	}
	for _, tk := range waitFinished(t, a, ids(rows), 30*time.Second) {
		if tk.Status != task.Done || tk.Type != task.Truncate {
			t.Fatalf("task %+v", tk)
		}
	}
	var want []string
	for _, k := range seeded {
		if !removed[k] {
			want = append(want, k)
		}
	}
	if got := keys(t, a, "demo:world/"); !slices.Equal(got, want) {
		t.Fatalf("after the truncate: %d tiles, want %d", len(got), len(want))
	}

	// The same list gzipped, as a reseed of its z5 tiles only: the
	// truncated metatiles come back.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(list))
	zw.Close()
	res = a.Do(t, "POST", "/rest/seed/demo:world.json?type=reseed&gridSetId=EPSG:900913&xyz=true", gz.String(),
		"Content-Type", "text/x-tile-list", "Content-Encoding", "gzip")
	if res.Status != 200 {
		t.Fatalf("gzip tile list reseed: %d %s", res.Status, res.Body)
	}
	rows = decodeRows(t, res.Body)
	if got := sumTotals(rows); got != 32 {
		t.Fatalf("reseed totals %d, want the 32 tiles of two z5 metatiles", got)
	}
	waitFinished(t, a, ids(rows), 30*time.Second)
	if got := len(keys(t, a, prefix+"5/")); got != 1024 {
		t.Fatalf("after the reseed z5 has %d tiles, want 1024", got)
	}
}

// TestTileListErrors: a list or query the service cannot take is a 400
// (or 413, 415) naming the problem, and records nothing.
func TestTileListErrors(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	for _, tt := range []struct {
		name, query, body string
		headers           []string
		status            int
		want              string
	}{
		{"bad line", "type=truncate", "1/0/0\n3/x/1\n", nil, 400, `tile list line 2: "3/x/1" is not z/x/y`},
		{"outside the grid", "type=truncate&gridSetId=EPSG:900913", "2/4/0\n", nil, 400, "tile 2/4/0 is outside grid set EPSG:900913"},
		{"unknown parameter", "type=truncate&bbox=1", "1/0/0\n", nil, 400, "Unknown query parameter bbox"},
		{"bad flag", "xyz=maybe", "1/0/0\n", nil, 400, "Invalid value for xyz"},
		{"empty", "type=reseed", "\n# none\n", nil, 400, "the tile list names no tile"},
		{"not gzip", "type=reseed", "1/0/0\n", []string{"Content-Encoding", "gzip"}, 400, "Could not read the gzip tile list"},
		{"encoding", "type=reseed", "1/0/0\n", []string{"Content-Encoding", "br"}, 415, "Unsupported Content-Encoding br"},
		{"zooms without tiles", "type=reseed&zoomStart=3&zoomStop=4", "1/0/0\n", nil, 400, "has no tile at zoom levels 3 to 4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := a.Do(t, "POST", "/rest/seed/demo:world.json?"+tt.query, tt.body, append([]string{"Content-Type", "text/x-tile-list"}, tt.headers...)...)
			if res.Status != tt.status || !strings.Contains(res.Body, tt.want) {
				t.Fatalf("got %d %q, want %d naming %q", res.Status, res.Body, tt.status, tt.want)
			}
		})
	}
	if rows := listRows(t, a, "/rest/seed.json"); len(rows) != 0 {
		t.Fatalf("refused lists recorded tasks: %v", rows)
	}
}
