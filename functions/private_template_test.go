package functions_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/tiletoken"
)

// TestTemplateTileTokenKeysSecret: the private layers' tile token keys
// come from the SSM parameter or Secrets Manager secret TileTokenKeysSecret
// names (optional: empty, no private layers), read at start by the three
// functions that need them (ApiFunction issues tokens, TileFunction checks
// them, CleanerFunction writes them to the edge); their roles, and theirs
// only, may read that one secret, with the action of the service the ARN
// names.
func TestTemplateTileTokenKeysSecret(t *testing.T) {
	tp := loadTemplate(t)
	param := get(tp.root, "Parameters", "TileTokenKeysSecret")
	if param == nil {
		t.Fatal("no parameter TileTokenKeysSecret (the ARN of the tile token keys' SSM parameter or secret)")
	}
	if d := get(param, "Default"); d == nil || d.Value != "" {
		t.Errorf("TileTokenKeysSecret: want the default \"\" (no private layers), got %v", d)
	}
	pattern := regexp.MustCompile(get(param, "AllowedPattern").Value)
	for arn, ok := range map[string]bool{
		"": true,
		"arn:aws:ssm:eu-west-1:123456789012:parameter/tilecache/tile-token-keys":                true,
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:tilecache-tile-token-keys-AbCdEf": true,
		"arn:aws:ssm:eu-west-1:123456789012:parameter/*":                                        false,
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:*":                                false,
		"k1:" + strings.Repeat("1", 43):                                                         false, // the keys themselves
	} {
		if pattern.MatchString(arn) != ok {
			t.Errorf("TileTokenKeysSecret %q: accepted %v, want %v", arn, !ok, ok)
		}
	}
	for _, fn := range tp.functions() {
		n, ok := tp.env(fn)["TILECACHE_TILE_TOKEN_KEYS_SECRET"]
		if ok != tileTokenKeysFunctions[fn] {
			t.Errorf("%s: TILECACHE_TILE_TOKEN_KEYS_SECRET set %v, want it on ApiFunction, TileFunction and CleanerFunction only", fn, ok)
		}
		if id, _ := refTarget(n); ok && id != "TileTokenKeysSecret" {
			t.Errorf("%s: TILECACHE_TILE_TOKEN_KEYS_SECRET must be !Ref TileTokenKeysSecret", fn)
		}
		if _, ok := tp.env(fn)["TILECACHE_TILE_TOKEN_KEYS"]; ok {
			t.Errorf("%s: TILECACHE_TILE_TOKEN_KEYS puts the keys into the environment", fn)
		}
	}
	const accounts = "arn:aws:ssm:us-east-1:000000000000:parameter/tilecache/accounts"
	for arn, action := range map[string]string{
		"": "",
		"arn:aws:ssm:us-east-1:000000000000:parameter/tilecache/tile-token-keys":                "ssm:GetParameter",
		"arn:aws:secretsmanager:us-east-1:000000000000:secret:tilecache-tile-token-keys-AbCdEf": "secretsmanager:GetSecretValue",
	} {
		w := cdnWorld(tp, map[string]string{"EnableCdn": "true", "AccountsSecret": accounts, "TileTokenKeysSecret": arn})
		w.atts["LogsDeadLetterQueue.Arn"] = "arn:aws:sqs:us-east-1:000000000000:tilecache-logs-dlq"
		for _, fn := range tp.functions() {
			var grants []string
			for _, s := range roleStatements(t, tp, fn, w) {
				for _, a := range s.actions {
					if a != "ssm:GetParameter" && a != "secretsmanager:GetSecretValue" {
						continue
					}
					switch {
					case slices.Equal(s.resources, []string{arn}):
						grants = append(grants, a)
					case fn == "ApiFunction" && slices.Equal(s.resources, []string{accounts}):
					default:
						t.Errorf("TileTokenKeysSecret %q: %s's role allows %s on %v", arn, fn, a, s.resources)
					}
				}
			}
			var want []string
			if action != "" && tileTokenKeysFunctions[fn] {
				want = []string{action}
			}
			if !slices.Equal(grants, want) {
				t.Errorf("TileTokenKeysSecret %q: %s's role grants %v on it, want %v", arn, fn, grants, want)
			}
		}
	}
}

