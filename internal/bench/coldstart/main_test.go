package main

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestTemplateEnv reads the functions' environment from the project's
// template.yaml on a local stack's resources.
func TestTemplateEnv(t *testing.T) {
	tpl, err := loadTemplate(filepath.Join("..", "..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	l := local{Bucket: "b", Table: "tbl", QueueURL: "http://127.0.0.1:1/q", Prefix: "pfx", Accounts: "admin:hash"}
	want := map[string]map[string]string{
		"ApiFunction": {
			"TILECACHE_BACKEND": "aws", "TILECACHE_S3_BUCKET": "b", "TILECACHE_DYNAMODB_TABLE": "tbl", "TILECACHE_SQS_QUEUE_URL": "http://127.0.0.1:1/q",
			"TILECACHE_KEY_PREFIX": "pfx", "TILECACHE_SEED_THREADS": "16", "TILECACHE_LAYERS_REFRESH": "5s", "TILECACHE_ACCOUNTS": "admin:hash",
		},
		"TileFunction": {"TILECACHE_BACKEND": "aws", "TILECACHE_MISS_TIMEOUT": "30s", "TILECACHE_MISS_WAIT": "3s"},
		"LogsFunction": {"TILECACHE_S3_BUCKET": "b", "TILECACHE_ACCESS_LOG_FORMAT": "cloudfront", "TILECACHE_ACCESS_LOG_ORIGIN_PATH": "/pfx"},
	}
	for id, vars := range want {
		env, dropped, err := tpl.env(id, l)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range vars {
			if env[k] != v {
				t.Errorf("%s: %s=%q, want %q", id, k, env[k], v)
			}
		}
		// Nothing resolves to a template expression, no secret is passed.
		for k, v := range env {
			if v == "" || v[0] == '!' || k == "TILECACHE_ACCOUNTS_SECRET" || k == "TILECACHE_EDGE_KVS_ARN" {
				t.Errorf("%s: %s=%q passed on", id, k, v)
			}
		}
		if id != "LogsFunction" && !slices.Contains(dropped, "TILECACHE_EDGE_KVS_ARN") {
			t.Errorf("%s: the edge store's ARN (a stack resource) not named as left out: %v", id, dropped)
		}
	}
	if env, _, _ := tpl.env("WorkerFunction", l); env["TILECACHE_ACCOUNTS"] != "" {
		t.Error("the worker gets the API's accounts")
	}
}

func TestSpread(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want string
	}{
		{nil, "–"},
		{[]float64{3, 1, 2}, "1.0 / **2.0** / 3.0"},
		{[]float64{5, 1, 4, 2, 3}, "1.0 / **3.0** / 5.0"},
		{[]float64{4, 1, 2, 3}, "1.0 / **2.5** / 4.0"},
	} {
		if got := spread(c.xs, 1); got != c.want {
			t.Errorf("spread(%v) = %q, want %q", c.xs, got, c.want)
		}
	}
}

func TestAnswer(t *testing.T) {
	for body, want := range map[string]string{
		`{"statusCode":404,"body":"x"}`:                                         "HTTP 404",
		`{"batchItemFailures":[{"itemIdentifier":"a"},{"itemIdentifier":"b"}]}`: "2 batch item failures",
		`{"errorMessage":"boom","errorType":"Runtime.ExitError"}`:               `error "Runtime.ExitError"`,
		`null`: "ok",
	} {
		if got := answer([]byte(body)); got != want {
			t.Errorf("answer(%s) = %q, want %q", body, got, want)
		}
	}
}
