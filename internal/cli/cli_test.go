package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/cli"
)

type run struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, env cli.Env, args ...string) run {
	t.Helper()
	var out, errOut bytes.Buffer
	if env.Stdout != nil { // a watcher of what is printed
		env.Stdout = io.MultiWriter(&out, env.Stdout)
	} else {
		env.Stdout = &out
	}
	env.Stderr = &errOut
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	code := cli.Run(context.Background(), args, env)
	return run{code, out.String(), errOut.String()}
}

func auth(a *apptest.App) []string {
	return []string{"--server", a.URL, "--user", apptest.User, "--password", apptest.Password}
}

// TestSeedFollowsToTheEnd: a seed is submitted, followed with progress
// lines (not a terminal) and exits 0 when its tasks are done.
func TestSeedFollowsToTheEnd(t *testing.T) {
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	r := runCLI(t, cli.Env{}, append([]string{"seed", "slow:world", "--zoom", "0-2", "--threads", "2", "--every", "200ms"}, auth(a)...)...)
	if r.code != cli.ExitDone {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "slow:world: ") || !strings.Contains(r.stdout, "tiles/s") || !strings.Contains(r.stdout, "/42 tiles") {
		t.Errorf("progress lines: %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "slow:world: 42 of 42 tiles; 2 task(s) done, 0 aborted") {
		t.Errorf("summary: %q", r.stderr)
	}
	if got := len(a.TileKeys(t, "slow:world/")); got != 42 {
		t.Errorf("%d tiles stored, want 42", got)
	}
}

// TestAbortedSeedExitsNonZero: a seed whose tasks abort on tile failures
// exits 2.
func TestAbortedSeedExitsNonZero(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	r := runCLI(t, cli.Env{}, append([]string{"seed", "broken:world", "--zoom", "0-2", "--retries=-1", "--every", "100ms"}, auth(a)...)...)
	if r.code != cli.ExitAborted || !strings.Contains(r.stderr, "aborted") {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, cli.ExitAborted, r.stdout, r.stderr)
	}
}

// TestCredentialsAndErrors: credentials come from a netrc-style file; a
// refused login and a refused request exit 1 with the server's message,
// never showing the password.
func TestCredentialsAndErrors(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	netrc := filepath.Join(t.TempDir(), "netrc")
	os.WriteFile(netrc, []byte("# tilecache\nmachine example.org login x password y\nmachine 127.0.0.1\n  login "+apptest.User+"\n  password \""+apptest.Password+"\"\n"), 0o600)
	r := runCLI(t, cli.Env{}, "tasks", "--server", a.URL, "--netrc", netrc)
	if r.code != 0 || !strings.Contains(r.stdout, "processed") {
		t.Fatalf("tasks with netrc credentials: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, cli.Env{}, "tasks", "--server", a.URL, "--user", apptest.User, "--password", "wrong-secret-xyz")
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "401") || strings.Contains(r.stderr+r.stdout, "wrong-secret-xyz") {
		t.Errorf("wrong password: exit %d %q", r.code, r.stderr)
	}
	r = runCLI(t, cli.Env{}, append([]string{"seed", "demo:world", "--zoom", "0-2", "--retries", "1000"}, auth(a)...)...)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "400") || !strings.Contains(r.stderr, "tileFailureRetryCount") {
		t.Errorf("bad request: exit %d %q", r.code, r.stderr)
	}
	r = runCLI(t, cli.Env{}, append([]string{"seed", "demo:world", "--zoom", "3-1"}, auth(a)...)...)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "--zoom") {
		t.Errorf("bad --zoom: exit %d %q", r.code, r.stderr)
	}
}