// TestTemplateTileTokenReachesTileFunction: the edge path function moves
// a request's tile token into x-tile-token; every cache behaviour whose
// origin group fails over to the tile function forwards that header to it
// (the tile function checks the token again before it renders a private
// layer's miss), with the CORS headers the bucket needs, and keeps it out
// of the cache key (the edge function checks it before the cache).
func TestTemplateTileTokenReachesTileFunction(t *testing.T) {
	tp := loadTemplate(t)
	js, err := os.ReadFile("edge/tilepath.js")
	if err != nil {
		t.Fatal(err)
	}
	header := strings.ToLower(tiletoken.EdgeHeader)
	if !strings.Contains(string(js), fmt.Sprintf("request.headers['%s']", header)) {
		t.Fatalf("edge/tilepath.js no longer sets request.headers['%s'] (tiletoken.EdgeHeader): update this test", header)
	}
	w := cdnWorld(tp, map[string]string{"EnableCdn": "true"})
	w.refs["TileOriginRequestPolicy"] = "orp-1"
	dist, _ := resource(t, w, "TileDistribution")
	dc := dist["DistributionConfig"].(map[string]any)
	failover := map[string]bool{}
	for _, g := range m(dc, "OriginGroups", "Items").([]any) {
		for _, o := range m(g, "Members", "Items").([]any) {
			if m(o, "OriginId") == "tile-function" {
				failover[fmt.Sprint(m(g, "Id"))] = true
			}
		}
	}
	if len(failover) == 0 {
		t.Fatal("no origin group fails over to the tile function")
	}
	behaviours := []any{dc["DefaultCacheBehavior"]}
	if bs, ok := dc["CacheBehaviors"].([]any); ok {
		behaviours = append(behaviours, bs...)
	}
	policies := map[string]string{"orp-1": "TileOriginRequestPolicy", "cp-1": "TileCachePolicy"}
	seen := 0
	for _, b := range behaviours {
		if !failover[fmt.Sprint(m(b, "TargetOriginId"))] && m(b, "TargetOriginId") != "tile-function" {
			continue
		}
		seen++
		name := "default"
		if p, ok := m(b, "PathPattern").(string); ok {
			name = p
		}
		orpID, ok := policies[fmt.Sprint(m(b, "OriginRequestPolicyId"))]
		if !ok {
			t.Errorf("behaviour %s: origin request policy %v is not the template's own (a managed one forwards no %s)", name, m(b, "OriginRequestPolicyId"), header)
			continue
		}
		orp, _ := resource(t, w, orpID)
		hc := m(orp, "OriginRequestPolicyConfig", "HeadersConfig")
		forwarded := strs(m(hc, "Headers"))
		if m(hc, "HeaderBehavior") != "whitelist" || !slices.ContainsFunc(forwarded, func(h string) bool { return strings.EqualFold(h, header) }) {
			t.Errorf("behaviour %s: %s forwards %v %v, want %s among the headers", name, orpID, m(hc, "HeaderBehavior"), forwarded, header)
		}
		for _, h := range []string{"Origin", "Access-Control-Request-Headers", "Access-Control-Request-Method"} {
			if !slices.Contains(forwarded, h) {
				t.Errorf("behaviour %s: %s no longer forwards %s (a CORS preflight needs it)", name, orpID, h)
			}
		}
		cpID, ok := policies[fmt.Sprint(m(b, "CachePolicyId"))]
		if !ok {
			t.Errorf("behaviour %s: cache policy %v is not the template's own", name, m(b, "CachePolicyId"))
			continue
		}
		cp, _ := resource(t, w, cpID)
		key := m(cp, "CachePolicyConfig", "ParametersInCacheKeyAndForwardedToOrigin")
		if m(key, "HeadersConfig", "HeaderBehavior") != "none" || m(key, "QueryStringsConfig", "QueryStringBehavior") != "none" {
			t.Errorf("behaviour %s: the cache key has headers %v, query strings %v; want none (the token is checked at the edge, not part of the key)",
				name, m(key, "HeadersConfig"), m(key, "QueryStringsConfig"))
		}
	}
	if seen == 0 {
		t.Fatal("no cache behaviour targets the origin group of the tile function")
	}
}
