package lambdatest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The Lambda Runtime Interface Emulator (RIE) is AWS's implementation of
// the Lambda Runtime API for running functions outside Lambda (the AWS base
// images, provided.al2023 among them, carry it). Its main package is a
// tool dependency of go.mod (`go get -tool`), so that its version and
// checksums are pinned with the project's other modules and it builds from
// the Go module proxy alone.
const riePackage = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"

// rieModule is the module riePackage belongs to.
const rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator"

// unavailable skips the test, saying why, or fails it when
// TILECACHE_REQUIRE_DEVSTACK=1 (make test, CI): there a tool that cannot be
// had is an error, never a silent skip.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("TILECACHE_REQUIRE_DEVSTACK") == "1" {
		t.Fatalf("TILECACHE_REQUIRE_DEVSTACK=1, and %s", msg)
	}
	t.Skip(msg)
}

var rieBuild struct {
	once    sync.Once
	path    string
	version string
	took    time.Duration // the build, when this test binary made it
	err     error
	logged  sync.Once
}

// RIEBinary returns the path of the aws-lambda-rie binary of the version
// go.mod pins, building it the first time a test on this machine needs it
// and caching it under $TILECACHE_CACHE/tools/bin (default
// ~/.cache/tilecache, as infra/devstack caches MinIO); later test binaries
// reuse it. The cached binary's name carries the RIE version and a digest
// of everything it was built from (the module versions of its packages,
// the Go version, the platform), so that a change of any of them builds
// anew. When it cannot be built the test is skipped with the reason, or
// fails under TILECACHE_REQUIRE_DEVSTACK=1. Under -short the test skips.
func RIEBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping a test of the bootstraps under the Lambda Runtime Interface Emulator under -short")
	}
	if runtime.GOOS != "linux" {
		unavailable(t, "the Lambda Runtime Interface Emulator runs on Linux only, not on %s", runtime.GOOS)
	}
	rieBuild.once.Do(func() { rieBuild.path, rieBuild.version, rieBuild.took, rieBuild.err = buildRIE() })
	if rieBuild.err != nil {
		unavailable(t, "the Lambda Runtime Interface Emulator (%s) could not be built: %v", riePackage, rieBuild.err)
	}
	if rieBuild.took > 0 {
		rieBuild.logged.Do(func() {
			t.Logf("built the Lambda Runtime Interface Emulator %s in %v: %s", rieBuild.version, rieBuild.took.Round(time.Millisecond), rieBuild.path)
		})
	}
	return rieBuild.path
}

// RIEVersion is the module version of the RIE that RIEBinary returned.
func RIEVersion() string { return rieBuild.version }

// cacheDir is where the project's tools are cached (infra/devstack/lib.sh).
func cacheDir() string {
	if dir := os.Getenv("TILECACHE_CACHE"); dir != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			return abs
		}
		return dir
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache", "tilecache")
	}
	return filepath.Join(os.TempDir(), "tilecache-cache")
}

