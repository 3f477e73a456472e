package functions_test

import (
	"fmt"
	"regexp"
	"slices"
	"testing"
)

// TestTemplateApiRateRule: a rate-based rule per client address belongs in
// front of the administration API, but WAFv2 web ACLs associate with REST
// APIs (an AWS::ApiGateway::Stage or AWS::Serverless::Api), not with HTTP
// APIs; the template's API is an HTTP API, so it has none, and failed
// logins are limited in ApiFunction (package auth). If a REST API comes,
// its stage must get a REGIONAL web ACL with a rate-based rule keyed by IP;
// an association with the HTTP API would fail to deploy.
func TestTemplateApiRateRule(t *testing.T) {
	tp := loadTemplate(t)
	httpAPIs := tp.resourcesOfType("AWS::Serverless::HttpApi")
	restAPIs := append(tp.resourcesOfType("AWS::Serverless::Api"), tp.resourcesOfType("AWS::ApiGateway::RestApi")...)
	for _, fn := range []string{"ApiFunction"} {
		events := get(tp.resource(fn), "Properties", "Events")
		for _, name := range keys(events) {
			typ := get(events, name, "Type").Value
			api, _ := refTarget(get(events, name, "Properties", "ApiId"))
			if typ == "Api" {
				api, _ = refTarget(get(events, name, "Properties", "RestApiId"))
			}
			if (typ == "HttpApi" && !slices.Contains(httpAPIs, api)) || (typ == "Api" && !slices.Contains(restAPIs, api)) {
				t.Errorf("%s event %s: %s %q is not an API of the template", fn, name, typ, api)
			}
		}
	}
	associated := map[string]string{} // API → web ACL
	for _, id := range tp.resourcesOfType("AWS::WAFv2::WebACLAssociation") {
		acl, _ := refTarget(get(tp.resource(id), "Properties", "WebACLArn"))
		target := get(tp.resource(id), "Properties", "ResourceArn")
		api := ""
		if a, ok := tagged(target, "Sub"); ok {
			if m := regexp.MustCompile(`\$\{(\w+)\}/stages/`).FindStringSubmatch(a.Value); m != nil {
				api = m[1]
			}
		}
		if slices.Contains(httpAPIs, api) {
			t.Errorf("%s associates a web ACL with the HTTP API %s: WAFv2 cannot (REST APIs only)", id, api)
		}
		associated[api] = acl
	}
	for _, api := range restAPIs {
		acl, ok := associated[api]
		if !ok {
			t.Errorf("REST API %s has no web ACL: add a REGIONAL one with a rate-based rule keyed by IP", api)
			continue
		}
		props := get(tp.resource(acl), "Properties")
		if get(props, "Scope").Value != "REGIONAL" {
			t.Errorf("web ACL %s of %s: scope %s, want REGIONAL", acl, api, get(props, "Scope").Value)
		}
		rate := false
		for _, r := range get(props, "Rules").Content {
			if s := get(r, "Statement", "RateBasedStatement"); s != nil && get(s, "AggregateKeyType").Value == "IP" {
				rate = true
			}
		}
		if !rate {
			t.Errorf("web ACL %s of %s: no rate-based rule keyed by IP", acl, api)
		}
	}
	if len(httpAPIs) == 0 && len(restAPIs) == 0 {
		t.Fatal("the template declares no API")
	}
}

// TestTemplateAccountsSecret: ApiFunction reads its accounts at start from
// the SSM parameter or Secrets Manager secret AccountsSecret names, not
// from its environment, and its role may read that one secret only, with
// the action of the service the ARN names.
func TestTemplateAccountsSecret(t *testing.T) {
	tp := loadTemplate(t)
	for _, fn := range tp.functions() {
		env := tp.env(fn)
		if _, ok := env["TILECACHE_ACCOUNTS"]; ok {
			t.Errorf("%s: TILECACHE_ACCOUNTS puts the account hashes into the environment", fn)
		}
		if _, ok := env["TILECACHE_ACCOUNTS_SECRET"]; ok != (fn == "ApiFunction") {
			t.Errorf("%s: TILECACHE_ACCOUNTS_SECRET set %v, want it on ApiFunction only", fn, ok)
		}
	}
	p := get(tp.root, "Parameters", "AccountsSecret", "AllowedPattern")
	if p == nil {
		t.Fatal("no parameter AccountsSecret with an AllowedPattern (the ARN of the accounts' SSM parameter or secret)")
	}
	pattern := regexp.MustCompile(p.Value)
	for arn, ok := range map[string]bool{
		"arn:aws:ssm:eu-west-1:123456789012:parameter/tilecache/accounts":                true,
		"arn:aws:ssm:eu-west-1:123456789012:parameter/accounts":                          true,
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:tilecache-accounts-AbCdEf": true,
		"arn:aws:ssm:eu-west-1:123456789012:parameter//accounts":                         false,
		"arn:aws:ssm:eu-west-1:123456789012:parameter/*":                                 false,
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:*":                         false,
		"arn:aws:s3:::bucket/accounts":                                                   false,
		"/tilecache/accounts":                                                            false,
	} {
		if pattern.MatchString(arn) != ok {
			t.Errorf("AccountsSecret %q: accepted %v, want %v", arn, !ok, ok)
		}
	}
	for arn, action := range map[string]string{
		"arn:aws:ssm:us-east-1:000000000000:parameter/tilecache/accounts":                "ssm:GetParameter",
		"arn:aws:secretsmanager:us-east-1:000000000000:secret:tilecache-accounts-AbCdEf": "secretsmanager:GetSecretValue",
	} {
		w := &world{tp: tp, params: map[string]string{"AccountsSecret": arn}, refs: map[string]string{}, atts: map[string]string{}}
		for _, id := range []string{"TileBucket", "TaskTable", "LaneQueue", "ApiLogGroup", "TileDistribution"} {
			w.refs[id] = id
			w.atts[id+".Arn"] = "arn:aws:test:::" + id
		}
		var grants []string
		for _, s := range roleStatements(t, tp, "ApiFunction", w) {
			for _, r := range s.resources {
				if r == arn {
					grants = append(grants, fmt.Sprint(s.actions))
				}
			}
			for _, a := range s.actions {
				if (a == "ssm:GetParameter" || a == "secretsmanager:GetSecretValue") && !slices.Equal(s.resources, []string{arn}) {
					t.Errorf("ApiRole %s allows %s on %v, want on %s only", s.sid, a, s.resources, arn)
				}
			}
		}
		if want := fmt.Sprint([]string{action}); !slices.Equal(grants, []string{want}) {
			t.Errorf("AccountsSecret %s: ApiRole grants %v on it, want %s", arn, grants, want)
		}
	}
}
