package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/app"
	"tilecache/internal/app/apptest"
	"tilecache/internal/auth"
	"tilecache/internal/config"
	"tilecache/internal/task"
)

// Secrets of the layer's upstream URL: a password in its userinfo and an
// API key in its query. Neither may reach the log.
const (
	redactUser     = "wmsuser"
	redactPassword = "s3cretpw"
	redactKey      = "K3Y-SECRET"
)

const redactLayers = `
layers:
  - name: secret:wms
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [1, 1]
    renderOnMiss: {enabled: true}
    source: {type: wms, url: "%s", layers: world, retries: 1, retryBackoff: 5ms}
`

// startJSONLogged starts the program as apptest.Start does, but logs as a
// deployed one: JSON records at every level, here into log.
func startJSONLogged(t *testing.T, layers string, log *apptest.LogBuffer) *apptest.App {
	t.Helper()
	dir := t.TempDir()
	layersFile := filepath.Join(dir, "layers.yaml")
	if err := os.WriteFile(layersFile, []byte(layers), 0o644); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "users")
	if err := auth.AddAccount(users, apptest.User, apptest.Password, bcrypt.MinCost); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	env := map[string]string{
		"TILECACHE_DATA": dir, "TILECACHE_LAYERS": layersFile, "TILECACHE_USERS": users,
		"TILECACHE_SEED_THREADS": "2", "TILECACHE_CHECKPOINT_INTERVAL": "100ms",
		"TILECACHE_KILL_CHECK_INTERVAL": "100ms", "TILECACHE_LANE_SLICE": "1s", "TILECACHE_STALE_AFTER": "2m",
		"TILECACHE_PUBLIC_URL": "http://" + srv.Listener.Addr().String(), "TILECACHE_UPSTREAM_ALLOW": apptest.UpstreamAllow,
	}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := app.New(t.Context(), cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Run(ctx); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	srv.Config.Handler = p.Handler
	srv.Start()
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
		p.Close()
	})
	return &apptest.App{URL: srv.URL, DataDir: dir, Local: p}
}

// TestUpstreamSecretsStayOutOfTheLog: seeding (and rendering on a miss)
// a WMS layer whose URL carries a password and an API key, against an
// upstream that fails, logs the failures with the upstream's host, path
// and parameter names, but neither secret.
func TestUpstreamSecretsStayOutOfTheLog(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "how a source treats a hostile or secret-bearing upstream")
	var calls, authorized atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		// What is logged is redacted, what is sent is not.
		if user, pass, _ := r.BasicAuth(); user == redactUser && pass == redactPassword && r.URL.Query().Get("APIKEY") == redactKey {
			authorized.Add(1)
		}
		http.Error(w, "map server exploded", http.StatusInternalServerError)
	}))
	defer up.Close()
	host := strings.TrimPrefix(up.URL, "http://")
	wmsURL := fmt.Sprintf("http://%s:%s@%s/wms?apikey=%s", redactUser, redactPassword, host, redactKey)

	var log apptest.LogBuffer
	a := startJSONLogged(t, fmt.Sprintf(redactLayers, wmsURL), &log)

	// Retried once per tile, then counted and skipped.
	rows := seedReq(t, a, "secret:wms", `{"seedRequest":{"zoomStart":0,"zoomStop":0,"tileFailureRetryCount":1,
		"tileFailureRetryWaitTime":1,"totalFailuresBeforeAborting":100}}`)
	for _, tk := range waitFinished(t, a, ids(rows), 30*time.Second) {
		if tk.Status != task.Done {
			t.Errorf("task %d: %v, want DONE with the failures skipped", tk.ID, tk.Status)
		}
	}
	// Without retries the first failure aborts the task.
	rows = seedReq(t, a, "secret:wms", `{"seedRequest":{"zoomStart":0,"zoomStop":0}}`)
	for _, tk := range waitFinished(t, a, ids(rows), 30*time.Second) {
		if tk.Status != task.Aborted {
			t.Errorf("task %d: %v, want ABORTED", tk.ID, tk.Status)
		}
	}
	// A render on a miss fails too; what the client reads is clean as well.
	status, _, body := getTile(t, a.URL, "/tiles/secret:wms/EPSG:4326/png/0/0/0.png")
	if status < 500 {
		t.Errorf("tile on a failing upstream: got %d %q, want a 5xx", status, body)
	}
	for _, s := range []string{redactPassword, redactKey, redactUser} {
		if strings.Contains(string(body), s) {
			t.Errorf("the answer to the client carries %q: %s", s, body)
		}
	}
	if calls.Load() == 0 || authorized.Load() != calls.Load() {
		t.Fatalf("the upstream was called %d times, %d of them with the URL's password and key; want every call with them", calls.Load(), authorized.Load())
	}

	got := log.String()
	for _, want := range []string{"tile failure", "tile failure: metatile skipped", "task aborted on tile failure",
		"render on miss failed", "HTTP 500", "map server exploded", host + "/wms?", "APIKEY=REDACTED"} {
		if !strings.Contains(got, want) {
			t.Errorf("the log does not mention %q:\n%s", want, got)
		}
	}
	for _, secret := range []string{redactPassword, redactKey, redactUser} {
		if strings.Contains(got, secret) {
			for line := range strings.SplitSeq(got, "\n") {
				if strings.Contains(line, secret) {
					t.Errorf("the log carries %q: %s", secret, line)
				}
			}
		}
	}
}
