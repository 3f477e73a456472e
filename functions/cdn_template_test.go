package functions_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// cdnWorld is a deployment of the template with the CDN settings given.
func cdnWorld(tp *template, params map[string]string) *world {
	w := &world{tp: tp, params: params,
		refs: map[string]string{"TileBucket": "bkt", "TileDistribution": "E2EXAMPLE", "TileCachePolicy": "cp-1",
			"TileResponseHeadersPolicy": "rhp-1", "TaskTable": "table", "LaneQueue": "https://sqs.us-east-1.amazonaws.com/000000000000/lanes"},
		atts: map[string]string{"TileBucket.Arn": "arn:aws:s3:::bkt", "TileBucket.RegionalDomainName": "bkt.s3.us-east-1.amazonaws.com",
			"TileOriginAccessControl.Id": "oac-1", "TileDistribution.DomainName": "d111.cloudfront.net",
			"CdnLogBucket.DomainName": "logs.s3.amazonaws.com", "TaskTable.Arn": "arn:aws:dynamodb:us-east-1:000000000000:table/table",
			"LaneQueue.Arn": "arn:aws:sqs:us-east-1:000000000000:lanes"}}
	for _, id := range tp.resourcesOfType("AWS::Logs::LogGroup") {
		w.atts[id+".Arn"] = "arn:aws:logs:us-east-1:000000000000:log-group:" + id + ":*"
	}
	return w
}

// resource evaluates a resource's properties; ok is false when its
// condition is false.
func resource(t *testing.T, w *world, id string) (props map[string]any, ok bool) {
	t.Helper()
	r := w.tp.resource(id)
	if r == nil {
		t.Fatalf("resource %s missing", id)
	}
	if c := get(r, "Condition"); c != nil {
		on, err := w.condition(c.Value)
		if err != nil {
			t.Fatal(err)
		}
		if !on {
			return nil, false
		}
	}
	v, err := w.eval(get(r, "Properties"))
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return v.(map[string]any), true
}

