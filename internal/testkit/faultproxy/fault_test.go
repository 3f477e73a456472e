package faultproxy_test

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/testkit/faultproxy"
)

// TestFaultAnswers checks, with a plain HTTP client, the wire format of the
// injected throttle and server error answers of every service, and that
// none of them reached the upstream.
func TestFaultAnswers(t *testing.T) {
	s3Write := func(p string) (string, string, http.Header) { return http.MethodPut, p + "/bucket/key", nil }
	dynWrite := func(p string) (string, string, http.Header) {
		return http.MethodPost, p + "/", http.Header{"X-Amz-Target": {"DynamoDB_20120810.UpdateItem"},
			"Content-Type": {"application/x-amz-json-1.0"}}
	}
	sqsWrite := func(p string) (string, string, http.Header) {
		return http.MethodPost, p + "/", http.Header{"X-Amz-Target": {"AmazonSQS.SendMessageBatch"},
			"Content-Type": {"application/x-amz-json-1.0"}}
	}
	sqsQuery := func(p string) (string, string, http.Header) {
		return http.MethodPost, p + "/?Action=DeleteMessage", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	}
	for _, tc := range []struct {
		name       string
		service    faultproxy.Service
		cfg        faultproxy.Config
		req        func(string) (string, string, http.Header)
		status     int
		ctype      string
		code       string // error code in the body
		queryError string // X-Amzn-Query-Error
	}{
		{"s3 throttle", faultproxy.S3, faultproxy.Config{ThrottleRate: 1}, s3Write, 503, "application/xml", "SlowDown", ""},
		{"s3 server error", faultproxy.S3, faultproxy.Config{ServerErrorRate: 1}, s3Write, 500, "application/xml", "InternalError", ""},
		{"dynamodb throttle", faultproxy.DynamoDB, faultproxy.Config{ThrottleRate: 1}, dynWrite, 400, "application/x-amz-json-1.0",
			"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException", ""},
		{"dynamodb throttling exception", faultproxy.DynamoDB, faultproxy.Config{ThrottleRate: 1, ThrottleCodes: []string{"ThrottlingException"}},
			dynWrite, 400, "application/x-amz-json-1.0", "com.amazon.coral.availability#ThrottlingException", ""},
		{"dynamodb server error", faultproxy.DynamoDB, faultproxy.Config{ServerErrorRate: 1}, dynWrite, 500, "application/x-amz-json-1.0",
			"com.amazon.coral.service#InternalFailure", ""},
		{"sqs throttle", faultproxy.SQS, faultproxy.Config{ThrottleRate: 1}, sqsWrite, 403, "application/x-amz-json-1.0",
			"com.amazonaws.sqs#RequestThrottled", "RequestThrottled;Sender"},
		{"sqs server error", faultproxy.SQS, faultproxy.Config{ServerErrorRate: 1}, sqsWrite, 500, "application/x-amz-json-1.0",
			"com.amazon.coral.service#InternalFailure", "InternalFailure;Receiver"},
		{"sqs query throttle", faultproxy.SQS, faultproxy.Config{ThrottleRate: 1}, sqsQuery, 403, "text/xml", "RequestThrottled", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := mustUpstream(t, nil)
			p := mustProxy(t, up.URL, tc.service, tc.cfg)
			method, url, hdr := tc.req(p.URL())
			req, _ := http.NewRequestWithContext(testContext(t, 10*time.Second), method, url, strings.NewReader("{}"))
			for k, v := range hdr {
				req.Header[k] = v
			}
			resp, err := newClient(t).Do(req)
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != tc.ctype {
				t.Errorf("answer %d %q, want %d %q", resp.StatusCode, resp.Header.Get("Content-Type"), tc.status, tc.ctype)
			}
			if g := resp.Header.Get("X-Amzn-Query-Error"); g != tc.queryError {
				t.Errorf("X-Amzn-Query-Error = %q, want %q", g, tc.queryError)
			}
			var body struct {
				Type    string `json:"__type"`
				Message string `json:"message"`
				Code    string `xml:"Code"`
				Error   struct {
					Code string `xml:"Code"`
				} `xml:"Error"`
			}
			if strings.HasSuffix(tc.ctype, "json-1.0") {
				err = json.NewDecoder(resp.Body).Decode(&body)
			} else {
				err = xml.NewDecoder(resp.Body).Decode(&body)
			}
			if err != nil {
				t.Fatalf("decode the answer: %v", err)
			}
			if got := body.Type + body.Code + body.Error.Code; got != tc.code {
				t.Errorf("error code %q, want %q", got, tc.code)
			}
			if n := len(up.requests()); n != 0 {
				t.Errorf("upstream saw %d requests of an answered fault, want 0", n)
			}
		})
	}
}

