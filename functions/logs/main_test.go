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

	"tilecache/internal/app/maintenance"
	"tilecache/internal/app/worker"
	"tilecache/internal/gwc"
	"tilecache/internal/quota"
	"tilecache/internal/testkit/lambdatest"
	"tilecache/internal/tilestore"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

const logLayers = `
layers:
  - name: lru:world
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png, image/jpeg]
    metatiling: [4, 4]
    source: {type: testpattern}
  - name: lfu:world
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png, image/jpeg]
    metatiling: [4, 4]
    source: {type: testpattern}
`

// cloudFrontFields is the #Fields line of CloudFront's standard logs.
const cloudFrontFields = "#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) " +
	"cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken x-forwarded-for ssl-protocol " +
	"ssl-cipher x-edge-response-result-type cs-protocol-version fle-status fle-encrypted-fields c-port time-to-first-byte " +
	"x-edge-detailed-result-type sc-content-type sc-content-len sc-range-start sc-range-end"

// cloudFrontLog writes a gzip-compressed standard log in which each of
// keys is read hits times (CloudFront URL-encodes the path, ":" as %3A),
// with a few lines that must not count.
func cloudFrontLog(t *testing.T, at time.Time, hits map[string]int) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString("#Version: 1.0\n" + cloudFrontFields + "\n")
	line := func(method, path string, status int) {
		fmt.Fprintf(&b, "%s\t%s\tSEA19-C1\t2390\t2001:db8::1\t%s\td111111abcdef8.cloudfront.net\t%s\t%d\t-\tMozilla/5.0%%20(X11)\t-\t-\tHit\tid==\ttiles.example.com\thttps\t163\t0.001\t-\tTLSv1.3\tTLS_AES_128_GCM_SHA256\tHit\tHTTP/2.0\t-\t-\t443\t0.001\tHit\timage/png\t2390\t-\t-\n",
			at.UTC().Format("2006-01-02"), at.UTC().Format("15:04:05"), method, path, status)
	}
	for key, n := range hits {
		path := "/" + strings.ReplaceAll(url.PathEscape(key), "%2F", "/")
		path = strings.ReplaceAll(path, ":", "%3A")
		for range n {
			line("GET", path, 200)
		}
	}
	line("GET", "/index.html", 200)
	line("POST", "/nope", 405)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(b.String()))
	w.Close()
	return gz.Bytes()
}

// TestLogsFeedTheQuota: the log function, its bootstrap under the Lambda
// Runtime Interface Emulator, reads a CloudFront log delivered to the log
// bucket (the S3 event as S3 delivers it, invoked directly) into the usage
// pages, once however often the event comes; then a clean-up keeps the
// pages the log shows read, though they were seeded first: by their last
// read with LRU, by their hits with LFU. Without the log both would keep
// the newer JPEG pages instead.
func TestLogsFeedTheQuota(t *testing.T) {
	r := lambdatest.NewResources(t)
	env := lambdatest.Env(t, r, map[string]string{"TILECACHE_LAYERS": lambdatest.LayersFile(t, logLayers), "TILECACHE_SEED_THREADS": "2"})
	worker := lambdatest.Worker(t, env)
	cleaner := lambdatest.Maintenance(t, env)                     // the cleaner function's program: the quota's clean-up
	if err := cleaner.Cleaner.Maintain(t.Context()); err != nil { // usage counted from here on
		t.Fatal(err)
	}
	// The PNG tile sets first, so that without reads LRU would remove them
	// (each seed ends before the next starts: the JPEG pages are newer).
	src := &lambdatest.EventSource{Client: lambdatest.SQS(t), QueueURL: r.QueueURL, QueueArn: r.QueueArn(), Timeout: time.Minute}
	for _, format := range []string{"image/png", "image/jpeg"} {
		for _, l := range []string{"lru:world", "lfu:world"} {
			seedLogLayer(t, worker, src, l, format, 3)
		}
	}
	logKey := putCloudFrontLog(t, r)
	t.Run("delivered", func(t *testing.T) { deliverLog(t, r, env, worker, logKey) })
	t.Run("clean-up", func(t *testing.T) { cleanUpByUse(t, cleaner) })
}

