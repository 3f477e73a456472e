package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/lambdatest"
)

// figures reports whether the measuring tests should measure properly
// (TILECACHE_LAMBDA_FIGURES=1; run them without -race).
func figures() bool { return os.Getenv("TILECACHE_LAMBDA_FIGURES") == "1" }

var (
	bootstrapOnce sync.Once
	bootstrapDir  string
	bootstrapErr  error
)

// bootstraps builds the three functions as the build-<Function> targets do,
// but for this machine's architecture, once per test binary, and returns
// the directory holding them (named api, worker, cleaner).
func bootstraps(t *testing.T) string {
	t.Helper()
	bootstrapOnce.Do(func() {
		bootstrapDir, bootstrapErr = os.MkdirTemp("", "tilecache-bootstraps-")
		if bootstrapErr != nil {
			return
		}
		// One go build for the three (it compiles in parallel), without
		// -trimpath so that it reuses the packages `go build ./...` compiled:
		// the binaries differ from the deployed ones only in file paths.
		args := []string{"build", "-ldflags", "-s -w", "-tags", "lambda.norpc", "-o", bootstrapDir + "/"}
		for _, dir := range functionDirs {
			args = append(args, "./"+dir)
		}
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			bootstrapErr = fmt.Errorf("go build: %w: %s", err, out)
		}
	})
	if bootstrapErr != nil {
		t.Fatal(bootstrapErr)
	}
	return bootstrapDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bootstrapDir != "" {
		os.RemoveAll(bootstrapDir)
	}
	os.Exit(code)
}

// start is one cold start of a bootstrap.
type start struct {
	init, first time.Duration // process start to the first /next; to the posted response
	result      lambdatest.RuntimeResult
	log         string
}