// TestResetAndDropAnswer checks the two connection faults as a client sees
// them: a Reset write never reaches the upstream, a DropAnswer write does
// (once), and both fail at the client with a connection error.
func TestResetAndDropAnswer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      faultproxy.Config
		upstream int
	}{
		{"reset", faultproxy.Config{ResetRate: 1}, 0},
		{"drop answer", faultproxy.Config{DropAnswerRate: 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := mustUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
				w.Header().Set("ETag", `"e"`)
			})
			p := mustProxy(t, up.URL, faultproxy.S3, tc.cfg)
			status, _, err := do(t, newClient(t), http.MethodPut, p.URL()+"/bucket/key", strings.NewReader("tile"), nil)
			if err == nil || !isConnError(err) {
				t.Fatalf("PUT = %d %v, want a connection error", status, err)
			}
			t.Logf("client error: %v", err)
			reqs := up.requests()
			if len(reqs) != tc.upstream {
				t.Fatalf("upstream saw %d requests, want %d", len(reqs), tc.upstream)
			}
			if tc.upstream == 1 && string(reqs[0].Body) != "tile" {
				t.Errorf("upstream got body %q, want %q", reqs[0].Body, "tile")
			}
			st := p.Stats()
			want := faultproxy.FaultCounts{Reset: 1}
			if tc.cfg.DropAnswerRate == 1 {
				want = faultproxy.FaultCounts{DropAnswer: 1}
			}
			if st.Faults != want || st.ByOp["PutObject"].Faults != want {
				t.Errorf("faults = %v (PutObject %v), want %v", st.Faults, st.ByOp["PutObject"].Faults, want)
			}
			if st.Forwarded != int64(tc.upstream) {
				t.Errorf("forwarded = %d, want %d", st.Forwarded, tc.upstream)
			}
		})
	}
}

// TestReadsSpared checks that reads are only ever reset: with every other
// fault at its highest rate they pass, unless FaultReads is set.
func TestReadsSpared(t *testing.T) {
	up := mustUpstream(t, nil)
	c := newClient(t)
	dynRead := http.Header{"X-Amz-Target": {"DynamoDB_20120810.Query"}}
	for _, cfg := range []faultproxy.Config{{ThrottleRate: 1}, {ServerErrorRate: 1}, {DropAnswerRate: 1}} {
		p := mustProxy(t, up.URL, faultproxy.DynamoDB, cfg)
		if status, _, err := do(t, c, http.MethodPost, p.URL()+"/", strings.NewReader("{}"), dynRead); err != nil || status != 200 {
			t.Errorf("Query with %+v = %d %v, want 200", cfg, status, err)
		}
		cfg.FaultReads = true
		p = mustProxy(t, up.URL, faultproxy.DynamoDB, cfg)
		status, _, err := do(t, c, http.MethodPost, p.URL()+"/", strings.NewReader("{}"), dynRead)
		if err == nil && status == 200 {
			t.Errorf("Query with %+v passed, want a fault", cfg)
		}
	}
	p := mustProxy(t, up.URL, faultproxy.DynamoDB, faultproxy.Config{ResetRate: 1})
	if _, _, err := do(t, c, http.MethodPost, p.URL()+"/", strings.NewReader("{}"), dynRead); err == nil || !isConnError(err) {
		t.Errorf("Query with ResetRate 1: err = %v, want a connection error", err)
	}
}

// TestAfterAndSetEnabled checks that the first After requests and those
// made while disabled pass, and that faults start once enabled.
func TestAfterAndSetEnabled(t *testing.T) {
	up := mustUpstream(t, nil)
	c := newClient(t)
	put := func(p *faultproxy.Proxy) int {
		status, _, err := do(t, c, http.MethodPut, p.URL()+"/b/k", strings.NewReader("x"), nil)
		if err != nil {
			t.Fatalf("PUT: %v", err)
		}
		return status
	}
	p := mustProxy(t, up.URL, faultproxy.S3, faultproxy.Config{ThrottleRate: 1, After: 3})
	for i, want := range []int{200, 200, 200, 503, 503} {
		if got := put(p); got != want {
			t.Errorf("request %d with After 3: %d, want %d", i+1, got, want)
		}
	}

	p = mustProxy(t, up.URL, faultproxy.S3, faultproxy.Config{ThrottleRate: 1, Disabled: true})
	var got []int
	for _, on := range []bool{false, false, true, true, false, true} {
		p.SetEnabled(on)
		if p.Enabled() != on {
			t.Fatalf("Enabled() = %v after SetEnabled(%v)", p.Enabled(), on)
		}
		got = append(got, put(p))
	}
	if fmt.Sprint(got) != "[200 200 503 503 200 503]" {
		t.Errorf("statuses while toggling = %v, want [200 200 503 503 200 503]", got)
	}
	if st := p.Stats(); st.Requests != 6 || st.Faults.Throttle != 3 || st.Forwarded != 3 {
		t.Errorf("stats = %+v, want 6 requests, 3 throttled, 3 forwarded", st)
	}
}

