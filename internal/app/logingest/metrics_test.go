package logingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/app/apptest"
	"tilecache/internal/app/logingest"
	"tilecache/internal/config"
	"tilecache/internal/layer"
	"tilecache/internal/quota"
)

// oneLog opens the same log for every key.
type oneLog string

func (l oneLog) Open(context.Context, string, string) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(string(l))), nil
}

// readSink takes every read and mark.
type readSink struct{ hits int64 }

func (s *readSink) RecordAccess(_ context.Context, as []quota.Access) error {
	for _, a := range as {
		s.hits += a.Hits
	}
	return nil
}
func (*readSink) Claim(context.Context, string, string, time.Duration, time.Time) (bool, error) {
	return true, nil
}
func (*readSink) Unclaim(context.Context, string, string) error { return nil }

// TestLogFunctionMetricsNoneKept: the log function's metrics tell the
// reads of a log it kept from those it could not map, and count a log
// whose reads it kept none of — a CDN log under a key prefix read without
// the distribution's origin path — so that an alarm can watch them.
func TestLogFunctionMetricsNoneKept(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "layers.yaml")
	if err := os.WriteFile(path, []byte(apptest.Layers), 0o644); err != nil {
		t.Fatal(err)
	}
	layers, err := layer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// Two viewer reads of tiles, one of the demo page: the distribution's
	// origin path is the key prefix, so the paths lack it.
	at := time.Now().UTC()
	log := "#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status\n"
	for _, p := range []string{"/demo:world/EPSG:4326/png/default/0/0/0.png", "/demo:world/EPSG:4326/png/default/0/1/0.png", "/index.html"} {
		log += at.Format("2006-01-02\t15:04:05") + "\tSEA19-C1\t2390\t192.0.2.1\tGET\td1.cloudfront.net\t" + p + "\t200\n"
	}
	for _, c := range []struct {
		origin           string
		kept, notTile    float64
		noneKept, stored int64
	}{
		{"", 0, 3, 1, 0}, // the origin path missing: nothing is a tile
		{"/tiles", 2, 1, 0, 2},
	} {
		t.Run("origin path "+c.origin, func(t *testing.T) {
			cfg := logingest.Config{KeyPrefix: "tiles",
				AccessLogs: config.AccessLogs{AccessLogFormat: "cloudfront", AccessLogPathPrefix: "/", AccessLogOriginPath: c.origin}}
			sink := &readSink{}
			li, err := logingest.NewIngester(cfg, layers, quota.NewReadLog(sink, sink), oneLog(log), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			li.EnableEMF(&out, "tc-logs")
			ev := events.S3Event{Records: []events.S3EventRecord{{S3: events.S3Entity{Bucket: events.S3Bucket{Name: "logs"},
				Object: events.S3Object{Key: "E2EXAMPLE.2026-11-25-12.0123abcd.gz", ETag: "e-" + c.origin}}}}}
			if err := li.HandleS3(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
			if sink.hits != c.stored {
				t.Errorf("%d reads recorded, want %d", sink.hits, c.stored)
			}
			got := map[string]float64{}
			for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
				var l map[string]any
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Fatalf("EMF line %q: %v", line, err)
				}
				if l["Function"] != "tc-logs" {
					t.Errorf("EMF line without the function's dimension: %s", line)
				}
				if v, ok := l["AccessLogReads"].(float64); ok {
					got[l["outcome"].(string)] += v
				}
				if v, ok := l["AccessLogsNoneKept"].(float64); ok {
					got["none kept"] += v
				}
			}
			want := map[string]float64{"kept": c.kept, "not_tile": c.notTile, "none kept": float64(c.noneKept)}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: %v, want %v (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}
