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
	if c.Addr != "127.0.0.1:8080" || c.SeedThreads != 16 || c.Backend != "embedded" || c.UsersFile != ".data/users" || c.Checkpoint != 5*time.Second || c.KillCheck != time.Second {
		t.Fatalf("got %+v", c)
	}
}

func TestEveryProblemReported(t *testing.T) {
	_, err := config.Load(lookup(map[string]string{
		"TILECACHE_SEED_THREADS": "zero", "TILECACHE_BACKEND": "cloud", "TILECACHE_CHECKPOINT_INTERVAL": "-1s",
	}))
	if err == nil {
		t.Fatal("got nil error")
	}
	for _, want := range []string{"TILECACHE_SEED_THREADS", "TILECACHE_BACKEND", "TILECACHE_CHECKPOINT_INTERVAL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
