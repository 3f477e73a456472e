package app_test

// The fault-injection suite: one tilecache process on the local AWS stack,
// its S3, DynamoDB and SQS reached through proxies (internal/testkit/faultproxy)
// that throttle writes, fail some with server errors, reset connections
// and drop the answers of writes they applied — at fixed rates from fixed
// seeds. A seed a quarter the size (z0-5) is run without faults first, for
// the time ratio: its time per tile is what the seed under faults is held
// to.

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/faultproxy"
	"tilecache/internal/testkit/testenv"
)

const faultLayers = `
layers:
  - name: faults:calm
    gridSubsets:
      - gridSet: EPSG:900913
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: testpattern}
  - name: faults:storm
    gridSubsets:
      - gridSet: EPSG:900913
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: testpattern}
`

// faultRates are the mix: of writes, 8 % throttled, 2 % failed
// with a server error, 2 % answered and then cut; of every request, 2 %
// reset before an answer.
var faultRates = faultproxy.Config{ThrottleRate: 0.08, ServerErrorRate: 0.02, ResetRate: 0.02, DropAnswerRate: 0.02, Disabled: true}

// faultServices are the services the fault suite reaches through a proxy
// each: the environment variable of the endpoint, the service, the seed
// of its faults.
var faultServices = []struct {
	env     string
	service faultproxy.Service
	seed    uint64
}{
	{"AWS_ENDPOINT_URL_S3", faultproxy.S3, 11},
	{"AWS_ENDPOINT_URL_DYNAMODB", faultproxy.DynamoDB, 12},
	{"AWS_ENDPOINT_URL_SQS", faultproxy.SQS, 13},
}

