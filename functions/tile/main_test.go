package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/png"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/lambdatest"
)

// layers adds to the demo layers one that renders on miss (from the
// built-in test pattern) up to level 6.
const layers = apptest.Layers + `
  - name: od:test
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    cacheControl: public, max-age=3600
    renderOnMiss: {enabled: true, zoomStop: 6}
    source: {type: testpattern}
`

func TestMain(m *testing.M) { lambdatest.Main(m) }

// TestFunctionURLEvents hands Lambda function URL events (payload 2.0, as
// CloudFront's origin access control sends them to the failover origin;
// testdata/) to this function's bootstrap (main, as built for Lambda)
// under the Lambda Runtime Interface Emulator, on fresh resources of the
// local AWS stack, in file order (one execution environment).
func TestFunctionURLEvents(t *testing.T) {
	r := lambdatest.NewResources(t)
	env := lambdatest.Env(t, r, map[string]string{"TILECACHE_LAYERS": lambdatest.LayersFile(t, layers)})
	delete(env, "TILECACHE_ACCOUNTS") // TileFunction has none
	fn := lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: lambdatest.Bootstrap(t, "tile"), Name: "tilecache-TileFunction", Env: env})
	tiles := lambdatest.Tiles(t, r)
	invoke := func(file string) events.LambdaFunctionURLResponse {
		t.Helper()
		var ev events.LambdaFunctionURLRequest
		var res events.LambdaFunctionURLResponse
		fn.Invoke(t, lambdatest.ReadEvent(t, filepath.Join("testdata", file), &ev)).Decode(t, &res)
		return res
	}
	decode := func(file string, res events.LambdaFunctionURLResponse) []byte {
		t.Helper()
		if res.StatusCode != 200 || res.Headers["Content-Type"] != "image/png" || res.Headers["Cache-Control"] != "public, max-age=3600" || !res.IsBase64Encoded {
			t.Fatalf("%s: got %d %v base64 %v %.200q", file, res.StatusCode, res.Headers, res.IsBase64Encoded, res.Body)
		}
		b, err := base64.StdEncoding.DecodeString(res.Body)
		if err != nil {
			t.Fatalf("%s: body is not base64: %v", file, err)
		}
		if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() != 256 {
			t.Fatalf("%s: not a 256² PNG: %v", file, err)
		}
		return b
	}

	// A miss renders the metatile (z2: columns 4-7, rows 0-3) and stores
	// all of it.
	miss := decode("miss-get.json", invoke("miss-get.json"))
	for x := 4; x <= 7; x++ {
		for y := 0; y <= 3; y++ {
			key := fmt.Sprintf("%s/od:test/EPSG:4326/png/default/2/%d/%d.png", r.Prefix, x, y)
			data, meta, found, err := tiles.Get(t.Context(), key)
			if err != nil || !found || meta.ContentType != "image/png" || meta.CacheControl != "public, max-age=3600" {
				t.Fatalf("%s after the miss: found %v, %+v, %v", key, found, meta, err)
			}
			if x == 5 && y == 2 && !bytes.Equal(data, miss) {
				t.Errorf("the answered tile differs from the stored one")
			}
		}
	}
	// A neighbour is served from the bucket.
	decode("hit-get.json", invoke("hit-get.json"))

	for _, c := range []struct {
		file   string
		status int
	}{
		{"not-rendered.json", 404}, // demo:world does not render on miss
		{"beyond-levels.json", 404},
		{"post.json", 405},
	} {
		if res := invoke(c.file); res.StatusCode != c.status || res.IsBase64Encoded {
			t.Errorf("%s: got %d %q, want %d as text", c.file, res.StatusCode, res.Body, c.status)
		}
	}
}
