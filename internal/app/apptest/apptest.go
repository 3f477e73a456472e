// Package apptest starts the whole local program on a real HTTP server
// (httptest) over temporary embedded backends, for end-to-end tests.
package apptest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/app"
	"tilecache/internal/auth"
	"tilecache/internal/config"
	"tilecache/internal/quota/quotatest"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

// User and Password are the administrator account of every test app.
const (
	User     = "admin"
	Password = "s3cret pass"
)

// The other accounts of every test app, all with Password: one of each
// lower role, and one of the accounts file's "user" role (no access).
const (
	ViewerUser   = "vera"
	OperatorUser = "otto"
	NoRoleUser   = "uma"
)

// writeAccounts writes the accounts file of a test app or process at
// path, unless it exists: User (an administrator, the file's default
// role), ViewerUser, OperatorUser and NoRoleUser.
func writeAccounts(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if err := auth.AddAccount(path, User, Password, bcrypt.MinCost); err != nil {
		t.Fatal(err)
	}
	for name, role := range map[string]string{ViewerUser: "viewer", OperatorUser: "operator", NoRoleUser: "user"} {
		if err := auth.AddAccountRole(path, name, Password, role, bcrypt.MinCost); err != nil {
			t.Fatal(err)
		}
	}
}

// Layers is the default layer file of test apps.
const Layers = `
gridSets:
  - id: TopLeft4326
    epsg: 4326
    extent: [-180, -90, 180, 90]
    resolutions: [0.703125, 0.3515625, 0.17578125, 0.087890625]
    alignTopLeft: true
layers:
  - name: demo:world
    gridSubsets:
      - gridSet: EPSG:4326
      - gridSet: EPSG:900913
      - gridSet: TopLeft4326
    formats: [image/png, image/jpeg]
    metatiling: [4, 4]
    cacheControl: public, max-age=60
    source: {type: testpattern}
  - name: topp:states
    gridSubsets:
      - gridSet: EPSG:4326
        extent: [-124, 22, -66, 50]
        zoomStop: 12
      - gridSet: EPSG:900913
    formats: [image/png, image/jpeg, image/png8]
    metatiling: [4, 4]
    parameterFilters:
      - key: STYLES
        default: ""
        values: [pophatch, polygon]
      - key: CQL_FILTER
        default: ""
        regex: "[A-Za-z0-9_ <>=.']*"
    source: {type: testpattern}
  - name: slow:world
    gridSubsets:
      - gridSet: EPSG:4326
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: testpattern, delay: 40ms}
  - name: broken:world
    gridSubsets:
      - gridSet: EPSG:4326
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: testpattern, failZooms: [2]}
`

// The test programs' lane intervals: far shorter than the program's
// defaults (8 s, 1 s), so that a test sees checkpoints and kills promptly,
// yet not so short that the task store does little else: at 100 ms, the
// checkpoints and kill checks of a few lanes took DynamoDB Local more CPU
// than the seeds they recorded (29 s against 5 s at 500 ms/250 ms, for
// the same test). A lane's lease lapses 5 checkpoints after its last one
// (1.5 s), well inside the AWS tests' visibility timeout (4 s, aws.go),
// so that the redelivery of a stopped worker's message takes the lane
// over, as in production (40 s against 60 s).
const (
	CheckpointInterval = "300ms"
	KillCheckInterval  = "250ms"
)

