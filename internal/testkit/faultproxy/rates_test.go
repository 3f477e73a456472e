package faultproxy_test

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"tilecache/internal/testkit/faultproxy"
)

var ratesConfig = faultproxy.Config{
	Seed: 42, ThrottleRate: 0.08, ServerErrorRate: 0.02, ResetRate: 0.02, DropAnswerRate: 0.02,
}

// outcome is what a client saw of one request: "200", "400", "500",
// "conn" for a connection error, or another error's text. It is safe to
// call from any goroutine.
func outcome(tb testing.TB, c *http.Client, url, target string) string {
	status, _, err := do(tb, c, http.MethodPost, url, strings.NewReader(`{"TableName":"t"}`),
		http.Header{"X-Amz-Target": {"DynamoDB_20120810." + target}, "Content-Type": {"application/x-amz-json-1.0"}})
	switch {
	case err != nil && isConnError(err):
		return "conn"
	case err != nil:
		return "error: " + err.Error() // fails the test's counts
	}
	return fmt.Sprint(status)
}

// runMix sends n DynamoDB requests one after the other, three writes
// (UpdateItem) then one read (GetItem), and returns the outcomes.
func runMix(tb testing.TB, cfg faultproxy.Config, n int) ([]string, faultproxy.Stats, int) {
	tb.Helper()
	up := mustUpstream(tb, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte("{}"))
	})
	p := mustProxy(tb, up.URL, faultproxy.DynamoDB, cfg)
	c := newClient(tb)
	out := make([]string, n)
	for i := range out {
		op := "UpdateItem"
		if i%4 == 3 {
			op = "GetItem"
		}
		out[i] = outcome(tb, c, p.URL()+"/", op)
	}
	return out, p.Stats(), len(up.requests())
}

// within fails unless got is within 5 standard deviations of n draws at
// rate p.
func within(tb testing.TB, what string, got int64, n int, p float64) {
	tb.Helper()
	mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	if math.Abs(float64(got)-mean) > 5*sd+1 {
		tb.Errorf("%s = %d, want %.0f ± %.0f", what, got, mean, 5*sd+1)
	}
}

// TestRates sends 2,000 requests (1,500 writes, 500 reads) with a fixed
// seed and checks the injected mix against the rates, the client's view
// against the proxy's counts, and that the same seed gives the same
// sequence.
func TestRates(t *testing.T) {
	const n = 2000
	out, st, upstreamSaw := runMix(t, ratesConfig, n)
	t.Logf("stats:\n%v", st)

	if st.Requests != n || st.Writes != n*3/4 {
		t.Fatalf("requests %d, writes %d; want %d, %d", st.Requests, st.Writes, n, n*3/4)
	}
	w, r := st.ByOp["UpdateItem"], st.ByOp["GetItem"]
	within(t, "throttled writes", w.Faults.Throttle, n*3/4, ratesConfig.ThrottleRate)
	within(t, "server errors", w.Faults.ServerError, n*3/4, ratesConfig.ServerErrorRate)
	within(t, "reset writes", w.Faults.Reset, n*3/4, ratesConfig.ResetRate)
	within(t, "dropped answers", w.Faults.DropAnswer, n*3/4, ratesConfig.DropAnswerRate)
	within(t, "reset reads", r.Faults.Reset, n/4, ratesConfig.ResetRate)
	if r.Faults.Throttle+r.Faults.ServerError+r.Faults.DropAnswer != 0 {
		t.Errorf("reads got faults %v, want resets only", r.Faults)
	}

	count := func(s string) int64 {
		return int64(len(slices.DeleteFunc(slices.Clone(out), func(o string) bool { return o != s })))
	}
	if count("400") != st.Faults.Throttle || count("500") != st.Faults.ServerError ||
		count("conn") != st.Faults.Reset+st.Faults.DropAnswer || count("200") != n-st.Faults.Total() {
		t.Errorf("client saw 200×%d 400×%d 500×%d conn×%d, proxy counted %v",
			count("200"), count("400"), count("500"), count("conn"), st.Faults)
	}
	wantUp := n - st.Faults.Throttle - st.Faults.ServerError - st.Faults.Reset
	if int64(upstreamSaw) != wantUp || st.Forwarded != wantUp {
		t.Errorf("upstream saw %d, proxy forwarded %d; want %d (every request but the answered and reset ones)",
			upstreamSaw, st.Forwarded, wantUp)
	}

	again, _, _ := runMix(t, ratesConfig, 500)
	if !slices.Equal(again, out[:500]) {
		t.Errorf("the same seed gave another sequence of outcomes")
	}
	other := ratesConfig
	other.Seed++
	if diff, _, _ := runMix(t, other, 500); slices.Equal(diff, out[:500]) {
		t.Errorf("another seed gave the same sequence of outcomes")
	}
}

// TestConcurrentClients runs eight clients at once and checks that every
// request is accounted for exactly once, by the proxy and by the clients.
func TestConcurrentClients(t *testing.T) {
	up := mustUpstream(t, nil)
	p := mustProxy(t, up.URL, faultproxy.DynamoDB, ratesConfig)
	const workers, each = 8, 100
	var (
		mu  sync.Mutex
		saw = map[string]int64{}
		wg  sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			c := newClient(t)
			for range each {
				o := outcome(t, c, p.URL()+"/", "PutItem")
				mu.Lock()
				saw[o]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	st := p.Stats()
	if st.Requests != workers*each || saw["400"] != st.Faults.Throttle || saw["500"] != st.Faults.ServerError ||
		saw["conn"] != st.Faults.Reset+st.Faults.DropAnswer || saw["200"] != workers*each-st.Faults.Total() {
		t.Errorf("clients saw %v, proxy counted %v over %d requests", saw, st.Faults, st.Requests)
	}
	if int64(len(up.requests())) != st.Forwarded {
		t.Errorf("upstream saw %d requests, proxy forwarded %d", len(up.requests()), st.Forwarded)
	}
}
