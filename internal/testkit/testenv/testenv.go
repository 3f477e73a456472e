// Package testenv gates tests that need the local AWS stack (MinIO, the
// DynamoDB- and SQS-compatible servers and moto_server for CloudFront, which
// `make devstack` starts) or the test WMS (MapServer behind lighttpd, which
// `make wms` starts).
//
// A test calls RequireS3 / RequireDynamoDB / RequireSQS / RequireCloudFront /
// RequireWMS. When the endpoint variable is unset the test is skipped with
// the reason, except when TILECACHE_REQUIRE_DEVSTACK=1 (set by `make test`,
// which starts both), where a missing endpoint fails the test: CI never
// skips silently. Under -short the tests skip.
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A service that tests need: what it is called in messages and the make
// target that starts it.
type service struct{ name, target string }

var (
	awsStack = service{"the local AWS stack", "devstack"}
	testWMS  = service{"the test WMS", "wms"}
)

func require(t testing.TB, variable, what string, s service) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("skipping %s test under -short", what)
	}
	v := os.Getenv(variable)
	if v != "" {
		return v
	}
	if os.Getenv("TILECACHE_REQUIRE_DEVSTACK") == "1" {
		t.Fatalf("%s is not set but TILECACHE_REQUIRE_DEVSTACK=1: %s did not start (run `make %s`)", variable, s.name, s.target)
	}
	t.Skipf("%s is not set: start %s with `eval \"$(make -s %s)\"` to run %s tests", variable, s.name, s.target, what)
	return ""
}

// RequireS3 returns the S3 endpoint URL (AWS_ENDPOINT_URL_S3) or skips.
func RequireS3(t testing.TB) string { return require(t, "AWS_ENDPOINT_URL_S3", "S3", awsStack) }

// RequireDynamoDB returns the DynamoDB endpoint URL or skips.
func RequireDynamoDB(t testing.TB) string {
	return require(t, "AWS_ENDPOINT_URL_DYNAMODB", "DynamoDB", awsStack)
}

// RequireSQS returns the SQS endpoint URL or skips.
func RequireSQS(t testing.TB) string { return require(t, "AWS_ENDPOINT_URL_SQS", "SQS", awsStack) }

// RequireCloudFront returns the CloudFront endpoint URL
// (AWS_ENDPOINT_URL_CLOUDFRONT, moto_server in the local AWS stack) and the
// id of the distribution the stack created (TILECACHE_CDN_DISTRIBUTION_ID),
// or skips, like RequireS3.
func RequireCloudFront(t testing.TB) (endpoint, distributionID string) {
	t.Helper()
	endpoint = require(t, "AWS_ENDPOINT_URL_CLOUDFRONT", "CloudFront", awsStack)
	return endpoint, require(t, "TILECACHE_CDN_DISTRIBUTION_ID", "CloudFront", awsStack)
}

// RequireWMS returns the URL of the test WMS (TILECACHE_WMS_URL, e.g.
// http://127.0.0.1:9340/wms, without a query) or skips, like RequireS3. The
// WMS is MapServer 8 behind lighttpd serving a synthetic EPSG:4326 dataset
// in WMS 1.1.1 and 1.3.0: layers hillshade, polygons, lines, points, sparse
// and styled (STYLES red or blue, and the extra parameter CLS=0..5); see
// infra/wms/README.md.
func RequireWMS(t testing.TB) string { return require(t, "TILECACHE_WMS_URL", "WMS", testWMS) }

var unsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// Name returns a resource name unique to this test run, built from prefix,
// the test's name and a random suffix, made of [a-z0-9-] and at most 63
// characters (valid for buckets, tables and queues alike).
func Name(t testing.TB, prefix string) string {
	b := make([]byte, 4)
	rand.Read(b)
	base := strings.Trim(unsafe.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	suffix := "-" + hex.EncodeToString(b)
	name := prefix + "-" + base
	if len(name)+len(suffix) > 63 {
		name = name[:63-len(suffix)]
	}
	return strings.TrimRight(name, "-") + suffix
}

// RequireJava returns the path of the java launcher (JDK 11 or later, for
// single-file source programs) or skips, like RequireS3: the test is skipped
// under -short, and when java is not on PATH it is skipped, or fails when
// TILECACHE_REQUIRE_DEVSTACK=1.
func RequireJava(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping Java test under -short")
	}
	path, err := exec.LookPath("java")
	if err == nil {
		return path
	}
	if os.Getenv("TILECACHE_REQUIRE_DEVSTACK") == "1" {
		t.Fatalf("java is not on PATH but TILECACHE_REQUIRE_DEVSTACK=1: install a JDK (17 or later)")
	}
	t.Skip("java is not on PATH: install a JDK (17 or later) to run the tests against java.util.Properties")
	return ""
}

