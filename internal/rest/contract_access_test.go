package rest_test

// POST /rest/diskquota/access.json checks each read's tile set against
// its layer and its time against the clock: a 400 names the field.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
)

func TestAccessReadsChecked(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	now := time.Now().UTC()
	read := func(layer, gridSet, format, params string, z int, last time.Time) string {
		return fmt.Sprintf(`{"id":"b-%d","reads":[{"%s","gridSetId":%q,"formatId":%q,"parametersId":%q,"z":%d,"pageX":0,"pageY":0,"hits":1,"last":%q}]}`,
			now.UnixNano(), layer, gridSet, format, params, z, last.Format(time.RFC3339Nano))
	}
	byName := func(l string) string { return `layer":"` + l }
	byID := func(id string) string { return `layerId":"` + id }
	post := func(body string) apptest.Response {
		return a.Do(t, "POST", "/rest/diskquota/access.json", body, "Content-Type", "application/json")
	}
	if res := post(read(byName("demo:world"), "EPSG:4326", "png", "default", 1, now.Add(-time.Hour))); res.Status == http.StatusNotFound {
		t.Skip("this server counts no disk usage")
	} else if res.Status != http.StatusOK {
		t.Fatalf("a good read: %d %s", res.Status, res.Body)
	}
	sha := strings.Repeat("ab", 20)
	for _, c := range []struct{ body, says string }{
		{read(byName("demo:world"), "EPSG:9999", "png", "default", 1, now), "reads[0]: gridSetId EPSG:9999 is not a grid set of layer demo:world"},
		{read(byName("demo:world"), "EPSG:4326", "png", "default", 40, now), "reads[0]: z 40 is not a level of grid set EPSG:4326"},
		{read(byName("demo:world"), "EPSG:4326", "png8", "default", 1, now), "reads[0]: formatId png8 is not a format of layer demo:world"},
		{read(byName("demo:world"), "EPSG:4326", "png", "../x", 1, now), "reads[0]: parametersId ../x: layer demo:world has no parameters"},
		{read(byName("topp:states"), "EPSG:4326", "png", "../x", 1, now), "reads[0]: parametersId ../x is neither default nor 40 lower-case hexadecimal digits"},
		{read(byName("demo:world"), "EPSG:4326", "png", "default", 1, now.Add(24*time.Hour)), "reads[0]: last " + now.Add(24*time.Hour).Format(time.RFC3339) + " must be between"},
		{read(byName("demo:world"), "EPSG:4326", "png", "default", 1, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)), "reads[0]: last 2300-01-01T00:00:00Z must be between"},
		{read(byName("demo:world"), "EPSG:4326", "png", "default", 1, time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)), "reads[0]: last 1600-01-01T00:00:00Z must be between"},
	} {
		wantBadRequest(t, post(c.body), c.says)
	}
	// A tile set the layer has, with parameters; and, from a log (by id),
	// a tile set it no longer has, skipped like a layer removed since.
	if res := post(read(byName("topp:states"), "EPSG:4326", "png", sha, 1, now)); res.Status != http.StatusOK {
		t.Errorf("a read with parameters: %d %s", res.Status, res.Body)
	}
	if res := post(read(byID("demo:world"), "EPSG:9999", "png", "default", 1, now)); res.Status != http.StatusOK || !strings.Contains(res.Body, `"pages":0,"skipped":1`) {
		t.Errorf("a log's read of a grid set the layer has no longer: %d %s, want it skipped", res.Status, res.Body)
	}
}
