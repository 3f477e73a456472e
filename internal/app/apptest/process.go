package apptest

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A build of cmd/tilecache, made once per test binary.
type build struct {
	once sync.Once
	path string
	err  error
}

var raceBuild, plainBuild build

// binary builds cmd/tilecache with flags (once) and returns its path.
func (b *build) binary(t testing.TB, flags ...string) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "tilecache-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "tilecache")
		args := append(append([]string{"build"}, flags...), "-o", b.path, "tilecache/cmd/tilecache")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%w: %s", err, out)
		}
	})
	if b.err != nil {
		t.Fatalf("build tilecache: %v", b.err)
	}
	return b.path
}

// PlainBinary builds cmd/tilecache once per test binary without the race
// detector (which multiplies memory use), for measurements.
func PlainBinary(t testing.TB) string { t.Helper(); return plainBuild.binary(t, "-ldflags=-s -w") }

// Binary builds cmd/tilecache once per test binary and returns its path.
// Without DWARF tables (-s -w): stack traces and race reports read the Go
// symbol table, and linking goes twice as fast.
func Binary(t testing.TB) string { t.Helper(); return raceBuild.binary(t, "-race", "-ldflags=-s -w") }

// Process is a `tilecache serve` process on the AWS backend.
type Process struct {
	URL string
	cmd *exec.Cmd
	mu  sync.Mutex
	log []string
	out sync.WaitGroup
}

// StartProcess starts `tilecache serve` on the AWS resources recorded in
// dataDir (created on first use, shared by every process given the same
// dataDir), with extra TILECACHE_* settings, and waits until it answers.
// The process is killed when the test ends.
func StartProcess(t testing.TB, dataDir string, extra map[string]string) *Process {
	t.Helper()
	bin := Binary(t)
	awsVars, _ := awsEnv(t, dataDir)
	env := processFiles(t, dataDir, Layers)
	maps.Copy(env, map[string]string{
		"TILECACHE_SEED_THREADS": "2", "TILECACHE_CHECKPOINT_INTERVAL": CheckpointInterval, "TILECACHE_KILL_CHECK_INTERVAL": KillCheckInterval, "TILECACHE_LANE_SLICE": "1s",
		"TILECACHE_LOG_LEVEL": "debug",
	})
	maps.Copy(env, awsVars)
	maps.Copy(env, extra)
	return startProcess(t, bin, env)
}

// StartLocalProcess starts `tilecache serve` of binary bin on the embedded
// backend in dataDir, with the given layer file content and extra
// TILECACHE_* settings, and waits until it answers. The process is killed
// when the test ends.
func StartLocalProcess(t testing.TB, bin, dataDir, layers string, extra map[string]string) *Process {
	t.Helper()
	env := processFiles(t, dataDir, layers)
	env["TILECACHE_BACKEND"], env["TILECACHE_CDN_DISTRIBUTION_ID"] = "embedded", ""
	maps.Copy(env, extra)
	return startProcess(t, bin, env)
}

// processFiles writes the layer file and (once) the accounts file of a
// process into dataDir and returns the settings naming them, with
// UpstreamAllow.
func processFiles(t testing.TB, dataDir, layers string) map[string]string {
	t.Helper()
	lf := filepath.Join(dataDir, "layers.yaml")
	if err := os.WriteFile(lf, []byte(layers), 0o644); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dataDir, "users")
	writeAccounts(t, users)
	return map[string]string{"TILECACHE_LAYERS": lf, "TILECACHE_USERS": users, "TILECACHE_DATA": dataDir,
		"TILECACHE_UPSTREAM_ALLOW": UpstreamAllow}
}

// startProcess runs bin serve on a free loopback port with env added to
// this process's environment.
func startProcess(t testing.TB, bin string, vars map[string]string) *Process {
	t.Helper()
	addr := freeAddr(t)
	env := os.Environ()
	vars["TILECACHE_ADDR"] = addr
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{URL: "http://" + addr, cmd: cmd}
	p.out.Go(func() { p.collect(stdout) })
	t.Cleanup(func() { p.Kill() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(p.URL + "/rest/seed.json")
		if err == nil {
			res.Body.Close()
			return p
		}
		if time.Now().After(deadline) {
			p.Kill()
			t.Fatalf("tilecache serve did not answer within 30 s:\n%s", strings.Join(p.Log(), "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *Process) collect(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p.mu.Lock()
		p.log = append(p.log, sc.Text())
		p.mu.Unlock()
	}
}

// Log returns the process's output lines so far.
func (p *Process) Log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

// Kill kills the process with SIGKILL (no clean-up of any kind) and waits
// for it. It is idempotent.
func (p *Process) Kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
		p.out.Wait()
	}
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// App returns a client view of the process for a.Do-style requests.
func (p *Process) App() *App { return &App{URL: p.URL} }

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
