package functions_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"tilecache/internal/accesslog"
)

// TestTemplateLogOriginPathFollowsKeyPrefix: the log function reads the
// CDN's logs with the distribution's origin path, so that a viewer's path
// (the key without the key prefix) maps to the tile's key; a real
// CloudFront log line of a tile read is kept, with and without a key
// prefix. The bucket's own logs name keys and take no origin path.
func TestTemplateLogOriginPathFollowsKeyPrefix(t *testing.T) {
	tp := loadTemplate(t)
	for _, c := range []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"CDN logs, no key prefix", map[string]string{"EnableCdn": "true", "CdnAccessLogs": "true"}, ""},
		{"CDN logs, key prefix", map[string]string{"EnableCdn": "true", "CdnAccessLogs": "true", "KeyPrefix": "cache/tiles"}, "/cache/tiles"},
		{"bucket logs, key prefix", map[string]string{"EnableCdn": "false", "BucketAccessLogs": "true", "KeyPrefix": "cache/tiles"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := cdnWorld(tp, c.params)
			w.refs["LogsLogGroup"] = "tc-logs"
			w.atts["LogsRole.Arn"] = "arn:aws:iam::000000000000:role/tc-logs"
			w.atts["LogsDeadLetterQueue.Arn"] = "arn:aws:sqs:us-east-1:000000000000:tc-logs-dlq"
			fn, ok := resource(t, w, "LogsFunction")
			if !ok {
				t.Fatal("LogsFunction missing")
			}
			env := m(fn, "Environment", "Variables").(map[string]any)
			got := fmt.Sprint(env["TILECACHE_ACCESS_LOG_ORIGIN_PATH"])
			if got != c.want {
				t.Fatalf("TILECACHE_ACCESS_LOG_ORIGIN_PATH %q, want %q", got, c.want)
			}
			if env["TILECACHE_ACCESS_LOG_FORMAT"] != "cloudfront" {
				return
			}
			// The distribution's origin path is the same.
			dist, _ := resource(t, w, "TileDistribution")
			origin := m(dist, "DistributionConfig", "Origins").([]any)[0]
			if op, _ := m(origin, "OriginPath").(string); op != got {
				t.Errorf("the distribution's OriginPath %q, the log function's %q", op, got)
			}
			// A viewer's read of a tile, as CloudFront logs it: the path
			// lacks the origin path.
			prefix := c.params["KeyPrefix"]
			key := "topp:states/EPSG:4326/png/default/3/1/2.png"
			line := "#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status\n" +
				"2026-11-25\t12:00:01\tSEA19-C1\t2390\t192.0.2.1\tGET\td111.cloudfront.net\t/" + strings.ReplaceAll(key, ":", "%3A") + "\t200\n"
			mp, err := accesslog.NewMapper(accesslog.MapperConfig{PageShift: 6, Prefix: prefix, PathPrefix: fmt.Sprint(env["TILECACHE_ACCESS_LOG_PATH_PREFIX"]), OriginPath: got,
				LayerName: func(id string) (string, bool) { return id, id == "topp:states" }})
			if err != nil {
				t.Fatal(err)
			}
			st, err := accesslog.Ingest(context.Background(), strings.NewReader(line), accesslog.CloudFront, mp,
				func(context.Context, []accesslog.PageHits) error { return nil }, accesslog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if st.Lines != 1 || st.Kept != 1 {
				t.Errorf("key prefix %q: the log's tile read: %d of %d lines kept (%d not tiles), want 1 of 1", prefix, st.Kept, st.Lines, st.NotTile)
			}
		})
	}
}

// TestTemplateServiceObjectsNotPublic: the service's own objects under
// [prefix/]_tilecache/ (the prepared areas of seed requests) are denied to
// the distribution by the bucket policy, whatever the edge passes, and
// the stored areas expire, with and without a key prefix.
func TestTemplateServiceObjectsNotPublic(t *testing.T) {
	tp := loadTemplate(t)
	for _, prefix := range []string{"", "cache/tiles"} {
		t.Run("KeyPrefix "+prefix, func(t *testing.T) {
			w := cdnWorld(tp, map[string]string{"EnableCdn": "true", "KeyPrefix": prefix})
			under := ""
			if prefix != "" {
				under = prefix + "/"
			}
			pol, _ := resource(t, w, "TileBucketPolicy")
			var deny map[string]any
			for _, st := range m(pol, "PolicyDocument", "Statement").([]any) {
				if st := st.(map[string]any); st["Effect"] == "Deny" && m(st, "Principal", "Service") == "cloudfront.amazonaws.com" {
					deny = st
				}
			}
			if deny == nil {
				t.Fatal("no Deny for the distribution in the tile bucket's policy")
			}
			if got, want := fmt.Sprint(deny["Action"], " on ", deny["Resource"]), "s3:GetObject on arn:aws:s3:::bkt/"+under+"_tilecache/*"; got != want {
				t.Errorf("the distribution is denied %s, want %s", got, want)
			}
			if got := fmt.Sprint(m(deny, "Condition", "StringEquals", "AWS:SourceArn")); got != "arn:aws:cloudfront::000000000000:distribution/E2EXAMPLE" {
				t.Errorf("the Deny applies to %s, want the distribution", got)
			}
			bucket, _ := resource(t, w, "TileBucket")
			rules := m(bucket, "LifecycleConfiguration", "Rules").([]any)
			var found bool
			for _, r := range rules {
				if m(r, "Prefix") == under+"_tilecache/areas/" {
					found = true
					if m(r, "Status") != "Enabled" || m(r, "ExpirationInDays") != "30" {
						t.Errorf("the stored areas' rule %v: want enabled, 30 days", r)
					}
				}
			}
			if !found {
				t.Errorf("no lifecycle rule for %s_tilecache/areas/ in %v", under, rules)
			}
		})
	}
	// Without the CDN nothing reads the bucket from outside; the areas
	// still expire.
	w := cdnWorld(tp, map[string]string{"EnableCdn": "false"})
	pol, _ := resource(t, w, "TileBucketPolicy")
	for _, st := range m(pol, "PolicyDocument", "Statement").([]any) {
		if m(st, "Principal", "Service") == "cloudfront.amazonaws.com" {
			t.Errorf("statement for the distribution without the CDN: %v", st)
		}
	}
}
