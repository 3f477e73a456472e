package faultproxy_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"tilecache/internal/testkit/faultproxy"
)

// TestForwardFaithfully sends an S3-style signed PUT through the proxy and
// checks the upstream saw it byte for byte: Host as the client sent it,
// path with its escaping, raw query, headers and body; and that the answer
// comes back unchanged (status, headers, compressed body).
func TestForwardFaithfully(t *testing.T) {
	gz := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0} // empty gzip
	up := mustUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("ETag", `"abc"`)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("X-Amz-Request-Id", "up-1")
		w.WriteHeader(http.StatusPartialContent)
		w.Write(gz)
	})
	p := mustProxy(t, up.URL, faultproxy.S3, faultproxy.Config{Seed: 1})
	c := newClient(t)

	const path = "/bucket/tiles/a%20b/c%2Bd%2Fe:f.png"
	const query = "x-id=PutObject&prefix=a%2Fb&empty=&sp=%20"
	body := []byte(strings.Repeat("tile-bytes.", 1000))
	hdr := http.Header{
		"Authorization":                []string{"AWS4-HMAC-SHA256 Credential=AK/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=00"},
		"X-Amz-Date":                   []string{"20260101T000000Z"},
		"X-Amz-Content-Sha256":         []string{"STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
		"X-Amz-Decoded-Content-Length": []string{"11000"},
		"Content-Encoding":             []string{"aws-chunked"},
		"Content-Md5":                  []string{"ZmFrZQ=="},
		"Cache-Control":                []string{"max-age=60"},
		"X-Amz-Meta-Two":               []string{"a", "b"},
	}
	status, got, err := do(t, c, http.MethodPut, p.URL()+path+"?"+query, bytes.NewReader(body), hdr)
	if err != nil {
		t.Fatalf("PUT through the proxy: %v", err)
	}
	if status != http.StatusPartialContent || !bytes.Equal(got, gz) {
		t.Errorf("answer = %d %x, want 206 %x (untouched gzip)", status, got, gz)
	}

	reqs := up.requests()
	if len(reqs) != 1 {
		t.Fatalf("upstream saw %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if want := hostOf(t, p.URL()); r.Host != want {
		t.Errorf("upstream Host = %q, want the proxy's %q (what the client signed)", r.Host, want)
	}
	if want := path + "?" + query; r.RequestURI != want {
		t.Errorf("upstream RequestURI = %q, want %q", r.RequestURI, want)
	}
	if r.Method != http.MethodPut || r.BodyLen != int64(len(body)) || !bytes.Equal(r.Body, body) {
		t.Errorf("upstream got %s with %d body bytes, want PUT with %d", r.Method, r.BodyLen, len(body))
	}
	for k, v := range hdr {
		if g := r.Header.Values(k); strings.Join(g, "|") != strings.Join(v, "|") {
			t.Errorf("upstream header %s = %q, want %q", k, g, v)
		}
	}
	if g := r.Header.Get("Content-Length"); g != "11000" {
		t.Errorf("upstream Content-Length = %q, want 11000", g)
	}

	st := p.Stats()
	if st.Requests != 1 || st.Writes != 1 || st.Forwarded != 1 || st.ForwardedWrites != 1 || st.Faults.Total() != 0 {
		t.Errorf("stats = %+v, want one write forwarded, no faults", st)
	}
	if o := st.ByOp["PutObject"]; o.Requests != 1 || o.Forwarded != 1 {
		t.Errorf("stats for PutObject = %+v, want 1 request forwarded", o)
	}
}

// TestStreaming checks that 5 MB bodies are streamed both ways: the
// upstream receives the first part of a chunked upload before the client
// has sent the rest, and the client receives the first part of the answer
// before the upstream has written the rest.
func TestStreaming(t *testing.T) {
	const size = 5 << 20
	payload := make([]byte, size)
	rand.Read(payload)
	sum := sha256.Sum256(payload)

	firstIn := make(chan struct{})  // upstream got the first request chunk
	firstOut := make(chan struct{}) // client got the first answer chunk
	timeout := time.After(15 * time.Second)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			h := sha256.New()
			if _, err := io.CopyN(h, r.Body, 1<<20); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			close(firstIn)
			n, err := io.Copy(h, r.Body)
			if err != nil || n != size-1<<20 {
				http.Error(w, "short body", http.StatusBadRequest)
				return
			}
			io.WriteString(w, hex.EncodeToString(h.Sum(nil)))
			return
		}
		w.Write(payload[:1<<20])
		http.NewResponseController(w).Flush()
		select {
		case <-firstOut:
		case <-timeout:
			return // the client never saw the first part: the answer was buffered
		}
		w.Write(payload[1<<20:])
	}))
	t.Cleanup(up.Close)
	p := mustProxy(t, up.URL, faultproxy.S3, faultproxy.Config{})
	c := newClient(t)

	// Upload: the second part is written only once the upstream read the first.
	pr, pw := io.Pipe()
	go func() {
		pw.Write(payload[:1<<20])
		select {
		case <-firstIn:
		case <-timeout:
			pw.CloseWithError(io.ErrUnexpectedEOF)
			return
		}
		pw.Write(payload[1<<20:])
		pw.Close()
	}()
	status, got, err := do(t, c, http.MethodPut, p.URL()+"/bucket/big", pr, nil)
	if err != nil || status != http.StatusOK || string(got) != hex.EncodeToString(sum[:]) {
		t.Fatalf("chunked 5 MB PUT = %d %.80q %v, want 200 and the payload's SHA-256", status, got, err)
	}

	// Download.
	req, _ := http.NewRequestWithContext(testContext(t, 15*time.Second), http.MethodGet, p.URL()+"/bucket/big", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	head := make([]byte, 1<<20)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatalf("read the first MiB: %v", err)
	}
	close(firstOut)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read the rest: %v", err)
	}
	if got := sha256.Sum256(append(head, rest...)); got != sum {
		t.Errorf("downloaded %d bytes with another SHA-256", len(head)+len(rest))
	}
}

