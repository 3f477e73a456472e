package functions_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestTemplateEdgeOWSFunction: with the CDN, the OGC KVP bindings' edge
// function is functions/edge/ows.js exactly (within CloudFront Functions'
// 10 KB), reads the edge's key-value store, and maps the viewer requests
// of the /gwc/service/* and /wmts behaviours, which send what it maps to
// the tiles-or-render origin group with the default behaviour's cache and
// origin request policies (no query in the cache key nor forwarded: the
// function moved the request into the path); without the CDN it does not
// exist.
func TestTemplateEdgeOWSFunction(t *testing.T) {
	tp := loadTemplate(t)
	src, err := os.ReadFile("edge/ows.js")
	if err != nil {
		t.Fatal(err)
	}
	w := cdnWorld(tp, map[string]string{"EnableCdn": "true"})
	fn, ok := resource(t, w, "EdgeOWSFunction")
	if !ok {
		t.Fatal("EdgeOWSFunction missing with the CDN enabled")
	}
	code, _ := fn["FunctionCode"].(string)
	if code != string(src) {
		t.Errorf("EdgeOWSFunction's code differs from functions/edge/ows.js (%d bytes against %d): copy the file into the template", len(code), len(src))
	}
	if len(code) > cloudFrontFunctionMax {
		t.Errorf("EdgeOWSFunction's code is %d bytes, CloudFront Functions take %d", len(code), cloudFrontFunctionMax)
	}
	cfg, _ := fn["FunctionConfig"].(map[string]any)
	if cfg["Runtime"] != "cloudfront-js-2.0" || fmt.Sprint(fn["AutoPublish"]) != "true" {
		t.Errorf("EdgeOWSFunction: runtime %v, AutoPublish %v; want cloudfront-js-2.0, published", cfg["Runtime"], fn["AutoPublish"])
	}
	if assoc := fmt.Sprint(cfg["KeyValueStoreAssociations"]); !strings.Contains(assoc, w.atts["EdgeGridSets.Arn"]) {
		t.Errorf("EdgeOWSFunction's key-value stores %s, want EdgeGridSets", assoc)
	}
	dist, _ := resource(t, w, "TileDistribution")
	dc := dist["DistributionConfig"].(map[string]any)
	def := dc["DefaultCacheBehavior"].(map[string]any)
	behaviours, _ := dc["CacheBehaviors"].([]any)
	found := map[string]bool{}
	for _, b := range behaviours {
		b := b.(map[string]any)
		pattern, _ := b["PathPattern"].(string)
		if pattern != "/gwc/service/*" && pattern != "/wmts" {
			continue
		}
		found[pattern] = true
		assocs := fmt.Sprint(b["FunctionAssociations"])
		if !strings.Contains(assocs, "viewer-request") || !strings.Contains(assocs, w.atts["EdgeOWSFunction.FunctionMetadata.FunctionARN"]) {
			t.Errorf("%s: functions %s, want the OWS function on viewer-request", pattern, assocs)
		}
		for _, k := range []string{"TargetOriginId", "CachePolicyId", "OriginRequestPolicyId", "ResponseHeadersPolicyId", "ViewerProtocolPolicy"} {
			if fmt.Sprint(b[k]) != fmt.Sprint(def[k]) {
				t.Errorf("%s: %s %v, want the default behaviour's %v", pattern, k, b[k], def[k])
			}
		}
	}
	for _, p := range []string{"/gwc/service/*", "/wmts"} {
		if !found[p] {
			t.Errorf("no cache behaviour for %s", p)
		}
	}
	off := cdnWorld(tp, map[string]string{"EnableCdn": "false"})
	if _, ok := resource(t, off, "EdgeOWSFunction"); ok {
		t.Error("EdgeOWSFunction exists without the CDN")
	}
}