// TestNewRejects checks New's validation.
func TestNewRejects(t *testing.T) {
	for _, tc := range []struct {
		target  string
		service faultproxy.Service
		cfg     faultproxy.Config
	}{
		{"127.0.0.1:9310", faultproxy.S3, faultproxy.Config{}},
		{"http://127.0.0.1:9310/base", faultproxy.S3, faultproxy.Config{}},
		{"http://127.0.0.1:9310", "kinesis", faultproxy.Config{}},
		{"http://127.0.0.1:9310", faultproxy.S3, faultproxy.Config{ThrottleRate: -0.1}},
		{"http://127.0.0.1:9310", faultproxy.S3, faultproxy.Config{ResetRate: math.NaN()}},
		{"http://127.0.0.1:9310", faultproxy.S3, faultproxy.Config{ThrottleRate: 0.6, DropAnswerRate: 0.6}},
		{"http://127.0.0.1:9310", faultproxy.S3, faultproxy.Config{After: -1}},
		{"http://127.0.0.1:9310", faultproxy.S3, faultproxy.Config{ThrottleCodes: []string{""}}},
	} {
		if _, err := faultproxy.New(tc.target, tc.service, tc.cfg, nil); err == nil {
			t.Errorf("New(%q, %q, %+v) = nil error, want one", tc.target, tc.service, tc.cfg)
		}
	}
}

// TestIsWrite pins the write classification the rates apply to.
func TestIsWrite(t *testing.T) {
	for _, tc := range []struct {
		service faultproxy.Service
		op      string
		want    bool
	}{
		{faultproxy.DynamoDB, "TransactWriteItems", true}, {faultproxy.DynamoDB, "BatchWriteItem", true},
		{faultproxy.DynamoDB, "GetItem", false}, {faultproxy.DynamoDB, "TransactGetItems", false},
		{faultproxy.SQS, "ChangeMessageVisibilityBatch", true}, {faultproxy.SQS, "ReceiveMessage", false},
		{faultproxy.S3, "DeleteObjects", true}, {faultproxy.S3, "PUT ?policy", true}, {faultproxy.S3, "GetObject", false},
	} {
		if got := faultproxy.IsWrite(tc.service, tc.op); got != tc.want {
			t.Errorf("IsWrite(%s, %s) = %v, want %v", tc.service, tc.op, got, tc.want)
		}
	}
}

// TestUpstreamDown checks that a request the upstream cannot take is
// answered 502 and counted.
func TestUpstreamDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := mustProxy(t, "http://"+addr, faultproxy.S3, faultproxy.Config{})
	status, _, err := do(t, newClient(t), http.MethodGet, p.URL()+"/b/k", nil, nil)
	if err != nil || status != http.StatusBadGateway {
		t.Errorf("GET with the upstream down = %d %v, want 502", status, err)
	}
	if st := p.Stats(); st.UpstreamErrors != 1 || st.Forwarded != 1 {
		t.Errorf("stats = %+v, want 1 forwarded, 1 upstream error", st)
	}
}

// acceptWatch closes accepting when its first Accept is called: by then
// Serve has taken the listener.
type acceptWatch struct {
	net.Listener
	once      sync.Once
	accepting chan struct{}
}

func (l *acceptWatch) Accept() (net.Conn, error) {
	l.once.Do(func() { close(l.accepting) })
	return l.Listener.Accept()
}

// TestServeAndClose checks Serve on a caller's listener: URL follows it,
// Serve returns nil on Close, and the proxy is gone afterwards.
func TestServeAndClose(t *testing.T) {
	up := mustUpstream(t, nil)
	p, err := faultproxy.New(up.URL, faultproxy.S3, faultproxy.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.URL() != "" {
		t.Errorf("URL before serving = %q, want empty", p.URL())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serving := &acceptWatch{Listener: ln, accepting: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- p.Serve(serving) }()
	c := newClient(t)
	select {
	case <-serving.accepting:
	case err := <-done:
		t.Fatalf("Serve returned %v before accepting", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not accept within 5s")
	}
	if p.URL() != "http://"+ln.Addr().String() {
		t.Fatalf("URL = %q, want http://%s", p.URL(), ln.Addr())
	}
	if status, _, err := do(t, c, http.MethodGet, p.URL()+"/b/k", nil, nil); err != nil || status != 200 {
		t.Fatalf("GET = %d %v", status, err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v after Close, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	if _, _, err := do(t, c, http.MethodGet, p.URL()+"/b/k", nil, nil); err == nil {
		t.Error("GET after Close succeeded")
	}
}