// RequireGDAL returns the paths of GDAL's gdalinfo and gdal_translate (the
// Debian package gdal-bin) or skips, like RequireJava: the test is skipped
// under -short, and when either program is not on PATH it is skipped, or
// fails when TILECACHE_REQUIRE_DEVSTACK=1.
func RequireGDAL(t testing.TB) (gdalinfo, gdalTranslate string) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping GDAL test under -short")
	}
	info, err := exec.LookPath("gdalinfo")
	if err == nil {
		if translate, err := exec.LookPath("gdal_translate"); err == nil {
			return info, translate
		}
	}
	if os.Getenv("TILECACHE_REQUIRE_DEVSTACK") == "1" {
		t.Fatalf("gdalinfo or gdal_translate is not on PATH but TILECACHE_REQUIRE_DEVSTACK=1: install GDAL (Debian package gdal-bin)")
	}
	t.Skip("gdalinfo or gdal_translate is not on PATH: install GDAL (Debian package gdal-bin) to run the tests with a real map client")
	return "", ""
}

// RequireChromium returns the path of a headless-capable Chromium
// ($TILECACHE_CHROMIUM, else /usr/bin/chromium from Debian's chromium
// package, which `make test` installs) or skips, like RequireS3: skipped
// under -short and when missing, failed when missing and
// TILECACHE_REQUIRE_DEVSTACK=1.
func RequireChromium(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping browser test under -short")
	}
	path := os.Getenv("TILECACHE_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err == nil {
		return path
	}
	if os.Getenv("TILECACHE_REQUIRE_DEVSTACK") == "1" {
		t.Fatalf("Chromium (%s) is missing but TILECACHE_REQUIRE_DEVSTACK=1: run infra/browser/install.sh", path)
	}
	t.Skipf("Chromium (%s) is missing: install it with infra/browser/install.sh to run browser tests", path)
	return ""
}

// RequireTmux returns the path of tmux (a real terminal whose screen tests
// read) or skips, like RequireChromium.
func RequireTmux(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping terminal test under -short")
	}
	if path, err := exec.LookPath("tmux"); err == nil {
		return path
	}
	if os.Getenv("TILECACHE_REQUIRE_DEVSTACK") == "1" {
		t.Fatalf("tmux is missing but TILECACHE_REQUIRE_DEVSTACK=1: run infra/browser/install.sh")
	}
	t.Skip("tmux is missing: install it with infra/browser/install.sh to run the terminal tests")
	return ""
}

// RequireOWSLib returns the Python that imports OWSLib (a real WMTS and
// OGC API client) or skips, like RequireChromium.
func RequireOWSLib(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping map client test under -short")
	}
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import owslib.wmts").Run(); err == nil {
		return python
	}
	if os.Getenv("TILECACHE_REQUIRE_DEVSTACK") == "1" {
		t.Fatalf("OWSLib is missing but TILECACHE_REQUIRE_DEVSTACK=1: run infra/browser/install.sh")
	}
	t.Skip("OWSLib is missing: install it with infra/browser/install.sh to run the WMTS client test")
	return ""
}

// RequireOpenLayers returns the directory holding OpenLayers' full build
// (ol.js and ol.css, from the npm package ol): $TILECACHE_OPENLAYERS, else
// the newest version infra/browser/install.sh put under
// ${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools/openlayers/. It skips
// like RequireChromium when there is none.
func RequireOpenLayers(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping browser test under -short")
	}
	dir := os.Getenv("TILECACHE_OPENLAYERS")
	if dir == "" {
		found, _ := filepath.Glob(filepath.Join(toolsCache(), "openlayers", "*", "ol.js"))
		if len(found) > 0 {
			dir = filepath.Dir(found[len(found)-1])
		}
	}
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "ol.js")); err == nil {
			return dir
		}
	}
	if os.Getenv("TILECACHE_REQUIRE_DEVSTACK") == "1" {
		t.Fatalf("OpenLayers (ol.js) is missing but TILECACHE_REQUIRE_DEVSTACK=1: run infra/browser/install.sh")
	}
	t.Skip("OpenLayers (ol.js) is missing: install it with infra/browser/install.sh to run the WMTS map page test")
	return ""
}

// toolsCache is where the project's scripts install their tools:
// ${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools.
func toolsCache() string {
	cache := os.Getenv("TILECACHE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "tilecache")
	}
	return filepath.Join(cache, "tools")
}

// PMTilesCLI is the path of go-pmtiles, the PMTiles format's reference
// command-line tool.
type PMTilesCLI string

// Run runs go-pmtiles with args (for at most 2 minutes) and returns what
// it wrote to stdout; a failure fails the test with its stderr.
func (c PMTilesCLI) Run(t testing.TB, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, string(c), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go-pmtiles %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// RequirePMTilesCLI returns go-pmtiles ($TILECACHE_PMTILES_CLI, else where
// infra/pmtiles-cli.sh installs it) or skips, like RequireChromium.
func RequirePMTilesCLI(t testing.TB) PMTilesCLI {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping go-pmtiles test under -short")
	}
	path := os.Getenv("TILECACHE_PMTILES_CLI")
	if path == "" {
		path = filepath.Join(toolsCache(), "bin", "go-pmtiles")
	}
	if _, err := exec.LookPath(path); err == nil {
		return PMTilesCLI(path)
	}
	const msg = "go-pmtiles (%s) is missing: run infra/pmtiles-cli.sh"
	if os.Getenv("TILECACHE_REQUIRE_DEVSTACK") == "1" {
		t.Fatalf(msg+" (TILECACHE_REQUIRE_DEVSTACK=1)", path)
	}
	t.Skipf(msg, path)
	return ""
}

