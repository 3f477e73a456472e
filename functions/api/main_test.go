package main

import (
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/testkit/lambdatest"
	"tilecache/internal/tilestore"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

// TestRecordedEvents hands the API Gateway HTTP API (payload 2.0) events
// of testdata/ to this function's bootstrap (main, as built for Lambda)
// under the Lambda Runtime Interface Emulator, on fresh resources of the
// local AWS stack, in file order: one execution environment, cold for the
// first event and warm after, each request seeing the previous ones'
// effects.
func TestRecordedEvents(t *testing.T) {
	r := lambdatest.NewResources(t)
	fn := lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: lambdatest.Bootstrap(t, "api"), Name: "tilecache-ApiFunction", Env: lambdatest.Env(t, r, nil)})
	tests := []struct {
		file    string
		status  int
		headers map[string]string
		body    string
	}{
		// Two lanes of the 42 tiles of EPSG:4326 z0-2, running at once (pool 4).
		{"seed-post.json", 200, map[string]string{"Content-Type": "application/json"},
			`{"long-array-array":[[0,10,10,1,1],[0,32,32,2,1]]}`},
		// An XML truncate request whose body API Gateway base64-encoded: 85 tiles of EPSG:900913 z0-3.
		{"seed-post-xml-base64.json", 200, map[string]string{"Content-Type": "application/xml"},
			`<long-array-array><long-array><long>0</long><long>85</long><long>85</long><long>3</long><long>1</long></long-array></long-array-array>`},
		{"tasks-get.json", 200, map[string]string{"Content-Type": "application/json"},
			`{"long-array-array":[[0,10,10,1,1],[0,32,32,2,1],[0,85,85,3,1]]}`},
		{"unauthenticated.json", 401, map[string]string{"Www-Authenticate": `Basic realm="GeoWebCache Secured"`, "Content-Type": "text/plain; charset=utf-8"},
			"Authentication required\n"},
		{"method-not-allowed.json", 405, map[string]string{"Allow": "GET", "Content-Type": "text/plain; charset=utf-8"},
			"Method DELETE not allowed on /rest/seed.json\n"},
	}
	for _, tt := range tests {
		var ev events.APIGatewayV2HTTPRequest
		var res events.APIGatewayV2HTTPResponse
		fn.Invoke(t, lambdatest.ReadEvent(t, filepath.Join("testdata", tt.file), &ev)).Decode(t, &res)
		if res.StatusCode != tt.status {
			t.Errorf("%s: status %d %q, want %d", tt.file, res.StatusCode, res.Body, tt.status)
		}
		for k, v := range tt.headers {
			if got := res.Headers[k]; got != v {
				t.Errorf("%s: header %s = %q, want %q (headers %v)", tt.file, k, got, v, res.Headers)
			}
		}
		if res.IsBase64Encoded {
			t.Errorf("%s: a text answer came back base64-encoded", tt.file)
		}
		if res.Body != tt.body {
			t.Errorf("%s: body\n%s\nwant\n%s", tt.file, res.Body, tt.body)
		}
	}

	// The seed request's parameters side object (contract §9) is in the bucket.
	key := tilestore.ParametersKey(r.Prefix, "demo:world", tilestore.ParametersID(map[string]string{"STYLES": "grid"}))
	data, _, found, err := lambdatest.Tiles(t, r).Get(t.Context(), key)
	if err != nil || !found || string(data) != "STYLES=grid\n" {
		t.Errorf("parameters object %s: found %v, %q, %v; want STYLES=grid", key, found, data, err)
	}
}