// TestKeepAlive checks that successive requests of one client reuse one
// connection to the proxy, and that a reset on another connection leaves
// that connection alone.
func TestKeepAlive(t *testing.T) {
	up := mustUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { io.WriteString(w, "ok") })
	p := mustProxy(t, up.URL, faultproxy.S3, faultproxy.Config{Seed: 3, ResetRate: 1, Disabled: true})
	a, b := newClient(t), newClient(t)

	get := func(c *http.Client) (reused bool, err error) {
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(testContext(t, 10*time.Second), trace),
			http.MethodGet, p.URL()+"/bucket/k", nil)
		resp, err := c.Do(req)
		if err != nil {
			return reused, err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return reused, err
	}
	if _, err := get(a); err != nil {
		t.Fatalf("first GET: %v", err)
	}
	if reused, err := get(a); err != nil || !reused {
		t.Fatalf("second GET: reused=%v err=%v, want a reused connection", reused, err)
	}

	p.SetEnabled(true)
	if _, err := get(b); err == nil || !isConnError(err) {
		t.Fatalf("GET with a reset: err = %v, want a connection error", err)
	}
	p.SetEnabled(false)

	if reused, err := get(a); err != nil || !reused {
		t.Errorf("GET after another connection was reset: reused=%v err=%v, want the same connection, ok", reused, err)
	}
	if st := p.Stats(); st.Faults.Reset != 1 {
		t.Errorf("resets = %d, want 1", st.Faults.Reset)
	}
}