// startFaultProxies starts a proxy (faults off) in front of each of
// faultServices, closed when the test ends, and returns them in that order
// with the program's settings that make its endpoints the proxies (through
// its configuration, not the process's environment, so tests run beside
// it).
func startFaultProxies(t *testing.T) ([]*faultproxy.Proxy, map[string]string) {
	t.Helper()
	var proxies []*faultproxy.Proxy
	env := map[string]string{"TILECACHE_KILL_CHECK_INTERVAL": "1s"}
	for _, s := range faultServices {
		target := os.Getenv(s.env)
		if target == "" {
			t.Fatalf("%s is not set: the local AWS stack is needed", s.env)
		}
		cfg := faultRates
		cfg.Seed = s.seed
		p, err := faultproxy.New(target, s.service, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		env[s.env] = p.URL()
		proxies = append(proxies, p)
	}
	return proxies, env
}

func TestSeedUnderCloudFaults(t *testing.T) {
	t.Parallel()
	if !apptest.AWSPass() {
		t.Skip("the fault suite runs in the AWS backend pass (TILECACHE_TEST_BACKEND=aws)")
	}
	proxies, env := startFaultProxies(t)
	logs := &apptest.LogBuffer{}
	const lanes = 8
	// Checkpoints every 2 s: a lease lapses after 5 of them (10 s), far
	// beyond a write's retries here, so that only a write mistaken for a
	// lost race (what this suite looks for) could lose one. Lanes read
	// their tasks every second, the program's default, not every 100 ms as
	// in the other tests (which check that kills stop lanes promptly): the
	// reads compete with the seed for the task store, and at 100 ms they
	// made it about twice as slow.
	a := apptest.Start(t, apptest.Options{Layers: faultLayers, Backend: "aws", SeedThreads: lanes,
		Checkpoint: 2 * time.Second, Slice: 20 * time.Second, StaleAfter: 2 * time.Minute, Log: logs,
		Env: env})
	waitSettled(t, a) // usage counted from the start

	unavailable := 0 // status reads answered 503
	seed := func(layer string, zoomStop int) (time.Duration, []task.Task) {
		t.Helper()
		return seedUnderFaults(t, a, layer, zoomStop, lanes, &unavailable)
	}
	// The seed under faults covers z0-6 (5,461 tiles, some 6,700 writes
	// to S3): about a thousand faults injected, of every kind on every
	// service. z0-7, four times the tiles and the time (130 s of the
	// test's 160 s on a loaded 2-core machine; the AWS pass's longest
	// test), repeated the same faults four times as often.
	const want = 5461 // EPSG:900913 z0-6
	// The seed without faults covers z0-5, a quarter of the tiles: a
	// seed's time grows with its tiles (renders and writes; measured, it is
	// no faster without the proxies in between), so its time scaled by the
	// tile ratio stands for a z0-6 seed's, at a quarter of the cost (its
	// fixed costs scaled along leave the bound a little looser).
	const wantCalm = 1365 // EPSG:900913 z0-5
	calmSmall, calmTasks := seed("faults:calm", 5)
	var calmTiles int64
	for _, tk := range calmTasks {
		calmTiles += tk.Done
	}
	if calmTiles != wantCalm {
		t.Errorf("the seed without faults did %d tiles, want %d", calmTiles, wantCalm)
	}
	calm := calmSmall * want / wantCalm

	for _, p := range proxies {
		p.SetEnabled(true)
	}
	storm, tasks := seed("faults:storm", 6)
	for _, p := range proxies {
		p.SetEnabled(false)
	}

	var done, total int64
	for _, tk := range tasks {
		if tk.Status != task.Done || tk.Done != tk.Total {
			t.Errorf("task %d: %s with %d of %d tiles, want DONE with all", tk.ID, tk.Status, tk.Done, tk.Total)
		}
		done, total = done+tk.Done, total+tk.Total
	}
	if total != want {
		t.Errorf("the tasks total %d tiles, want %d", total, want)
	}
	if n := len(a.TileKeys(t, "faults:storm/")); n != want {
		t.Errorf("the bucket holds %d tiles of the seed under faults, want %d", n, want)
	}
	// Usage equals the stored bytes, with no recount pending (none needed).
	r := getUsage(t, a)
	if l := r.layer("faults:storm"); l.RecountPending || l.UsedTiles != want {
		t.Errorf("usage of faults:storm: %+v; want %d tiles, no recount pending", l, want)
	}
	wantNoDrift(t, a, "seed under faults", "faults:storm", r.DiskBlockSize)
	log := logs.String()
	for _, s := range []string{"lane stopped: task killed or taken over", "lane cancelled: its lease is lost", "taken over from a stopped worker", "panic"} {
		if n := strings.Count(log, s); n > 0 {
			t.Errorf("the log says %q %d times, want never", s, n)
		}
	}
	if res := a.Do(t, "GET", "/rest/seed.json", ""); res.Status != 200 {
		t.Errorf("after the seed: GET /rest/seed.json answered %d", res.Status)
	}
	injected, report := faultReport(t, proxies)
	if injected < 500 {
		t.Errorf("%d faults injected, want hundreds: the suite did not test what it says", injected)
	}
	t.Logf("z0-6 seed of %d tiles in %d lanes: %.1f s without faults (%.1f s for the %d of z0-5, scaled), %.1f s with them (ratio %.2f); %d tiles processed\n%s"+
		"lane retries: %d checkpoints, %d tile writes; lanes stopped on errors: %d; status reads answered 503: %d",
		want, lanes, calm.Seconds(), calmSmall.Seconds(), wantCalm, storm.Seconds(), storm.Seconds()/calm.Seconds(), done, report,
		strings.Count(log, "checkpoint failed, trying again"), strings.Count(log, "tile write failed, trying again"),
		strings.Count(log, "give up the lease of a stopping lane")+strings.Count(log, "stopped with uncheckpointed work"), unavailable)
	if storm > 6*calm+time.Minute {
		t.Errorf("the seed under faults took %v, more than 6 × %v + 1 min without: faults stall it", storm, calm)
	}
}

// seedUnderFaults seeds layer z0-zoomStop of EPSG:900913 in lanes lanes
// and waits for its tasks to end, reading their status through the
// faults (counting the reads answered 503 in unavailable); it returns how
// long that took and the tasks as they ended.
func seedUnderFaults(t *testing.T, a *apptest.App, layer string, zoomStop, lanes int, unavailable *int) (time.Duration, []task.Task) {
	t.Helper()
	start := time.Now()
	rows := seedReq(t, a, layer, fmt.Sprintf(`{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":%d,"format":"image/png","type":"seed","threadCount":%d}}`, zoomStop, lanes))
	want := ids(rows)
	// The status list is read through the faults too: a 503 (the task
	// store unreachable after the client's retries) is an answer a
	// client retries; anything else but 200 is a failure. It is read
	// every half second, not 50 times a second: each read queries the
	// task store through the proxies, which the lanes need.
	// The bound on the time is the ratio checked at the end; this
	// wait only ends a seed that stalls.
	testenv.EventuallyEvery(t, 5*time.Minute, 500*time.Millisecond, fmt.Sprintf("tasks %v to finish", want), func() bool {
		res := a.Do(t, "GET", "/rest/seed/"+layer+".json", "")
		switch res.Status {
		case 503:
			*unavailable++
			return false
		case 200:
		default:
			t.Fatalf("GET the status rows: %d %q", res.Status, res.Body)
		}
		for _, r := range decodeRows(t, res.Body) {
			if slices.Contains(want, r[3]) && (r[4] == 0 || r[4] == 1) {
				return false
			}
		}
		return true
	})
	took := time.Since(start)
	var tasks []task.Task
	for _, id := range want {
		tk, err := a.Local.Tasks.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, tk)
	}
	return took, tasks
}

// faultReport returns how many faults the proxies injected in all and a
// line on each one's requests and faults; a service that got fewer than a
// few faults fails the test.
func faultReport(t *testing.T, proxies []*faultproxy.Proxy) (int64, string) {
	t.Helper()
	var injected int64
	var report strings.Builder
	for i, p := range proxies {
		st := p.Stats()
		injected += st.Faults.Total()
		fmt.Fprintf(&report, "%s: %d requests, %d writes, faults %s\n", faultServices[i].service, st.Requests, st.Writes, st.Faults)
		// Faults reached every service (z0-6: S3 some 900, SQS some
		// 40, DynamoDB some 20, every kind).
		if st.Faults.Total() < 5 {
			t.Errorf("%s: %d faults injected (%s), want more: the suite did not test what it says", faultServices[i].service, st.Faults.Total(), st.Faults)
		}
	}
	return injected, report.String()
}
