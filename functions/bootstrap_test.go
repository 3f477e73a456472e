package functions_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/testkit/lambdatest"
)

// figures reports whether the measuring tests should measure properly
// (TILECACHE_LAMBDA_FIGURES=1; run them without -race).
func figures() bool { return os.Getenv("TILECACHE_LAMBDA_FIGURES") == "1" }

func TestMain(m *testing.M) { lambdatest.Main(m) }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// functionEnv is the configuration of function fn (a template.yaml id) on
// the resources r: only ApiFunction has the accounts.
func functionEnv(t *testing.T, r lambdatest.Resources, fn string, extra map[string]string) map[string]string {
	env := lambdatest.Env(t, r, extra)
	if fn != "ApiFunction" {
		delete(env, "TILECACHE_ACCOUNTS")
	}
	return env
}

// hasLine reports whether a line of lines contains every one of substrs.
func hasLine(lines []string, substrs ...string) bool {
	return slices.ContainsFunc(lines, func(l string) bool {
		for _, s := range substrs {
			if !strings.Contains(l, s) {
				return false
			}
		}
		return true
	})
}

// TestBootstrapsColdStart runs each function's real bootstrap (main: config
// from the environment, lambda.Start) as Lambda would, under the Lambda
// Runtime Interface Emulator and on the local AWS stack, and checks its
// answer to one recorded event (a cold start), the emulator's report of
// the invocation and what the function logged. With
// TILECACHE_LAMBDA_FIGURES=1 it starts each five times and logs the median
// init (the emulator's INIT REPORT: process start to the first request
// for an invocation) and time to the first response (from the invocation
// request, so including the start of the process).
func TestBootstrapsColdStart(t *testing.T) {
	r := lambdatest.NewResources(t)
	lambdatest.RIEBinary(t)
	lambdatest.Bootstraps(t, slices.Collect(maps.Values(functionDirs))...)
	cases := []struct {
		fn, event string
		check     func(t *testing.T, inv lambdatest.Invocation)
	}{
		{"ApiFunction", "api/testdata/tasks-get.json", func(t *testing.T, inv lambdatest.Invocation) {
			var res events.APIGatewayV2HTTPResponse
			inv.Decode(t, &res)
			if res.StatusCode != 200 || res.Body != `{"long-array-array":[]}` || res.IsBase64Encoded {
				t.Errorf("response %s: want 200 with an empty task list", inv.Body)
			}
		}},
		{"WorkerFunction", "worker/testdata/sqs-batch-poison.json", func(t *testing.T, inv lambdatest.Invocation) {
			// Task 2 does not exist here: only the two poison messages come back.
			want := `{"batchItemFailures":[{"itemIdentifier":"c5d7e9f1-3a5b-4c7d-9e1f-2a4b6c8d0e2f"},{"itemIdentifier":"0e2f4a6b-8c0d-4e2f-a4b6-c8d0e2f4a6b8"}]}`
			if inv.Error != nil || string(inv.Body) != want {
				t.Errorf("response %s, want %s", inv.Body, want)
			}
			// The function's log (JSON, stdout) names each poison message.
			for _, id := range []string{"c5d7e9f1-3a5b-4c7d-9e1f-2a4b6c8d0e2f", "0e2f4a6b-8c0d-4e2f-a4b6-c8d0e2f4a6b8"} {
				if !hasLine(inv.Log, `"level":"ERROR"`, `"msg":"poison lane message"`, `"message_id":"`+id+`"`) {
					t.Errorf("no error logged for poison message %s", id)
				}
			}
		}},
		{"CleanerFunction", "cleaner/testdata/scheduled-event.json", func(t *testing.T, inv lambdatest.Invocation) {
			if inv.Error != nil || string(inv.Body) != "null" {
				t.Errorf("response %s, want null", inv.Body)
			}
		}},
		{"TileFunction", "tile/testdata/not-rendered.json", func(t *testing.T, inv lambdatest.Invocation) {
			var res events.LambdaFunctionURLResponse
			inv.Decode(t, &res)
			if res.StatusCode != 404 || res.IsBase64Encoded || res.Body != "Tile not found: /demo:world/EPSG:4326/png/default/2/5/2.png\n" {
				t.Errorf("response %s: want a 404 text answer (demo:world does not render on miss)", inv.Body)
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
			bin := lambdatest.Bootstrap(t, functionDirs[c.fn])
			var inits, firsts []time.Duration
			for range n {
				rie := lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: bin, Name: "tilecache-" + c.fn, Env: functionEnv(t, r, c.fn, nil)})
				inv := rie.Invoke(t, event)
				if inv.Status != 200 || inv.Error != nil {
					t.Fatalf("invocation: %d %s; log:\n%s", inv.Status, inv.Body, strings.Join(inv.Log, "\n"))
				}
				if inv.Init <= 0 || !hasLine(inv.Log, "REPORT RequestId: "+inv.RequestID) {
					t.Errorf("no init or no report of a cold start; log:\n%s", strings.Join(inv.Log, "\n"))
				}
				if c.fn != "WorkerFunction" && hasLine(inv.Log, `"level":"ERROR"`) {
					t.Errorf("the function logged an error:\n%s", strings.Join(inv.Log, "\n"))
				}
				c.check(t, inv)
				inits, firsts = append(inits, inv.Init), append(firsts, inv.Elapsed)
			}
			info, err := os.Stat(bin)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (linux/%s, %d bytes): median of %d cold starts under the RIE %s: init %v, first response %v (all: %v)",
				c.fn, runtime.GOARCH, info.Size(), n, lambdatest.RIEVersion(), median(inits).Round(10*time.Microsecond), median(firsts).Round(10*time.Microsecond), firsts)
		})
	}
}

