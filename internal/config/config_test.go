package config_test

import (
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