// TestTemplateCdnForMapClients checks what map clients depend on: CORS
// headers, S3's 404 for a missing tile cached briefly and passed on,
// caching by each object's Cache-Control, the demo page at the root, the
// optional custom domain and access logs, and the functions' view of the
// distribution (its id to invalidate, its URL for the documents).
func TestTemplateCdnForMapClients(t *testing.T) {
	tp := loadTemplate(t)
	for _, c := range []struct {
		name   string
		params map[string]string
	}{
		{"defaults", map[string]string{"EnableCdn": "true"}},
		{"custom domain, logs, origins, TTL", map[string]string{"EnableCdn": "true", "CdnDomainName": "tiles.example.org",
			"CdnCertificateArn": "arn:aws:acm:us-east-1:000000000000:certificate/abc", "CdnAccessLogs": "true",
			"CdnCorsOrigins": "https://maps.example.org", "CdnNotFoundTtl": "30"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := cdnWorld(tp, c.params)
			dist, ok := resource(t, w, "TileDistribution")
			if !ok {
				t.Fatal("TileDistribution missing with EnableCdn true")
			}
			dc := dist["DistributionConfig"].(map[string]any)
			if dc["DefaultRootObject"] != "index.html" {
				t.Errorf("DefaultRootObject: got %v, want index.html (the demo page)", dc["DefaultRootObject"])
			}
			ttl := c.params["CdnNotFoundTtl"]
			if ttl == "" {
				ttl = "10"
			}
			if got, want := fmt.Sprint(dc["CustomErrorResponses"]), "[map[ErrorCachingMinTTL:"+ttl+" ErrorCode:404]]"; got != want {
				t.Errorf("CustomErrorResponses: got %s, want %s (a 404 cached briefly, no response page)", got, want)
			}
			b := dc["DefaultCacheBehavior"].(map[string]any)
			for _, k := range []string{"AllowedMethods", "CachedMethods"} {
				if got := strs(b[k]); !slices.Equal(got, []string{"GET", "HEAD", "OPTIONS"}) {
					t.Errorf("%s: got %v, want GET, HEAD, OPTIONS (CORS preflights)", k, got)
				}
			}
			if b["CachePolicyId"] != "cp-1" || b["ResponseHeadersPolicyId"] != "rhp-1" {
				t.Errorf("cache behaviour: got cache policy %v, response headers policy %v; want the template's own", b["CachePolicyId"], b["ResponseHeadersPolicyId"])
			}
			cpr, _ := resource(t, w, "TileCachePolicy")
			cp := cpr["CachePolicyConfig"].(map[string]any)
			if cp["MinTTL"] != "0" || cp["MaxTTL"] != "31536000" || cp["DefaultTTL"] != "86400" {
				t.Errorf("cache policy TTLs: got min %v default %v max %v; want 0 (honour short max-age), 86400, 31536000", cp["MinTTL"], cp["DefaultTTL"], cp["MaxTTL"])
			}
			key := fmt.Sprint(cp["ParametersInCacheKeyAndForwardedToOrigin"])
			for _, want := range []string{"CookieBehavior:none", "HeaderBehavior:none", "QueryStringBehavior:none"} {
				if !strings.Contains(key, want) {
					t.Errorf("cache key: got %s, want %s (parameters are in the key path)", key, want)
				}
			}
			rhp, _ := resource(t, w, "TileResponseHeadersPolicy")
			cors := rhp["ResponseHeadersPolicyConfig"].(map[string]any)["CorsConfig"].(map[string]any)
			origins := c.params["CdnCorsOrigins"]
			if origins == "" {
				origins = "*"
			}
			if got := fmt.Sprint(cors["AccessControlAllowOrigins"]); got != "map[Items:"+origins+"]" || cors["OriginOverride"] != "true" ||
				fmt.Sprint(cors["AccessControlAllowMethods"]) != "map[Items:[GET HEAD OPTIONS]]" {
				t.Errorf("CORS: got %v; want origins %s, GET HEAD OPTIONS, OriginOverride", cors, origins)
			}
			domain := c.params["CdnDomainName"]
			if domain != "" {
				if got := strs(dc["Aliases"]); !slices.Equal(got, []string{domain}) {
					t.Errorf("Aliases: got %v, want %s", got, domain)
				}
				vc := dc["ViewerCertificate"].(map[string]any)
				if vc["AcmCertificateArn"] != c.params["CdnCertificateArn"] || vc["SslSupportMethod"] != "sni-only" {
					t.Errorf("ViewerCertificate: got %v", vc)
				}
			} else if dc["Aliases"] != nil || fmt.Sprint(dc["ViewerCertificate"]) != "map[CloudFrontDefaultCertificate:true]" {
				t.Errorf("without a domain: got aliases %v, certificate %v; want none, CloudFront's", dc["Aliases"], dc["ViewerCertificate"])
			}
			_, logBucket := resource(t, w, "CdnLogBucket")
			if logs := c.params["CdnAccessLogs"] == "true"; logs != logBucket || logs != (dc["Logging"] != nil) {
				t.Errorf("access logs %v: got log bucket %v, Logging %v", logs, logBucket, dc["Logging"])
			} else if logs && fmt.Sprint(dc["Logging"]) != "map[Bucket:logs.s3.amazonaws.com IncludeCookies:false Prefix:cdn/]" {
				t.Errorf("Logging: got %v", dc["Logging"])
			}
			wantURL := "https://d111.cloudfront.net"
			if domain != "" {
				wantURL = "https://" + domain
			}
			for _, fn := range tp.functions() {
				env := tp.env(fn)
				for name, want := range map[string]string{"TILECACHE_CDN_DISTRIBUTION_ID": "E2EXAMPLE", "TILECACHE_PUBLIC_URL": wantURL} {
					got, err := w.eval(env[name])
					if err != nil || got != want {
						t.Errorf("%s %s: got %v (%v), want %s", fn, name, got, err, want)
					}
				}
			}
		})
	}
	// Without the CDN there is nothing to invalidate and no public URL.
	w := cdnWorld(tp, map[string]string{"EnableCdn": "false"})
	for _, fn := range tp.functions() {
		for _, name := range []string{"TILECACHE_CDN_DISTRIBUTION_ID", "TILECACHE_PUBLIC_URL"} {
			if got, err := w.eval(tp.env(fn)[name]); err != nil || got != "" {
				t.Errorf("EnableCdn false: %s %s: got %v (%v), want \"\"", fn, name, got, err)
			}
		}
	}
}

// TestTemplateInvalidationPermissions: the roles of the functions that
// change tiles may invalidate the distribution, and only with the CDN.
func TestTemplateInvalidationPermissions(t *testing.T) {
	tp := loadTemplate(t)
	for _, cdn := range []string{"true", "false"} {
		w := cdnWorld(tp, map[string]string{"EnableCdn": cdn})
		for _, fn := range []string{"ApiFunction", "WorkerFunction", "CleanerFunction"} {
			role, _ := refTarget(tp.fnProp(fn, "Role"))
			pols, err := w.eval(get(tp.resource(role), "Properties", "Policies"))
			if err != nil {
				t.Fatal(err)
			}
			var found []string
			for _, p := range pols.([]any) {
				for _, st := range p.(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
					st := st.(map[string]any)
					if slices.Contains(strs(st["Action"]), "cloudfront:CreateInvalidation") {
						found = append(found, strs(st["Resource"])...)
					}
				}
			}
			want := []string{"arn:aws:cloudfront::000000000000:distribution/E2EXAMPLE"}
			if cdn == "false" {
				want = nil
			}
			if !slices.Equal(found, want) {
				t.Errorf("EnableCdn %s: %s may invalidate %v, want %v", cdn, role, found, want)
			}
		}
	}
}
