package rest_test

// The limits of a request's area: tile lists, geometries and the plans
// made of them are refused with a 400 naming the limit before the work
// they bound, at submit and at estimate alike.

import (
	"fmt"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
)

// zigzagWKT is a polygon of n vertices between latitudes -80 and 80
// (across=false) or longitudes -170 and 170.
func zigzagWKT(n int, across bool) string {
	var b strings.Builder
	b.WriteString("POLYGON((")
	for i := range n {
		v := -80
		if i%2 == 1 {
			v = 80
		}
		if across {
			fmt.Fprintf(&b, "%d %g,", v*170/80, float64(i)*0.01)
		} else {
			fmt.Fprintf(&b, "%g %d,", float64(i)*0.01, v)
		}
	}
	if across {
		b.WriteString("-170 0))")
	} else {
		b.WriteString("0 -80))")
	}
	return b.String()
}

func TestAreaLimits(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	const world = "POLYGON((-180 -85,180 -85,180 85,-180 85,-180 -85))"
	for _, tt := range []struct {
		name, fields, want string
	}{
		{"latitude out of range", `"zoomStart":0,"zoomStop":1,"geometry":"POLYGON((0 0,1 100000,2 0,0 0))"`,
			"coordinate [1 100000] is not a longitude within ±180 and a latitude within ±90"},
		{"vertices once densified", `"zoomStart":0,"zoomStop":1,"geometry":"` + zigzagWKT(2000, false) + `"`,
			"more than 100000 (the limit of a geometry)"},
		{"vertices once buffered", `"zoomStart":0,"zoomStop":1,"buffer":10,"geometry":"LINESTRING(` + strings.Repeat("0 0,1 1,", 2000) + `2 2)"`,
			"once buffered by 10 metres, more than 100000 (the limit of a geometry)"},
		{"world polygon at z25", `"zoomStart":25,"zoomStop":25,"geometry":"` + world + `"`,
			"more than 131072 (the limit of one level)"},
		// Plans number the metatiles by columns: the zigzag's edges
		// cross all columns.
		{"sweep work", `"zoomStart":0,"zoomStop":20,"geometry":"` + zigzagWKT(100, true) + `"`,
			"more than 2097152 (the limit of one level)"},
	} {
		for _, endpoint := range []string{"/rest/seed/demo:world.json", "/rest/estimate/demo:world.json"} {
			t.Run(tt.name+" "+endpoint, func(t *testing.T) {
				res := a.Do(t, "POST", endpoint, `{"seedRequest":{"gridSetId":"EPSG:900913","type":"truncate",`+tt.fields+`}}`)
				if res.Status != 400 || !strings.Contains(res.Body, tt.want) {
					t.Fatalf("got %d %.300q, want 400 naming %q", res.Status, res.Body, tt.want)
				}
			})
		}
	}
	for _, tt := range []struct {
		name, query, list, want string
		status                  int
	}{
		{"children of 0/0/0 to z15", "childrenTo=15", "0/0/0\n", "more than 8000000 metatiles (the limit of a list)", 400},
		{"two tiles 2^25 rows apart", "", "25/0/0\n25/0/33554431\n", "", 200},
	} {
		for _, endpoint := range []string{"/rest/seed/demo:world.json", "/rest/estimate/demo:world.json"} {
			t.Run(tt.name+" "+endpoint, func(t *testing.T) {
				path := endpoint + "?gridSetId=EPSG:900913&type=truncate"
				if tt.query != "" {
					path += "&" + tt.query
				}
				res := doReader(t, a, "POST", path, strings.NewReader(tt.list), int64(len(tt.list)), "Content-Type", "text/x-tile-list")
				if res.Status != tt.status || !strings.Contains(res.Body, tt.want) {
					t.Fatalf("got %d %.300q, want %d naming %q", res.Status, res.Body, tt.status, tt.want)
				}
			})
		}
	}
}
