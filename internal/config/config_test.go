package config_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"tilecache/internal/config"
)

func lookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	c, err := config.Load(lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8080" || c.SeedThreads != 16 || c.Backend != "embedded" || c.UsersFile != ".data/users" || c.Checkpoint != 8*time.Second || c.KillCheck != time.Second || c.DecodeMemory != 512<<20 {
		t.Fatalf("got %+v", c)
	}
}

func TestEveryProblemReported(t *testing.T) {
	_, err := config.Load(lookup(map[string]string{
		"TILECACHE_SEED_THREADS": "zero", "TILECACHE_BACKEND": "cloud", "TILECACHE_CHECKPOINT_INTERVAL": "-1s",
		"TILECACHE_DECODE_MEMORY": "-3",
	}))
	if err == nil {
		t.Fatal("got nil error")
	}
	for _, want := range []string{"TILECACHE_SEED_THREADS", "TILECACHE_BACKEND", "TILECACHE_CHECKPOINT_INTERVAL", "TILECACHE_DECODE_MEMORY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestPublicURL(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
		bad  bool
	}{
		{"default: the local address", map[string]string{"TILECACHE_ADDR": "127.0.0.1:9000", "TILECACHE_BASE_PATH": "/gwc"}, "http://127.0.0.1:9000/gwc", false},
		{"a CDN domain, trailing slash dropped", map[string]string{"TILECACHE_PUBLIC_URL": "https://d111.cloudfront.net/"}, "https://d111.cloudfront.net", false},
		{"set but empty: root-relative documents", map[string]string{"TILECACHE_PUBLIC_URL": ""}, "", false},
		{"not a URL", map[string]string{"TILECACHE_PUBLIC_URL": "tiles.example.org"}, "", true},
		{"with a query", map[string]string{"TILECACHE_PUBLIC_URL": "https://x.org/?a=1"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Load(lookup(tt.env))
			if tt.bad {
				if err == nil || !strings.Contains(err.Error(), "TILECACHE_PUBLIC_URL") {
					t.Fatalf("got %v, want an error naming TILECACHE_PUBLIC_URL", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.PublicURL != tt.want {
				t.Errorf("got %q, want %q", c.PublicURL, tt.want)
			}
		})
	}
}

func TestAWSRetry(t *testing.T) {
	c, err := config.Load(lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.AWSMaxAttempts != 10 || c.AWSRetryBudget != 20*time.Second {
		t.Errorf("defaults: %d attempts, budget %v; want 10, 20s", c.AWSMaxAttempts, c.AWSRetryBudget)
	}
	c, err = config.Load(lookup(map[string]string{"TILECACHE_AWS_MAX_ATTEMPTS": "1", "TILECACHE_AWS_RETRY_BUDGET": "500ms"}))
	if err != nil || c.AWSMaxAttempts != 1 || c.AWSRetryBudget != 500*time.Millisecond {
		t.Errorf("set: %d attempts, budget %v, err %v; want 1, 500ms", c.AWSMaxAttempts, c.AWSRetryBudget, err)
	}
	for _, bad := range []struct{ name, value string }{
		{"TILECACHE_AWS_MAX_ATTEMPTS", "0"}, {"TILECACHE_AWS_MAX_ATTEMPTS", "101"}, {"TILECACHE_AWS_MAX_ATTEMPTS", "ten"},
		{"TILECACHE_AWS_RETRY_BUDGET", "0s"}, {"TILECACHE_AWS_RETRY_BUDGET", "20"}, {"TILECACHE_AWS_RETRY_BUDGET", "6m"},
	} {
		if _, err := config.Load(lookup(map[string]string{bad.name: bad.value})); err == nil || !strings.Contains(err.Error(), bad.name) {
			t.Errorf("%s=%q: got error %v, want one naming %s", bad.name, bad.value, err, bad.name)
		}
	}
}

func TestUpstreamAllow(t *testing.T) {
	c, err := config.Load(lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.UpstreamAllow != nil {
		t.Errorf("default: %v, want none", c.UpstreamAllow)
	}
	c, err = config.Load(lookup(map[string]string{"TILECACHE_UPSTREAM_ALLOW": " 127.0.0.1/8, ::1/128,,10.1.2.0/24 "}))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(c.UpstreamAllow); got != "[127.0.0.0/8 ::1/128 10.1.2.0/24]" {
		t.Errorf("got %s, want [127.0.0.0/8 ::1/128 10.1.2.0/24] (prefixes masked)", got)
	}
	for _, bad := range []string{"127.0.0.1", "localhost", "10.0.0.0/33"} {
		_, err = config.Load(lookup(map[string]string{"TILECACHE_UPSTREAM_ALLOW": "::1/128," + bad}))
		if err == nil || !strings.Contains(err.Error(), "TILECACHE_UPSTREAM_ALLOW") || !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("%q: got %v, want an error naming TILECACHE_UPSTREAM_ALLOW and %q", bad, err, bad)
		}
	}
}

func TestAuditRetention(t *testing.T) {
	for _, c := range []struct {
		value string
		want  time.Duration
	}{{"", 90 * 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"36h", 36 * time.Hour}, {" 365d ", 365 * 24 * time.Hour}} {
		env := map[string]string{}
		if c.value != "" {
			env["TILECACHE_AUDIT_RETENTION"] = c.value
		}
		got, err := config.Load(lookup(env))
		if err != nil || got.AuditRetention != c.want {
			t.Errorf("TILECACHE_AUDIT_RETENTION=%q: %v, %v; want %v", c.value, got.AuditRetention, err, c.want)
		}
	}
	for _, bad := range []string{"0d", "-1d", "1.5d", "ninety", "0s", "d", "40000d"} {
		if _, err := config.Load(lookup(map[string]string{"TILECACHE_AUDIT_RETENTION": bad})); err == nil || !strings.Contains(err.Error(), "TILECACHE_AUDIT_RETENTION") {
			t.Errorf("TILECACHE_AUDIT_RETENTION=%q: got error %v, want one naming it", bad, err)
		}
	}
}

// TestConsoleBaseMap: TILECACHE_CONSOLE_BASE_MAP is none by default and
// kept as given when it is a template.
func TestConsoleBaseMap(t *testing.T) {
	c, err := config.Load(lookup(nil))
	if err != nil || c.ConsoleBaseMap != "" {
		t.Fatalf("default: %q %v", c.ConsoleBaseMap, err)
	}
	const tmpl = "https://tiles.example.org/{z}/{x}/{-y}.png"
	c, err = config.Load(lookup(map[string]string{"TILECACHE_CONSOLE_BASE_MAP": tmpl}))
	if err != nil || c.ConsoleBaseMap != tmpl {
		t.Fatalf("set: %q %v", c.ConsoleBaseMap, err)
	}
}
