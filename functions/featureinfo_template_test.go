package functions_test

import (
	"fmt"
	"strings"
	"testing"

	"tilecache/internal/edgepath"
)

// TestTemplateRESTFeatureInfoBehaviour: with the CDN, the WMTS RESTful
// FeatureInfo resource (edgepath.FeatureInfoPath) has a behaviour of its
// own that sends it to the tile function as it is: no edge function (the
// paths' function, which has no room for it, would answer 404), not the
// bucket (no stored object is there), GET and HEAD only, the default
// behaviour's policies; its pattern is the path the capabilities
// advertise, and no other behaviour's pattern takes it first.
func TestTemplateRESTFeatureInfoBehaviour(t *testing.T) {
	tp := loadTemplate(t)
	w := cdnWorld(tp, map[string]string{"EnableCdn": "true"})
	dist, _ := resource(t, w, "TileDistribution")
	dc := dist["DistributionConfig"].(map[string]any)
	def := dc["DefaultCacheBehavior"].(map[string]any)
	behaviours, _ := dc["CacheBehaviors"].([]any)
	var found map[string]any
	for _, b := range behaviours {
		b := b.(map[string]any)
		pattern, _ := b["PathPattern"].(string)
		if pattern == strings.TrimPrefix(edgepath.FeatureInfoPath, "/")+"*" || pattern == edgepath.FeatureInfoPath+"*" {
			found = b
			break
		}
		if p := strings.TrimSuffix(strings.TrimPrefix(pattern, "/"), "*"); strings.HasPrefix(strings.TrimPrefix(edgepath.FeatureInfoPath, "/"), p) {
			t.Errorf("behaviour %s comes first and takes %s", pattern, edgepath.FeatureInfoPath)
		}
	}
	if found == nil {
		t.Fatalf("no cache behaviour for %s*", edgepath.FeatureInfoPath)
	}
	if found["TargetOriginId"] != "tile-function" {
		t.Errorf("origin %v, want tile-function", found["TargetOriginId"])
	}
	if _, ok := found["FunctionAssociations"]; ok {
		t.Errorf("functions %v, want none", found["FunctionAssociations"])
	}
	if m := fmt.Sprint(found["AllowedMethods"]); m != "[GET HEAD]" {
		t.Errorf("methods %s, want GET and HEAD", m)
	}
	for _, k := range []string{"CachePolicyId", "OriginRequestPolicyId", "ResponseHeadersPolicyId", "ViewerProtocolPolicy"} {
		if fmt.Sprint(found[k]) != fmt.Sprint(def[k]) {
			t.Errorf("%s %v, want the default behaviour's %v", k, found[k], def[k])
		}
	}
}
