package functions_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	"tilecache/internal/testkit/lambdatest"
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