// coldStart starts bin with env against a fake Runtime API holding event,
// waits for its answer and kills it.
func coldStart(t *testing.T, bin string, env []string, event []byte) start {
	t.Helper()
	api := lambdatest.NewRuntimeAPI(t, event, time.Minute)
	cmd := exec.Command(bin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(env, "AWS_LAMBDA_RUNTIME_API="+api.Addr)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var s start
	timeout := time.After(30 * time.Second)
	for s.result.Kind == "" {
		select {
		case at := <-api.Next:
			s.init = at.Sub(t0)
		case s.result = <-api.Result:
			s.first = s.result.At.Sub(t0)
		case <-timeout:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%s: no answer within 30 s; output:\n%s", bin, out.String())
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	s.log = out.String()
	return s
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestBootstrapsColdStart runs each function's real bootstrap (main: config
// from the environment, lambda.Start) as Lambda would, against a fake
// Runtime API and the local AWS stack, and checks its answer to one
// recorded event. With TILECACHE_LAMBDA_FIGURES=1 it starts each five times
// and logs the median time from process start to the end of init (first
// GET /next) and to the first response.
func TestBootstrapsColdStart(t *testing.T) {
	r := lambdatest.NewResources(t)
	dir := bootstraps(t)
	base := []string{"AWS_LAMBDA_FUNCTION_VERSION=$LATEST", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512", "_HANDLER=bootstrap", "TZ=:UTC"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TILECACHE_") {
			base = append(base, kv)
		}
	}
	cases := []struct {
		fn, event string
		check     func(t *testing.T, body []byte)
	}{
		{"ApiFunction", "api/testdata/tasks-get.json", func(t *testing.T, body []byte) {
			var res events.APIGatewayV2HTTPResponse
			if err := json.Unmarshal(body, &res); err != nil || res.StatusCode != 200 || res.Body != `{"long-array-array":[]}` || res.IsBase64Encoded {
				t.Errorf("response %s (%v): want 200 with an empty task list", body, err)
			}
		}},
		{"WorkerFunction", "worker/testdata/sqs-batch-poison.json", func(t *testing.T, body []byte) {
			// Task 2 does not exist here: only the two poison messages come back.
			want := `{"batchItemFailures":[{"itemIdentifier":"c5d7e9f1-3a5b-4c7d-9e1f-2a4b6c8d0e2f"},{"itemIdentifier":"0e2f4a6b-8c0d-4e2f-a4b6-c8d0e2f4a6b8"}]}`
			if string(body) != want {
				t.Errorf("response %s, want %s", body, want)
			}
		}},
		{"CleanerFunction", "cleaner/testdata/scheduled-event.json", func(t *testing.T, body []byte) {
			if string(body) != "null" {
				t.Errorf("response %s, want null", body)
			}
		}},
		{"TileFunction", "tile/testdata/not-rendered.json", func(t *testing.T, body []byte) {
			var res events.LambdaFunctionURLResponse
			if err := json.Unmarshal(body, &res); err != nil || res.StatusCode != 404 || res.IsBase64Encoded ||
				res.Body != "Tile not found: /demo:world/EPSG:4326/png/default/2/5/2.png\n" {
				t.Errorf("response %s (%v): want a 404 text answer (demo:world does not render on miss)", body, err)
			}
		}},
	}
	n := 1
	if figures() {
		n = 5
	}
	for _, c := range cases {
		t.Run(c.fn, func(t *testing.T) {
			event, err := os.ReadFile(c.event)
			if err != nil {
				t.Fatal(err)
			}
			env := slices.Clone(base)
			for k, v := range lambdatest.Env(t, r, nil) {
				if k != "TILECACHE_ACCOUNTS" || c.fn == "ApiFunction" {
					env = append(env, k+"="+v)
				}
			}
			env = append(env, "AWS_LAMBDA_FUNCTION_NAME=tilecache-"+c.fn)
			var inits, firsts []time.Duration
			for range n {
				s := coldStart(t, filepath.Join(dir, functionDirs[c.fn]), env, event)
				if s.result.Kind != "response" {
					t.Fatalf("posted %s %s; output:\n%s", s.result.Kind, s.result.Body, s.log)
				}
				c.check(t, s.result.Body)
				inits, firsts = append(inits, s.init), append(firsts, s.first)
			}
			info, err := os.Stat(filepath.Join(dir, functionDirs[c.fn]))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (linux/%s, %d bytes): median of %d cold starts: init %v, first response %v (all: %v)",
				c.fn, runtime.GOARCH, info.Size(), n, median(inits).Round(10*time.Microsecond), median(firsts).Round(10*time.Microsecond), firsts)
		})
	}
}

// TestWorkerThroughput measures the tiles per second one lane gets through
// HandleSQS on the local stack and extrapolates to a worker invocation of
// each allowed WorkerTimeout (HandleSQS works until SafetyMargin before the
// deadline). Only with TILECACHE_LAMBDA_FIGURES=1; run it without -race.
func TestWorkerThroughput(t *testing.T) {
	if !figures() {
		t.Skip("a measurement: set TILECACHE_LAMBDA_FIGURES=1 (and leave out -race) to run it")
	}
	r := lambdatest.NewResources(t)
	env := lambdatest.Env(t, r, map[string]string{"TILECACHE_SEED_THREADS": "1", "TILECACHE_LANE_SLICE": "1h",
		"TILECACHE_CHECKPOINT_INTERVAL": "5s", "TILECACHE_KILL_CHECK_INTERVAL": "1s"}) // the template's values
	api := lambdatest.API(t, env)
	worker := lambdatest.Worker(t, env)
	ids := submit(t, api, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":9,"format":"image/png"}}`)
	work := 20 * time.Second
	margin := worker.Engine.Options().SafetyMargin
	src := &lambdatest.EventSource{Client: lambdatest.SQS(t), QueueURL: r.QueueURL, QueueArn: r.QueueArn(), Timeout: margin + work}
	t0 := time.Now()
	if src.Poll(t, worker.HandleSQS) != 1 {
		t.Fatal("no lane message")
	}
	elapsed := time.Since(t0)
	tk, err := worker.Tasks.Get(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	rate := float64(tk.Done) / elapsed.Seconds()
	t.Logf("one lane, one invocation of %v (%v of work): %d tiles (%d of %d metatiles) in %v = %.0f tiles/s",
		src.Timeout, work, tk.Done, tk.Cursor-tk.Start, tk.End-tk.Start, elapsed.Round(time.Millisecond), rate)
	tp := loadTemplate(t)
	for _, timeout := range workerTimeouts(tp) {
		var s int
		fmt.Sscan(timeout, &s)
		budget := time.Duration(s)*time.Second - margin
		t.Logf("WorkerTimeout %4ss: %v of work per invocation ≈ %.0f tiles (extrapolated)", timeout, budget, rate*budget.Seconds())
	}
}