// seedLogLayer seeds levels 0 to zoomStop of layer in format, working its lanes
// with the worker function's handler until its tasks are done.
func seedLogLayer(t *testing.T, worker *worker.Program, src *lambdatest.EventSource, layer, format string, zoomStop int) {
	t.Helper()
	z0 := 0
	ts, err := worker.Engine.Control.Submit(t.Context(), gwc.SeedRequest{Layer: layer, GridSetID: "EPSG:4326", HasGridSetID: true, ZoomStart: &z0, ZoomStop: &zoomStop, Format: format, Type: "seed"})
	if err != nil {
		t.Fatal(err)
	}
	src.RunUntil(t, worker.HandleSQS, time.Minute, func() bool {
		for _, tk := range ts {
			cur, err := worker.Tasks.Get(t.Context(), tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			if cur.Status.Active() {
				return false
			}
		}
		return true
	})
}

// putCloudFrontLog writes the log of the reads that come after the seeds
// to the log bucket and returns its key: every PNG tile of lru:world read
// once, every PNG tile of lfu:world three times; the JPEG tiles never.
func putCloudFrontLog(t *testing.T, r lambdatest.Resources) string {
	t.Helper()
	hits := map[string]int{}
	tileKeys := func(layer, format, ext string, n int) {
		set := tilestore.TileSet{Prefix: r.Prefix, LayerID: layer, Ext: ext, SetName: tilestore.SetName{Layer: layer, GridSetID: "EPSG:4326", FormatID: format, ParametersID: "default"}}
		for z := range 4 {
			for x := range int64(2) << z {
				for y := range int64(1) << z {
					hits[set.Key(z, x, y)] = n
				}
			}
		}
	}
	tileKeys("lru:world", "png", "png", 1)
	tileKeys("lfu:world", "png", "png", 3)
	// CloudFront logs times to the second: the reads are dated a second
	// on, so that they are later than the last seed's pages' creation.
	at := time.Now().Add(time.Second)
	logKey := r.Prefix + "-logs/E2EXAMPLE.2026-11-25-12.abcd1234.gz"
	logs := lambdatest.Tiles(t, r)
	if err := logs.Put(t.Context(), logKey, cloudFrontLog(t, at, hits), tilestore.Meta{ContentType: "application/gzip"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Delete(context.Background(), []string{logKey}) })
	return logKey
}

// deliverLog hands the log's S3 event to the log function twice: the
// pages count its hits once.
func deliverLog(t *testing.T, r lambdatest.Resources, env map[string]string, worker *worker.Program, logKey string) {
	ctx := t.Context()
	fn := lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: lambdatest.Bootstrap(t, "logs"), Name: "tilecache-LogsFunction", Env: env})
	var ev events.S3Event
	ev.Records = []events.S3EventRecord{{EventSource: "aws:s3", EventName: "ObjectCreated:Put", AWSRegion: lambdatest.Region,
		S3: events.S3Entity{Bucket: events.S3Bucket{Name: r.Bucket}, Object: events.S3Object{Key: url.QueryEscape(logKey), ETag: "abcd1234"}}}}
	event, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	pageHits := func(layer string) map[string]int64 {
		t.Helper()
		ps, err := worker.Usage.Pages(ctx, layer)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, p := range ps {
			out[p.Key.Set.FormatID] += p.Hits
		}
		return out
	}
	for i := range 2 { // the second delivery counts nothing
		if inv := fn.Invoke(t, event); inv.Error != nil {
			t.Fatalf("invocation %d: %v\n%s", i+1, inv.Error, strings.Join(inv.Log, "\n"))
		}
		const tiles = 2 + 8 + 32 + 128
		if got := pageHits("lru:world"); got["png"] != tiles || got["jpeg"] != 0 {
			t.Fatalf("after delivery %d: lru:world hits %v, want png %d, jpeg 0", i+1, got, tiles)
		}
		if got := pageHits("lfu:world"); got["png"] != 3*tiles || got["jpeg"] != 0 {
			t.Fatalf("after delivery %d: lfu:world hits %v, want png %d, jpeg 0", i+1, got, 3*tiles)
		}
	}

}

// cleanUpByUse sets a quota that holds one of each layer's two tile sets
// and runs the clean-up: the pages read are kept, by their last read with
// LRU, by their hits with LFU.
func cleanUpByUse(t *testing.T, cleaner *maintenance.Program) {
	ctx := t.Context()
	ls, err := cleaner.Usage.Layers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var quotas []quota.LayerQuota
	for _, l := range ls {
		quotas = append(quotas, quota.LayerQuota{Layer: l.Layer, Policy: map[string]string{"lru:world": quota.PolicyLRU, "lfu:world": quota.PolicyLFU}[l.Layer], Quota: l.Bytes * 6 / 10})
	}
	enabled := true
	if _, err := cleaner.Usage.UpdateQuotaConfig(ctx, func(c quota.Config) (quota.Config, error) {
		return c.Apply(quota.Patch{Enabled: &enabled, LayerQuotas: &quotas})
	}); err != nil {
		t.Fatal(err)
	}
	if err := cleaner.Cleaner.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"lru:world", "lfu:world"} {
		left := map[string]int64{}
		ps, err := cleaner.Usage.Pages(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			left[p.Key.Set.FormatID] += p.Tiles
		}
		if left["png"] != 170 || left["jpeg"] >= 170 {
			t.Errorf("%s after the clean-up: tiles left %v; want every PNG tile (read through the CDN) kept and JPEG pages removed", l, left)
		}
	}
}