// TestSQSQueryBody checks that a query-protocol SQS request, whose body
// the proxy reads to find the Action, still reaches the upstream whole.
func TestSQSQueryBody(t *testing.T) {
	up := mustUpstream(t, nil)
	p := mustProxy(t, up.URL, faultproxy.SQS, faultproxy.Config{})
	form := "Action=SendMessage&QueueUrl=http%3A%2F%2Fq&MessageBody=" + strings.Repeat("x", 100_000)
	status, _, err := do(t, newClient(t), http.MethodPost, p.URL()+"/", strings.NewReader(form),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}})
	if err != nil || status != http.StatusOK {
		t.Fatalf("POST = %d %v", status, err)
	}
	r := up.requests()[0]
	if sum := sha256.Sum256([]byte(form)); r.BodyLen != int64(len(form)) || r.BodySHA != hex.EncodeToString(sum[:]) {
		t.Errorf("upstream got %d body bytes, want the %d sent", r.BodyLen, len(form))
	}
	if o := p.Stats().ByOp["SendMessage"]; o.Requests != 1 || o.Writes != 1 {
		t.Errorf("stats for SendMessage = %+v, want one write", o)
	}
}

// TestOperationNames checks the names Stats files requests under, and
// which of them count as writes.
func TestOperationNames(t *testing.T) {
	up := mustUpstream(t, nil)
	c := newClient(t)
	for _, tc := range []struct {
		service     faultproxy.Service
		method, url string
		hdr         http.Header
		op          string
		write       bool
	}{
		{faultproxy.S3, "GET", "/", nil, "ListBuckets", false},
		{faultproxy.S3, "GET", "/b?list-type=2&prefix=x", nil, "ListObjectsV2", false},
		{faultproxy.S3, "GET", "/b?location=", nil, "GetBucketLocation", false},
		{faultproxy.S3, "HEAD", "/b/k", nil, "HeadObject", false},
		{faultproxy.S3, "PUT", "/b/k", http.Header{"X-Amz-Copy-Source": {"/b/j"}}, "CopyObject", true},
		{faultproxy.S3, "PUT", "/b/k?partNumber=1&uploadId=u", nil, "UploadPart", true},
		{faultproxy.S3, "POST", "/b?delete=", nil, "DeleteObjects", true},
		{faultproxy.S3, "POST", "/b/k?uploads=", nil, "CreateMultipartUpload", true},
		{faultproxy.S3, "POST", "/b/k?uploadId=u", nil, "CompleteMultipartUpload", true},
		{faultproxy.S3, "DELETE", "/b/k", nil, "DeleteObject", true},
		{faultproxy.S3, "PUT", "/b?policy=", nil, "PUT ?policy", true},
		{faultproxy.DynamoDB, "POST", "/", http.Header{"X-Amz-Target": {"DynamoDB_20120810.TransactWriteItems"}}, "TransactWriteItems", true},
		{faultproxy.DynamoDB, "POST", "/", http.Header{"X-Amz-Target": {"DynamoDB_20120810.Query"}}, "Query", false},
		{faultproxy.DynamoDB, "POST", "/", nil, "unknown", false},
		{faultproxy.SQS, "POST", "/", http.Header{"X-Amz-Target": {"AmazonSQS.ChangeMessageVisibilityBatch"}}, "ChangeMessageVisibilityBatch", true},
		{faultproxy.SQS, "POST", "/", http.Header{"X-Amz-Target": {"AmazonSQS.GetQueueAttributes"}}, "GetQueueAttributes", false},
		{faultproxy.SQS, "GET", "/q?Action=ReceiveMessage", nil, "ReceiveMessage", false},
	} {
		p := mustProxy(t, up.URL, tc.service, faultproxy.Config{})
		if _, _, err := do(t, c, tc.method, p.URL()+tc.url, nil, tc.hdr); err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.url, err)
		}
		st := p.Stats()
		o, ok := st.ByOp[tc.op]
		if !ok || o.Requests != 1 || (o.Writes == 1) != tc.write || faultproxy.IsWrite(tc.service, tc.op) != tc.write {
			t.Errorf("%s %s %s: stats %v, want op %q write=%v", tc.service, tc.method, tc.url, st, tc.op, tc.write)
		}
	}
}
