package functions_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	"tilecache/internal/testkit/lambdatest"
	"tilecache/internal/tilestore"

	"github.com/aws/aws-lambda-go/events"
)

// TestAPIServesTheConsole: the API function, behind API Gateway's
// /console routes, answers the console's page and script (gzipped, as
// base64, when the client accepts it), with its Content-Security-Policy,
// and only to an account.
func TestAPIServesTheConsole(t *testing.T) {
	r := lambdatest.NewResources(t)
	api := lambdatest.API(t, lambdatest.Env(t, r, nil))
	page := lambdatest.Do(t, api.Handler, "GET", "/console/", "")
	if page.StatusCode != 200 || !strings.Contains(page.Body, `src="app.js"`) || !strings.Contains(page.Headers["Content-Security-Policy"], "frame-ancestors 'none'") {
		t.Fatalf("GET /console/: %d %v %q", page.StatusCode, page.Headers, page.Body)
	}
	anon := lambdatest.Invoke(t, api.Handler, lambdatest.V2Request("GET", "/console/", "", false))
	if anon.StatusCode != 401 {
		t.Errorf("GET /console/ without credentials: %d, want 401", anon.StatusCode)
	}
	plain := lambdatest.Do(t, api.Handler, "GET", "/console/app.js", "")
	zipped := lambdatest.Do(t, api.Handler, "GET", "/console/app.js", "", "accept-encoding", "gzip")
	if plain.StatusCode != 200 || zipped.StatusCode != 200 || !zipped.IsBase64Encoded || zipped.Headers["Content-Encoding"] != "gzip" {
		t.Fatalf("GET /console/app.js: %d, gzipped %d base64 %v %v", plain.StatusCode, zipped.StatusCode, zipped.IsBase64Encoded, zipped.Headers)
	}
	raw, err := base64.StdEncoding.DecodeString(zipped.Body)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	js, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if string(js) != plain.Body || len(raw) > len(js)/2 {
		t.Errorf("gzipped script: %d bytes for %d, equal to the plain one: %v", len(raw), len(js), string(js) == plain.Body)
	}
}

// TestAPIAnswersTheConsolesStoredTileReads: behind API Gateway's
// GET /tiles/{proxy+}, the API function (HandleAPI) answers the console
// map's stored-only reads of an account — the stored bytes, a missing
// tile 504 and never rendered — and nothing else: a plain tile read is
// the CDN's (404 naming it), an anonymous stored-only read is challenged.
func TestAPIAnswersTheConsolesStoredTileReads(t *testing.T) {
	r := lambdatest.NewResources(t)
	api := lambdatest.API(t, lambdatest.Env(t, r, nil))
	set := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, Prefix: r.Prefix, LayerID: "demo:world", Ext: "png"}
	stored := []byte("\x89PNG\r\n\x1a\n a stored tile")
	if err := lambdatest.Tiles(t, r).Put(t.Context(), set.Key(1, 2, 0), stored, tilestore.Meta{ContentType: "image/png"}); err != nil {
		t.Fatal(err)
	}
	handle := func(path string, headers ...string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		ev := lambdatest.V2Request("GET", path, "", false, headers...)
		ev.RouteKey, ev.RequestContext.RouteKey = "GET /tiles/{proxy+}", "GET /tiles/{proxy+}"
		ev.PathParameters = map[string]string{"proxy": strings.TrimPrefix(path, "/tiles/")}
		res, err := api.HandleAPI(t.Context(), ev)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return res
	}
	const only = "x-tilecache-stored-only"
	auth := "authorization"
	res := handle("/tiles/demo:world/EPSG:4326/png/1/2/0.png", only, "1", auth, lambdatest.BasicAuth())
	body, _ := base64.StdEncoding.DecodeString(res.Body)
	if res.StatusCode != 200 || !res.IsBase64Encoded || !bytes.Equal(body, stored) {
		t.Errorf("stored-only read of a stored tile: %d base64 %v, %d bytes, want the %d stored", res.StatusCode, res.IsBase64Encoded, len(body), len(stored))
	}
	if res := handle("/tiles/demo:world/EPSG:4326/png/1/3/0.png", only, "1", auth, lambdatest.BasicAuth()); res.StatusCode != 504 {
		t.Errorf("stored-only read of a missing tile: %d, want 504", res.StatusCode)
	}
	if _, found, err := lambdatest.Tiles(t, r).Stat(t.Context(), set.Key(1, 3, 0)); err != nil || found {
		t.Errorf("the missing tile after the read: stored %v (%v), want not stored", found, err)
	}
	if res := handle("/tiles/demo:world/EPSG:4326/png/1/2/0.png", auth, lambdatest.BasicAuth()); res.StatusCode != 404 || !strings.Contains(res.Body, "served by the CDN") {
		t.Errorf("plain tile read from the API: %d %q, want 404 naming the CDN", res.StatusCode, res.Body)
	}
	if res := handle("/tiles/demo:world/EPSG:4326/png/1/2/0.png", only, "1"); res.StatusCode != 401 {
		t.Errorf("anonymous stored-only read: %d, want 401", res.StatusCode)
	}
}