// TestDryRunAndEstimate: --dry-run and estimate print the server's
// estimate; the total equals what the seed then processes.
func TestDryRunAndEstimate(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	r := runCLI(t, cli.Env{}, append([]string{"seed", "demo:world", "--gridset", "EPSG:4326", "--zoom", "0-3", "--dry-run"}, auth(a)...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "total") || !strings.Contains(r.stdout, "170") || !strings.Contains(r.stdout, "\nAWS cost under $0.01 ") {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	checkArtefacts(t, "dry run", r.stdout)
	if got := a.TileKeys(t, "demo:world/"); len(got) != 0 {
		t.Errorf("a dry run stored %d tiles", len(got))
	}
	r = runCLI(t, cli.Env{}, append([]string{"estimate", "demo:world", "--gridset", "EPSG:4326", "--zoom", "2", "--type", "truncate"}, auth(a)...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "TRUNCATE") || !strings.Contains(r.stdout, "S3 deletes 32") {
		t.Errorf("estimate truncate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestEstimateGeometry: --geometry restricts the request to the tiles the
// area meets, and the estimate says what that saves against its bounding
// box. A GeoJSON file and a WKT file of the same square say the same.
func TestEstimateGeometry(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	dir := t.TempDir()
	// A diamond inside the box 0..90, 0..90: at z2 (45° tiles) it meets
	// the 4 tiles of the box; at z3 (22.5°) 12 of the box's 16. The box
	// alone works whole 4×4 metatiles: 16 tiles at each level.
	geojson := filepath.Join(dir, "diamond.geojson")
	wkt := filepath.Join(dir, "diamond.wkt")
	os.WriteFile(geojson, []byte(`{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[45,0],[90,45],[45,90],[0,45],[45,0]]]}}`), 0o600)
	os.WriteFile(wkt, []byte("POLYGON((45 0,90 45,45 90,0 45,45 0))\n"), 0o600)
	for _, file := range []string{geojson, wkt} {
		r := runCLI(t, cli.Env{}, append([]string{"estimate", "demo:world", "--gridset", "EPSG:4326", "--zoom", "2-3", "--geometry", file}, auth(a)...)...)
		checkArtefacts(t, "estimate --geometry", r.stdout)
		if r.code != 0 || !strings.Contains(r.stdout, "2      4          1\n") || !strings.Contains(r.stdout, "3     12          1\n") ||
			!strings.Contains(r.stdout, "the geometry takes 16 tiles, 50.0% of the 32 of its bounding box") {
			t.Errorf("estimate --geometry %s: exit %d\n%s%s", filepath.Base(file), r.code, r.stdout, r.stderr)
		}
	}
	r := runCLI(t, cli.Env{}, append([]string{"estimate", "demo:world", "--geometry", filepath.Join(dir, "missing.wkt")}, auth(a)...)...)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "missing.wkt") {
		t.Errorf("missing geometry file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestFreshServiceDryRun is a new user's first estimate: the tilecache
// binary asks a fresh `tilecache serve` of the bundled demo on the
// embedded backends (what `make run` starts) for z0-9 of the demo layer.
// No seed has measured the layer's render rate nor stored tiles, and the
// estimate says what that leaves unknown.
func TestFreshServiceDryRun(t *testing.T) {
	bin := apptest.PlainBinary(t)
	p := apptest.StartLocalProcess(t, bin, t.TempDir(), "", map[string]string{"TILECACHE_LAYERS": ""}) // the bundled demo
	cmd := exec.Command(bin, "seed", "demo:world", "--gridset", "EPSG:900913", "--zoom", "0-9", "--dry-run")
	cmd.Env = append(os.Environ(), "TILECACHE_URL="+p.URL, "TILECACHE_USER="+apptest.User, "TILECACHE_PASSWORD="+apptest.Password)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("tilecache seed --dry-run: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	want := lines(
		"SEED demo:world, grid set EPSG:900913, image/png: 1 task",
		"   zoom   tiles  metatiles",
		"      0       1          1",
		"      1       4          1",
		"      2      16          1",
		"      3      64          4",
		"      4     256         16",
		"      5    1024         64",
		"      6    4096        256",
		"      7   16384       1024",
		"      8   65536       4096",
		"      9  262144      16384",
		"  total  349525      21847",
		"upstream requests 0, S3 PUTs 349525, S3 reads 1, S3 listings 657, S3 deletes 0, DynamoDB writes 1058, SQS messages 1",
		bytesUnknown,
		timeUnknown,
		"AWS cost about $1.75 at list prices of 2026-11 without Lambda (S3 $1.75, DynamoDB under $0.01, SQS under $0.01)",
		lambdaUnknown,
		noteNoUpstream,
		noteUpperBounds,
		noteNoRate)
	checkArtefacts(t, "dry run", stdout.String())
	if stdout.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", stdout.String(), want)
	}
}

// TestInterrupt: Ctrl-C while following leaves the tasks running (exit
// 130) unless, on a terminal, the user answers y (exit 2, tasks killed).
func TestInterrupt(t *testing.T) {
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	for _, c := range []struct {
		terminal bool
		answer   string
		code     int
		running  bool
	}{
		{false, "", cli.ExitInterrupted, true},
		{true, "n\n", cli.ExitInterrupted, true},
		{true, "y\n", cli.ExitAborted, false},
	} {
		// Ctrl-C once the CLI follows the seed: at its first progress line.
		sig := make(chan os.Signal, 1)
		following := &printed{want: "tiles/s", seen: make(chan struct{})}
		go func() {
			select {
			case <-following.seen:
				sig <- os.Interrupt
			case <-t.Context().Done(): // the CLI ended without following
			}
		}()
		r := runCLI(t, cli.Env{Terminal: c.terminal, Stdin: strings.NewReader(c.answer), Interrupt: sig, Stdout: following},
			append([]string{"seed", "slow:world", "--zoom", "0-4", "--threads", "2", "--progress", "lines"}, auth(a)...)...)
		if r.code != c.code {
			t.Errorf("terminal %v answer %q: exit %d, want %d\n%s%s", c.terminal, c.answer, r.code, c.code, r.stdout, r.stderr)
		}
		if c.terminal && !strings.Contains(r.stdout, "Kill the 2 unfinished task(s) of slow:world") {
			t.Errorf("no question on the terminal: %q", r.stdout)
		}
		rows := runCLI(t, cli.Env{}, append([]string{"tasks", "slow:world"}, auth(a)...)...)
		if got := strings.Contains(rows.stdout, "RUNNING") || strings.Contains(rows.stdout, "PENDING"); got != c.running {
			t.Errorf("terminal %v answer %q: tasks still running %v, want %v:\n%s", c.terminal, c.answer, got, c.running, rows.stdout)
		}
		runCLI(t, cli.Env{}, append([]string{"kill", "slow:world"}, auth(a)...)...)
		select {
		case <-following.seen:
		default:
			t.Errorf("terminal %v answer %q: exit %d before following the seed", c.terminal, c.answer, r.code)
		}
	}
}

// printed closes seen when a write holds want.
type printed struct {
	want string
	seen chan struct{}
	once sync.Once
}

func (p *printed) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte(p.want)) {
		p.once.Do(func() { close(p.seen) })
	}
	return len(b), nil
}

// TestTileListFlag: --tiles sends an expiry list (gzipped) as a tile
// list; the estimate and the request work exactly the metatiles holding
// the listed tiles.
func TestTileListFlag(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	list := filepath.Join(t.TempDir(), "expire.list")
	// Two z5 tiles in two 4×4 metatiles, XYZ rows; parents at z4 add
	// two more metatiles.
	os.WriteFile(list, []byte("5/3/2\n5/30/30\n5/30/30\n"), 0o600)
	r := runCLI(t, cli.Env{}, append([]string{"estimate", "demo:world", "--gridset", "EPSG:900913", "--type", "truncate",
		"--tiles", list, "--xyz", "--parents-to", "4"}, auth(a)...)...)
	checkArtefacts(t, "estimate --tiles", r.stdout)
	if r.code != 0 || !strings.Contains(r.stdout, "4     32          2\n") || !strings.Contains(r.stdout, "5     32          2\n") {
		t.Fatalf("estimate --tiles: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, cli.Env{}, append([]string{"reseed", "demo:world", "--gridset", "EPSG:900913", "--tiles", list, "--xyz", "--progress", "lines"}, auth(a)...)...)
	if r.code != cli.ExitDone {
		t.Fatalf("reseed --tiles: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := len(a.TileKeys(t, "demo:world/EPSG:900913/png/default/5/")); got != 32 {
		t.Fatalf("reseed --tiles stored %d tiles, want the 32 of two metatiles", got)
	}
	r = runCLI(t, cli.Env{}, append([]string{"estimate", "demo:world", "--xyz"}, auth(a)...)...)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "need --tiles") {
		t.Fatalf("--xyz alone: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestToken: --token and TILECACHE_TOKEN send an API token (Bearer)
// instead of an account's credentials; a revoked token is refused (401).
func TestToken(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	res := a.Do(t, "POST", "/rest/tokens.json", `{"role":"viewer","lifetime":"1h"}`, "Content-Type", "application/json")
	var tok struct{ ID, Token string }
	if err := json.Unmarshal([]byte(res.Body), &tok); err != nil || res.Status != 201 {
		t.Fatalf("issue a token: %d %s", res.Status, res.Body)
	}
	r := runCLI(t, cli.Env{}, "tasks", "--server", a.URL, "--token", tok.Token, "--netrc", filepath.Join(t.TempDir(), "none"))
	if r.code != 0 || !strings.Contains(r.stdout, "processed") {
		t.Fatalf("tasks with --token: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	t.Setenv("TILECACHE_TOKEN", tok.Token)
	r = runCLI(t, cli.Env{}, "seed", "demo:world", "--zoom", "0", "--server", a.URL, "--netrc", filepath.Join(t.TempDir(), "none"))
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "403") || !strings.Contains(r.stderr, "token "+tok.ID) {
		t.Errorf("seed with a viewer's TILECACHE_TOKEN: exit %d %q; want 403 naming the token", r.code, r.stderr)
	}
	if res := a.Do(t, "DELETE", "/rest/tokens/"+tok.ID+".json", ""); res.Status != 204 {
		t.Fatalf("revoke: %d %s", res.Status, res.Body)
	}
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		r = runCLI(t, cli.Env{}, "tasks", "--server", a.URL, "--netrc", filepath.Join(t.TempDir(), "none"))
		if r.code == cli.ExitError && strings.Contains(r.stderr, "401") {
			break
		}
		if r.code != 0 || time.Since(start) > 5*time.Second {
			t.Fatalf("revoked token after %v: exit %d %q", time.Since(start), r.code, r.stderr)
		}
		<-tick.C
	}
}