// RequirePMTilesJS returns node and the pmtiles library's browser build
// (pmtiles.js): $TILECACHE_PMTILES_JS, else the newest version
// infra/browser/install.sh put under
// ${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools/pmtiles/. It skips when
// either is missing, and fails instead when TILECACHE_REQUIRE_DEVSTACK=1.
func RequirePMTilesJS(t testing.TB) (node, lib string) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping the JavaScript reader under -short")
	}
	lib = os.Getenv("TILECACHE_PMTILES_JS")
	if lib == "" {
		found, _ := filepath.Glob(filepath.Join(toolsCache(), "pmtiles", "*", "pmtiles.js"))
		if len(found) > 0 {
			lib = found[len(found)-1]
		}
	}
	node, err := exec.LookPath("node")
	if err == nil && lib != "" {
		if _, err = os.Stat(lib); err == nil {
			return node, lib
		}
	}
	const msg = "node and the pmtiles library (pmtiles.js) are needed: run infra/browser/install.sh"
	if os.Getenv("TILECACHE_REQUIRE_DEVSTACK") == "1" {
		t.Fatal(msg + " (TILECACHE_REQUIRE_DEVSTACK=1)")
	}
	t.Skip(msg)
	return "", ""
}

// Lookup returns a configuration lookup (config.Load's) that reads env,
// and for the AWS SDK's variables (AWS_*) not in env the process
// environment, where the local AWS stack's endpoints and credentials are:
// a test's program talks to the same stack as the test.
func Lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, true
		}
		if strings.HasPrefix(k, "AWS_") {
			return os.LookupEnv(k)
		}
		return "", false
	}
}

// RequireAxe returns the path of axe-core's axe.min.js: $TILECACHE_AXE,
// else the newest version infra/browser/install.sh put under
// ${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools/axe-core/. It skips
// like RequireOpenLayers when there is none.
func RequireAxe(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping browser test under -short")
	}
	p := os.Getenv("TILECACHE_AXE")
	if p == "" {
		found, _ := filepath.Glob(filepath.Join(toolsCache(), "axe-core", "*", "axe.min.js"))
		if len(found) > 0 {
			p = found[len(found)-1]
		}
	}
	if p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("TILECACHE_REQUIRE_DEVSTACK") == "1" {
		t.Fatalf("axe-core (axe.min.js) is missing but TILECACHE_REQUIRE_DEVSTACK=1: run infra/browser/install.sh")
	}
	t.Skip("axe-core (axe.min.js) is missing: install it with infra/browser/install.sh to run the console's accessibility test")
	return ""
}

// Label marks the calling goroutine, and every goroutine it starts from
// now on, with the test's name (pprof label "test"), so that a CPU profile
// of a whole package (go test -cpuprofile, read with `go tool pprof
// -tags`) tells each test's share of the CPU apart: where the time of
// `make test` goes. Call it from the test's own goroutine, before the
// program under test starts.
func Label(t testing.TB) {
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("test", t.Name())))
}

// WaitScale is how much the bound of every wait is stretched
// (TILECACHE_TEST_WAIT_SCALE, a whole number, default 1; `make test` sets
// 3): a wait's bound ends a stall, it is no speed figure, and a full test
// run shares two cores between every package and the race detector.
var WaitScale = sync.OnceValue(func() time.Duration {
	n, err := strconv.Atoi(os.Getenv("TILECACHE_TEST_WAIT_SCALE"))
	if err != nil || n < 1 {
		return 1
	}
	return time.Duration(n)
})

// Eventually waits until cond holds, failing the test after timeout
// (stretched by WaitScale) with what it waited for. It checks at once,
// then after pauses that start at 10 ms and grow by half each time to at
// most 200 ms: a short wait ends promptly, and a long one (a seed of
// thousands of tiles, each check a status list read from the task store)
// does not spend the CPU and the stack that the work waited for needs on
// checks 50 times a second.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	wait(t, timeout, what, cond, 10*time.Millisecond, func(p time.Duration) time.Duration { return min(p*3/2, 200*time.Millisecond) })
}

// EventuallyEvery is Eventually checking cond every interval: for a long
// wait whose checks are not free (a status list read from the task store
// through a fault proxy), so that they leave the stack to the work waited
// for.
func EventuallyEvery(t testing.TB, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	wait(t, timeout, what, cond, interval, func(p time.Duration) time.Duration { return p })
}

// wait checks cond at once and then after each pause, the first pause
// given and each next one made from the last by next, until cond holds or
// timeout (stretched by WaitScale) has passed.
func wait(t testing.TB, timeout time.Duration, what string, cond func() bool, pause time.Duration, next func(time.Duration) time.Duration) {
	t.Helper()
	timeout *= WaitScale()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(pause)
		pause = next(pause)
	}
}