// TestBootstrapsInitError starts each function's bootstrap with a
// configuration it rejects, under the emulator: main logs why and exits
// non-zero before lambda.Start, and the emulator reports the invocation as
// failed (502, Runtime.ExitError), as Lambda reports an init error. It
// needs no AWS resources.
func TestBootstrapsInitError(t *testing.T) {
	lambdatest.RIEBinary(t)
	lambdatest.Bootstraps(t, slices.Collect(maps.Values(functionDirs))...)
	for _, fn := range slices.Sorted(maps.Keys(functionDirs)) {
		t.Run(fn, func(t *testing.T) {
			rie := lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: lambdatest.Bootstrap(t, functionDirs[fn]), Name: "tilecache-" + fn,
				Env: map[string]string{"TILECACHE_BACKEND": "bogus"}})
			inv := rie.Invoke(t, []byte(`{}`))
			if inv.Status != 502 || !hasLine(inv.Log, "configuration", "TILECACHE_BACKEND", "bogus") || !hasLine(inv.Log, "Runtime.ExitError") {
				t.Errorf("got %d %q, log:\n%s\nwant 502 with the configuration error and Runtime.ExitError", inv.Status, inv.Body, strings.Join(inv.Log, "\n"))
			}
		})
	}
}

// TestWorkerThroughput measures the tiles per second one lane gets through
// the worker's bootstrap (HandleSQS, no race detector) under the Lambda
// Runtime Interface Emulator on the local stack, and extrapolates to a
// worker invocation of each allowed WorkerTimeout (HandleSQS works until
// SafetyMargin before the deadline). Only with TILECACHE_LAMBDA_FIGURES=1.
func TestWorkerThroughput(t *testing.T) {
	if !figures() {
		t.Skip("a measurement: set TILECACHE_LAMBDA_FIGURES=1 (and leave out -race) to run it")
	}
	r := lambdatest.NewResources(t)
	settings := map[string]string{"TILECACHE_SEED_THREADS": "1", "TILECACHE_LANE_SLICE": "1h",
		"TILECACHE_CHECKPOINT_INTERVAL": "5s", "TILECACHE_KILL_CHECK_INTERVAL": "1s"} // the template's values
	env := lambdatest.Env(t, r, settings)
	api := lambdatest.API(t, env)       // submits the seed request
	worker := lambdatest.Worker(t, env) // reads the task; never invoked
	ids := submit(t, api, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":9,"format":"image/png"}}`)
	work := 20 * time.Second
	margin := worker.Engine.Options().SafetyMargin
	fn := lambdatest.StartRIE(t, lambdatest.Function{Bootstrap: lambdatest.Bootstrap(t, "worker"), Name: "tilecache-WorkerFunction",
		Env: functionEnv(t, r, "WorkerFunction", settings), Timeout: margin + work})
	var none events.SQSEventResponse
	fn.InvokeJSON(t, events.SQSEvent{Records: []events.SQSMessage{}}, &none) // the cold start, not measured
	src := &lambdatest.EventSource{Client: lambdatest.SQS(t), QueueURL: r.QueueURL, QueueArn: r.QueueArn(), Timeout: margin + work}
	t0 := time.Now()
	if src.Poll(t, fn.SQSHandler()) != 1 {
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