// Options configure a test app; zero values take test-friendly defaults.
type Options struct {
	Layers      string        // layer file content; default Layers
	DataDir     string        // reuse a data directory (restart tests); default a new temp dir
	SeedThreads int           // default 4
	Checkpoint  time.Duration // default CheckpointInterval
	Slice       time.Duration
	StaleAfter  time.Duration
	// Backend is "embedded" or "aws"; default $TILECACHE_TEST_BACKEND or embedded.
	Backend string
	// Env adds or overrides settings (environment variables).
	Env map[string]string
	// Log, when set, receives the app's log records (text, Info and up).
	// Writes come from many goroutines: see LogBuffer.
	Log io.Writer
	// CleanUpClock, if set, is the clock and timer of the disk-quota
	// clean-up's schedule (quota.Cleaner.SetClock): the schedule runs at
	// start and on configuration changes, and otherwise only when the test
	// fires it (quotatest.ScheduleClock.Fire), moving the clock on.
	CleanUpClock *quotatest.ScheduleClock
	// MissClock, if set, is the clock of render on miss
	// (onmiss.Renderer.SetClock): remembered outcomes and failure
	// back-offs lapse when the test moves it on.
	MissClock func() time.Time
	// AuthClock, when set, is the clock of what the app remembers of API
	// tokens and of the accounts added at run time (app.NewWithAuthClock): a
	// test moves it past apitoken.CacheFor or auth.StoredFor.
	AuthClock func() time.Time
}

// LogBuffer collects log output from many goroutines.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// App is a running test program.
type App struct {
	URL     string
	DataDir string
	// Prefix is the key prefix of this app's tiles (empty when embedded).
	Prefix string
	Local  *app.Program
	srv    *httptest.Server
	stop   context.CancelFunc
	done   chan struct{}
}

// UpstreamAllow is the TILECACHE_UPSTREAM_ALLOW of the apps and processes
// tests start: the tests' map servers listen on loopback, and layers
// changed through the REST interface fetch from them. A test of the
// refusal sets it to "" in Options.Env.
const UpstreamAllow = "127.0.0.0/8,::1/128"

// AWSPass reports whether this is the AWS pass of the end-to-end tests
// (TILECACHE_TEST_BACKEND=aws): apps start on the local AWS stack unless
// a test picks its backend. `make test` runs the end-to-end packages once
// on each backend.
func AWSPass() bool { return os.Getenv("TILECACHE_TEST_BACKEND") == "aws" }