// goCommand runs the go command with this process's environment plus env
// and returns its standard output.
func goCommand(env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// buildRIE builds riePackage into the tool cache unless a build of the same
// inputs is there, and returns its path, the RIE's module version and how
// long it took when it built (zero when cached), modules downloads included.
func buildRIE() (path, version string, took time.Duration, err error) {
	start := time.Now()
	hostEnv := []string{"CGO_ENABLED=0", "GOOS=" + runtime.GOOS, "GOARCH=" + runtime.GOARCH}
	// The build's inputs, as the module graph of this module resolves them.
	deps, err := goCommand(hostEnv, "list", "-deps", "-f", "{{with .Module}}{{.Path}}@{{.Version}}{{end}}", riePackage)
	if err != nil {
		return "", "", 0, err
	}
	goVersion, err := goCommand(nil, "env", "GOVERSION")
	if err != nil {
		return "", "", 0, err
	}
	seen := map[string]bool{}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s\n", strings.TrimSpace(string(goVersion)), runtime.GOOS, runtime.GOARCH)
	for line := range strings.Lines(string(deps)) {
		line = strings.TrimSpace(line)
		if line == "" || seen[line] {
			continue
		}
		seen[line] = true
		fmt.Fprintln(h, line)
		if v, ok := strings.CutPrefix(line, rieModule+"@"); ok {
			version = v
		}
	}
	if version == "" {
		return "", "", 0, fmt.Errorf("go list -deps %s: no version of %s (is it a tool of go.mod?)", riePackage, rieModule)
	}
	dir := filepath.Join(cacheDir(), "tools", "bin")
	path = filepath.Join(dir, "aws-lambda-rie@"+version+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	if executable(path) {
		return path, version, 0, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", 0, err
	}
	// Test binaries run in parallel: one builds, the others wait for it.
	unlock, err := lockFile(filepath.Join(dir, ".aws-lambda-rie.lock"))
	if err != nil {
		return "", "", 0, err
	}
	defer unlock()
	if executable(path) {
		return path, version, 0, nil
	}
	tmp, err := os.MkdirTemp(dir, ".aws-lambda-rie-build-")
	if err != nil {
		return "", "", 0, err
	}
	defer os.RemoveAll(tmp)
	if _, err := goCommand(hostEnv, "build", "-trimpath", "-o", filepath.Join(tmp, "aws-lambda-rie"), riePackage); err != nil {
		return "", "", 0, err
	}
	took = time.Since(start)
	if err := os.Rename(filepath.Join(tmp, "aws-lambda-rie"), path); err != nil {
		return "", "", 0, err
	}
	return path, version, took, nil
}

// lockFile takes an exclusive lock on the file at path (created if
// missing), waiting for it, and returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func executable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
}

var (
	bootstrapsMu sync.Mutex
	bootstrapDir string                // the builds of this test binary
	bootstraps   = map[string]string{} // package path → bootstrap built
)

// Bootstrap builds the bootstrap of functions/<dir> (api, worker, cleaner,
// tile) as the build-<Function> targets of the Makefile do, but for this
// machine's architecture and without -trimpath (so that it reuses the
// packages the test build compiled: the binary differs from the deployed
// one only in file paths), once per test binary, and returns its path. A
// package whose tests call it removes the builds in TestMain with Main.
func Bootstrap(t testing.TB, dir string) string {
	t.Helper()
	return Bootstraps(t, dir)[0]
}

// Bootstraps is Bootstrap of several functions, built by one go build (which
// compiles and links them in parallel).
func Bootstraps(t testing.TB, dirs ...string) []string {
	t.Helper()
	pkgs := make([]string, len(dirs))
	for i, dir := range dirs {
		pkgs[i] = "tilecache/functions/" + dir
	}
	return buildBootstraps(t, pkgs...)
}

// buildBootstraps builds the main packages pkgs (whose last elements
// differ) as bootstraps, each once per test binary, and returns their
// paths in order.
func buildBootstraps(t testing.TB, pkgs ...string) []string {
	t.Helper()
	bootstrapsMu.Lock()
	defer bootstrapsMu.Unlock()
	if bootstrapDir == "" {
		dir, err := os.MkdirTemp("", "tilecache-bootstraps-")
		if err != nil {
			t.Fatal(err)
		}
		bootstrapDir = dir
	}
	var todo []string
	for _, pkg := range pkgs {
		if bootstraps[pkg] == "" && !slices.Contains(todo, pkg) {
			todo = append(todo, pkg)
		}
	}
	if len(todo) > 0 {
		out, err := os.MkdirTemp(bootstrapDir, "build-")
		if err != nil {
			t.Fatal(err)
		}
		// Test binaries of several packages build bootstraps at the same
		// time, and go commands share the build cache but not the work in
		// progress: on a cold cache each compiled the same packages (the
		// SQLite translation among them) at once. One builds at a time
		// across processes; the others then find its packages in the cache.
		unlock, err := lockFile(filepath.Join(os.TempDir(), "tilecache-bootstraps-build.lock"))
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		args := []string{"build", "-ldflags", "-s -w", "-tags", "lambda.norpc", "-o", out + string(filepath.Separator)}
		if _, err := goCommand([]string{"GOOS=linux", "GOARCH=" + runtime.GOARCH, "CGO_ENABLED=0"}, append(args, todo...)...); err != nil {
			t.Fatalf("build the bootstraps: %v", err)
		}
		for _, pkg := range todo {
			path := filepath.Join(bootstrapDir, strings.ReplaceAll(pkg, "/", "_"), "bootstrap")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(out, pkg[strings.LastIndexByte(pkg, '/')+1:]), path); err != nil {
				t.Fatalf("build the bootstrap of %s: %v", pkg, err)
			}
			bootstraps[pkg] = path
		}
		os.Remove(out)
	}
	paths := make([]string, len(pkgs))
	for i, pkg := range pkgs {
		paths[i] = bootstraps[pkg]
	}
	return paths
}

// Main runs the tests of m and then removes the bootstraps they built; call
// it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	bootstrapsMu.Lock()
	if bootstrapDir != "" {
		if err := os.RemoveAll(bootstrapDir); err != nil {
			fmt.Fprintln(os.Stderr, "lambdatest:", err)
		}
	}
	bootstrapsMu.Unlock()
	os.Exit(code)
}
