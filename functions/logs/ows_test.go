package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/testkit/lambdatest"
	"tilecache/internal/tilestore"
)

const owsLogLayers = `
layers:
  - name: kvp:world
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [2, 2]
    source: {type: testpattern}
`

// TestLogsCountOWSReads: the log function, under the Lambda Runtime
// Interface Emulator, counts the tile reads of a CloudFront log that went
// through the OGC key-value-pair bindings (the binding's path in
// cs-uri-stem, the request in cs-uri-query, escaped as CloudFront logs
// it) on the pages of the stored tiles they read: every tile of level 1
// read once by WMTS KVP GetTile and once by WMS-C GetMap; the capabilities
// read counts nothing.
func TestLogsCountOWSReads(t *testing.T) {
	r := lambdatest.NewResources(t)
	// The distribution's origin path is the key prefix (as the template
	// makes it): the edge maps the bindings' requests to the keys' paths
	// without it.
	env := lambdatest.Env(t, r, map[string]string{"TILECACHE_LAYERS": lambdatest.LayersFile(t, owsLogLayers), "TILECACHE_SEED_THREADS": "2",
		"TILECACHE_ACCESS_LOG_ORIGIN_PATH": "/" + r.Prefix})
	worker := lambdatest.Worker(t, env)
	cleaner := lambdatest.Maintenance(t, env) // the cleaner function's program: the quota's maintenance
	ctx := t.Context()
	if err := cleaner.Cleaner.Maintain(ctx); err != nil { // usage counted from here on
		t.Fatal(err)
	}
	src := &lambdatest.EventSource{Client: lambdatest.SQS(t), QueueURL: r.QueueURL, QueueArn: r.QueueArn(), Timeout: time.Minute}
	seedLogLayer(t, worker, src, "kvp:world", "image/png", 1)

	// CloudFront escapes "%" in the fields it logs (as %25).
	var b strings.Builder
	b.WriteString("#Version: 1.0\n" + cloudFrontFields + "\n")
	at := time.Now().UTC()
	line := func(stem, query string) {
		fmt.Fprintf(&b, "%s\t%s\tSEA19-C1\t2390\t2001:db8::1\tGET\td111111abcdef8.cloudfront.net\t%s\t200\t-\tQGIS/3.34\t%s\t-\tHit\tid==\ttiles.example.com\thttps\t163\t0.001\t-\tTLSv1.3\tTLS_AES_128_GCM_SHA256\tHit\tHTTP/2.0\t-\t-\t443\t0.001\tHit\timage/png\t2390\t-\t-\n",
			at.Format("2006-01-02"), at.Format("15:04:05"), stem, strings.ReplaceAll(query, "%", "%25"))
	}
	tiles := 0
	for x := range 4 {
		for y := range 2 { // from the bottom
			tiles++
			line("/gwc/service/wmts", fmt.Sprintf("SERVICE=WMTS&REQUEST=GetTile&VERSION=1.0.0&LAYER=kvp%%3Aworld&STYLE=&FORMAT=image%%2Fpng"+
				"&TILEMATRIXSET=EPSG%%3A4326&TILEMATRIX=1&TILEROW=%d&TILECOL=%d", 1-y, x))
			line("/gwc/service/wms", fmt.Sprintf("SERVICE=WMS&VERSION=1.1.1&REQUEST=GetMap&LAYERS=kvp:world&STYLES=&SRS=EPSG:4326"+
				"&BBOX=%d,%d,%d,%d&WIDTH=256&HEIGHT=256&FORMAT=image/png&TILED=true", -180+90*x, -90+90*y, -90+90*x, 90*y))
		}
	}
	line("/gwc/service/wmts", "SERVICE=WMTS&REQUEST=GetCapabilities")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(b.String()))
	zw.Close()
	logKey := r.Prefix + "-logs/E2EXAMPLE.2026-12-02-07.ows12345.gz"
	logs := lambdatest.Tiles(t, r)
	if err := logs.Put(ctx, logKey, gz.Bytes(), tilestore.Meta{ContentType: "application/gzip"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Delete(context.Background(), []string{logKey}) })

	fn := lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: lambdatest.Bootstrap(t, "logs"), Name: "tilecache-LogsFunction", Env: env})
	var ev events.S3Event
	ev.Records = []events.S3EventRecord{{EventSource: "aws:s3", EventName: "ObjectCreated:Put", AWSRegion: lambdatest.Region,
		S3: events.S3Entity{Bucket: events.S3Bucket{Name: r.Bucket}, Object: events.S3Object{Key: url.QueryEscape(logKey), ETag: "ows12345"}}}}
	event, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if inv := fn.Invoke(t, event); inv.Error != nil {
		t.Fatalf("invocation: %v\n%s", inv.Error, strings.Join(inv.Log, "\n"))
	}
	ps, err := worker.Usage.Pages(ctx, "kvp:world")
	if err != nil {
		t.Fatal(err)
	}
	var hits int64
	for _, p := range ps {
		if p.Key.Z == 1 {
			hits += p.Hits
		} else if p.Hits != 0 {
			t.Errorf("page %+v: %d hits, want none", p.Key, p.Hits)
		}
	}
	if hits != int64(2*tiles) {
		t.Errorf("level 1's pages have %d hits, want %d (each tile read through KVP and through WMS-C)", hits, 2*tiles)
	}
}