// Start starts an app and stops it when the test ends.
func Start(t testing.TB, o Options) *App {
	t.Helper()
	testenv.Label(t)
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	if o.Layers == "" {
		o.Layers = Layers
	}
	layers := filepath.Join(o.DataDir, "layers.yaml")
	if err := os.WriteFile(layers, []byte(o.Layers), 0o644); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(o.DataDir, "users")
	writeAccounts(t, users)
	env := map[string]string{
		"TILECACHE_DATA": o.DataDir, "TILECACHE_LAYERS": layers, "TILECACHE_USERS": users,
		"TILECACHE_SEED_THREADS":        itoa(max(o.SeedThreads, 0), 4),
		"TILECACHE_CHECKPOINT_INTERVAL": dur(o.Checkpoint, CheckpointInterval), "TILECACHE_KILL_CHECK_INTERVAL": KillCheckInterval, "TILECACHE_LANE_SLICE": dur(o.Slice, "1s"),
		"TILECACHE_STALE_AFTER": dur(o.StaleAfter, "2m"), "TILECACHE_UPSTREAM_ALLOW": UpstreamAllow,
	}
	if o.Backend == "" && AWSPass() {
		o.Backend = "aws"
	}
	var prefix string
	if o.Backend == "aws" {
		awsVars, r := awsEnv(t, o.DataDir)
		maps.Copy(env, awsVars)
		prefix = r.Prefix + "/"
	}
	// Documents carry the server's URL, known once it listens.
	srv := httptest.NewUnstartedServer(nil)
	env["TILECACHE_PUBLIC_URL"] = "http://" + srv.Listener.Addr().String()
	maps.Copy(env, o.Env)
	cfg, err := config.Load(testenv.Lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	switch {
	case os.Getenv("TILECACHE_TEST_LOG") != "":
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	case o.Log != nil:
		log = slog.New(slog.NewTextHandler(o.Log, nil))
	}
	l, err := app.NewWithAuthClock(t.Context(), cfg, log, o.AuthClock)
	if err != nil {
		t.Fatal(err)
	}
	if o.CleanUpClock != nil {
		l.Cleaner.SetClock(o.CleanUpClock.Now, o.CleanUpClock.After)
	}
	l.Misses.SetClock(o.MissClock)
	ctx, cancel := context.WithCancel(context.Background())
	a := &App{DataDir: o.DataDir, Prefix: prefix, Local: l, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		if err := l.Run(ctx); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	srv.Config.Handler = l.Handler
	srv.Start()
	a.srv = srv
	a.URL = a.srv.URL
	t.Cleanup(a.Stop)
	return a
}

func itoa(v, def int) string {
	if v == 0 {
		v = def
	}
	return strconv.Itoa(v)
}

func dur(d time.Duration, def string) string {
	if d == 0 {
		return def
	}
	return d.String()
}

// TileKeys lists the stored tiles' keys under prefix (without the app's
// key prefix): Keys without the documents (parameters side objects,
// TMS and TileJSON documents, the index, the store marker).
func (a *App) TileKeys(t testing.TB, prefix string) []string {
	t.Helper()
	var out []string
	for _, k := range a.Keys(t, prefix) {
		if IsTileKey(k) {
			out = append(out, k)
		}
	}
	return out
}

// IsTileKey reports whether a key (with or without a key prefix) has the
// shape of a tile's: [prefix/]layerId/gridSetId/formatId/parametersId/z/x/y.ext.
func IsTileKey(key string) bool {
	seg := strings.Split(key, "/")
	if len(seg) < 7 {
		return false
	}
	seg = seg[len(seg)-3:]
	name, _, ok := strings.Cut(seg[2], ".")
	for _, s := range []string{seg[0], seg[1], name} {
		if s == "" || strings.Trim(s, "0123456789") != "" {
			return false
		}
	}
	return ok
}

// Keys lists the stored keys under prefix (without the app's key prefix).
func (a *App) Keys(t testing.TB, prefix string) []string {
	t.Helper()
	var out []string
	full := a.Prefix + prefix
	if err := a.Local.Tiles.List(t.Context(), full, func(o tilestore.Object) error {
		out = append(out, strings.TrimPrefix(o.Key, a.Prefix))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Get reads a stored object by its key without the app's key prefix.
func (a *App) Get(t testing.TB, key string) ([]byte, tilestore.Meta, bool) {
	t.Helper()
	data, meta, found, err := a.Local.Tiles.Get(t.Context(), a.Prefix+key)
	if err != nil {
		t.Fatal(err)
	}
	return data, meta, found
}

// Put stores an object by its key without the app's key prefix.
func (a *App) Put(t testing.TB, key string, data []byte, meta tilestore.Meta) {
	t.Helper()
	if err := a.Local.Tiles.Put(t.Context(), a.Prefix+key, data, meta); err != nil {
		t.Fatal(err)
	}
}

// Stop stops the workers and the server and closes the backends, as a
// process exit would (work in flight is not finished). It is idempotent.
func (a *App) Stop() {
	if a.stop == nil {
		return
	}
	a.stop()
	<-a.done
	a.srv.Close()
	a.Local.Close()
	a.stop = nil
}

// Response is a received answer.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends a request with the test account's credentials. headers are
// name, value pairs. It fails the test on transport errors.
func (a *App) Do(t testing.TB, method, path, body string, headers ...string) Response {
	t.Helper()
	return a.DoAuth(t, User, Password, method, path, body, headers...)
}

// DoAuth is Do with other credentials; an empty user sends none. A POST
// to a seed, estimate or export path with a .json or .xml suffix is sent with that
// format's Content-Type unless headers name one (as a client must: the
// service refuses other types, see rest.seedMediaType).
func (a *App) DoAuth(t testing.TB, user, password, method, path, body string, headers ...string) Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, a.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	if p, _, _ := strings.Cut(path, "?"); method == http.MethodPost &&
		(strings.HasPrefix(p, "/rest/seed/") || strings.HasPrefix(p, "/rest/estimate/") || strings.HasPrefix(p, "/rest/export/")) {
		switch {
		case strings.HasSuffix(p, ".json"):
			req.Header.Set("Content-Type", "application/json")
		case strings.HasSuffix(p, ".xml"):
			req.Header.Set("Content-Type", "application/xml")
		}
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return Response{Status: res.StatusCode, Header: res.Header, Body: string(b)}
}
