package s3store_test

// Tests of the store's retries that need no S3: a fake S3 endpoint answers
// in S3's wire format (REST, XML errors) and fails requests as the test
// says.

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/awsconf"
	"tilecache/internal/metrics"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
)

// tally is a metrics exporter that sums counters by metric and labels.
type tally struct {
	mu  sync.Mutex
	sum map[string]float64
	ctx context.Context // carries the tally's registry
}

// newTally returns a tally installed in a registry of its own, which
// tl.ctx carries to the code under test.
func newTally(t *testing.T) *tally {
	var reg metrics.Registry
	tl := &tally{sum: map[string]float64{}, ctx: metrics.NewContext(t.Context(), &reg)}
	t.Cleanup(reg.Install(tl))
	return tl
}

func (tl *tally) Record(m *metrics.Metric, v float64, labels []string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.sum[m.Name+"/"+strings.Join(labels, ",")] += v
}

func (tl *tally) get(m *metrics.Metric, labels ...string) float64 {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.sum[m.Name+"/"+strings.Join(labels, ",")]
}

// fault is how the fake answers a request instead of serving it.
type fault int

const (
	serve     fault = iota
	slowDown        // 503 SlowDown
	internal        // 500 InternalError
	timeout         // 400 RequestTimeout
	reset           // connection reset before an answer
	hangUp          // connection closed before an answer (EOF)
	forbidden       // 403 AccessDenied
)

// fakeS3 is a path-style S3 endpoint with one object store. Before serving
// a request, it asks faults what to do with the nth request (1, 2, …) of
// its kind (the method, and "list" or "delete" for those).
type fakeS3 struct {
	t      *testing.T
	faults func(kind string, n int) fault

	mu      sync.Mutex
	objects map[string][]byte // key → content
	counts  map[string]int
	bodies  [][]byte // every PUT body received, in full
}

func newFakeS3(t *testing.T, faults func(kind string, n int) fault) (*fakeS3, awsconf.S3Endpoint) {
	f := &fakeS3{t: t, faults: faults, objects: map[string][]byte{}, counts: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, awsconf.S3Endpoint{Host: strings.TrimPrefix(srv.URL, "http://"), PathStyle: true}
}

func (f *fakeS3) requests(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[kind]
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A new connection for each request: net/http sends a request again by
	// itself when a reused connection closes under it, which would hide
	// that failure from the store.
	w.Header().Set("Connection", "close")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake S3: read the request body: %v", err)
		return
	}
	kind := r.Method
	switch q := r.URL.Query(); {
	case q.Has("list-type"):
		kind = "list"
	case q.Has("delete"):
		kind = "delete"
	}
	f.mu.Lock()
	f.counts[kind]++
	n := f.counts[kind]
	if r.Method == http.MethodPut {
		f.bodies = append(f.bodies, body)
	}
	f.mu.Unlock()
	switch f.faults(kind, n) {
	case slowDown:
		s3Error(w, r, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
		return
	case internal:
		s3Error(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
		return
	case timeout:
		s3Error(w, r, http.StatusBadRequest, "RequestTimeout", "Your socket connection to the server was not read from or written to within the timeout period.")
		return
	case forbidden:
		s3Error(w, r, http.StatusForbidden, "AccessDenied", "Access Denied")
		return
	case reset, hangUp:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			f.t.Errorf("fake S3: hijack: %v", err)
			return
		}
		if f.faults(kind, n) == reset {
			conn.(*net.TCPConn).SetLinger(0)
		}
		conn.Close()
		return
	}
	f.serve(w, r, kind, body)
}

// serve answers as S3 does; keys are "bucket/key" paths.
func (f *fakeS3) serve(w http.ResponseWriter, r *http.Request, kind string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/")
	lastModified := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	switch kind {
	case http.MethodPut:
		f.objects[path] = body
		w.Header().Set("ETag", `"e"`)
	case http.MethodGet, http.MethodHead:
		data, ok := f.objects[path]
		if !ok {
			s3Error(w, r, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
			return
		}
		h := w.Header()
		h.Set("ETag", `"e"`)
		h.Set("Content-Type", "image/png")
		h.Set("Last-Modified", lastModified.Format(http.TimeFormat))
		h.Set("Content-Length", fmt.Sprint(len(data)))
		if r.Method == http.MethodGet {
			w.Write(data)
		}
	case "delete":
		var req struct {
			Objects []struct{ Key string } `xml:"Object"`
		}
		if err := xml.Unmarshal(body, &req); err != nil {
			f.t.Errorf("fake S3: DeleteObjects body: %v", err)
		}
		var out bytes.Buffer
		out.WriteString(`<?xml version="1.0" encoding="UTF-8"?><DeleteResult>`)
		for _, o := range req.Objects {
			delete(f.objects, strings.SplitN(path, "/", 2)[0]+"/"+o.Key)
			fmt.Fprintf(&out, "<Deleted><Key>%s</Key></Deleted>", o.Key)
		}
		out.WriteString(`</DeleteResult>`)
		w.Header().Set("Content-Type", "application/xml")
		w.Write(out.Bytes())
	case "list":
		bucket, prefix := strings.TrimSuffix(path, "/"), r.URL.Query().Get("prefix")
		var out bytes.Buffer
		fmt.Fprintf(&out, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>%s</Name><Prefix>%s</Prefix><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>`, bucket, prefix)
		for k, data := range f.objects {
			if key, ok := strings.CutPrefix(k, bucket+"/"); ok && strings.HasPrefix(key, prefix) {
				fmt.Fprintf(&out, `<Contents><Key>%s</Key><Size>%d</Size><LastModified>%s</LastModified><ETag>"e"</ETag></Contents>`,
					key, len(data), lastModified.Format("2006-01-02T15:04:05.000Z"))
			}
		}
		out.WriteString(`</ListBucketResult>`)
		w.Header().Set("Content-Type", "application/xml")
		w.Write(out.Bytes())
	default:
		s3Error(w, r, http.StatusNotImplemented, "NotImplemented", kind)
	}
}

// s3Error answers an S3 error document (a HEAD answer has none).
func s3Error(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource><RequestId>R</RequestId></Error>`,
			code, msg, r.URL.Path)
	}
}

// fastRetry has the default attempts and budget and millisecond backoffs.
var fastRetry = awsconf.Retry{BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond}

func newFakeStore(t *testing.T, ep awsconf.S3Endpoint, opts s3store.Options) *s3store.Store {
	t.Helper()
	opts.Bucket, opts.Endpoint, opts.AccessKey, opts.SecretKey = "tiles", ep, "k", "s"
	s, err := s3store.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestThrottlesRetried: every kind of request the store makes (PUT, HEAD,
// GET, DeleteObjects, ListObjectsV2) gets through six 503 SlowDown answers
// in a row; each throttled attempt and each retry is counted, and a
// retried PUT sends the whole body every time.
func TestThrottlesRetried(t *testing.T) {
	tl := newTally(t)
	f, ep := newFakeS3(t, func(_ string, n int) fault {
		if n <= 6 {
			return slowDown
		}
		return serve
	})
	s := newFakeStore(t, ep, s3store.Options{Prefix: "p", Retry: fastRetry})
	ctx := tl.ctx
	data := bytes.Repeat([]byte("tile"), 5000)
	if err := s.Put(ctx, "a.png", data, tilestore.Meta{ContentType: "image/png"}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if obj, found, err := s.Stat(ctx, "a.png"); err != nil || !found || obj.Size != int64(len(data)) {
		t.Fatalf("Stat: %+v, found %v, err %v", obj, found, err)
	}
	if got, _, found, err := s.Get(ctx, "a.png"); err != nil || !found || !bytes.Equal(got, data) {
		t.Fatalf("Get: %d bytes, found %v, err %v", len(got), found, err)
	}
	var listed []string
	if err := s.List(ctx, "", func(o tilestore.Object) error { listed = append(listed, o.Key); return nil }); err != nil || len(listed) != 1 || listed[0] != "a.png" {
		t.Fatalf("List: %v, err %v", listed, err)
	}
	if n, err := s.Delete(ctx, []string{"a.png", "b.png"}); err != nil || n != 2 {
		t.Fatalf("Delete: %d, err %v", n, err)
	}
	for _, kind := range []string{http.MethodPut, http.MethodHead, http.MethodGet, "list", "delete"} {
		if n := f.requests(kind); n != 7 {
			t.Errorf("%s: %d requests, want 7", kind, n)
		}
	}
	if got := tl.get(metrics.AWSThrottled, "s3"); got != 5*6 {
		t.Errorf("%s{service=s3} rose by %v, want 30", metrics.AWSThrottled.Name, got)
	}
	if got := tl.get(metrics.AWSRetries, "s3"); got != 5*6 {
		t.Errorf("%s{service=s3} rose by %v, want 30", metrics.AWSRetries.Name, got)
	}
	for i, b := range f.bodies {
		if !bytes.Equal(b, data) {
			t.Errorf("PUT attempt %d sent %d bytes, want the %d of the tile", i+1, len(b), len(data))
		}
	}
	if got := s.Requests(); got.Put != 7 || got.Head != 7 || got.Get != 7 || got.List != 7 || got.Delete != 7 {
		t.Errorf("Requests() = %+v, want 7 of each kind (attempts count)", got)
	}
}

// TestTransientFailuresRetried: connections reset or closed before an
// answer, 500 InternalError and 400 RequestTimeout are retried; they are
// not throttling. (A HEAD answer has no body: its 400 cannot be told from
// a final one.)
func TestTransientFailuresRetried(t *testing.T) {
	tl := newTally(t)
	script := map[string][]fault{http.MethodPut: {reset, hangUp, internal, timeout}, http.MethodHead: {reset, hangUp, internal}}
	f, ep := newFakeS3(t, func(kind string, n int) fault {
		if n <= len(script[kind]) {
			return script[kind][n-1]
		}
		return serve
	})
	s := newFakeStore(t, ep, s3store.Options{Retry: fastRetry})
	if err := s.Put(tl.ctx, "a.png", []byte("png"), tilestore.Meta{ContentType: "image/png"}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if _, found, err := s.Stat(tl.ctx, "a.png"); err != nil || !found {
		t.Fatalf("Stat: found %v, err %v", found, err)
	}
	if n := f.requests(http.MethodPut); n != 5 {
		t.Errorf("PUT: %d requests, want 5", n)
	}
	if n := f.requests(http.MethodHead); n != 4 {
		t.Errorf("HEAD: %d requests, want 4", n)
	}
	if got := tl.get(metrics.AWSThrottled, "s3"); got != 0 {
		t.Errorf("throttles rose by %v, want 0", got)
	}
	if got := tl.get(metrics.AWSRetries, "s3"); got != 4+3 {
		t.Errorf("retries rose by %v, want 7", got)
	}
}

// TestFinalAnswersNotRetried: a missing key and denied access are answered
// at once.
func TestFinalAnswersNotRetried(t *testing.T) {
	f, ep := newFakeS3(t, func(kind string, _ int) fault {
		if kind == http.MethodPut {
			return forbidden
		}
		return serve
	})
	s := newFakeStore(t, ep, s3store.Options{Retry: fastRetry})
	if _, found, err := s.Stat(t.Context(), "none.png"); err != nil || found {
		t.Errorf("Stat of a missing key: found %v, err %v", found, err)
	}
	if _, _, found, err := s.Get(t.Context(), "none.png"); err != nil || found {
		t.Errorf("Get of a missing key: found %v, err %v", found, err)
	}
	if err := s.Put(t.Context(), "a.png", []byte("png"), tilestore.Meta{}); !apperr.Is(err, apperr.Internal) || !strings.Contains(apperr.Message(err), "AccessDenied") {
		t.Errorf("Put denied: got %v, want Internal (AccessDenied)", err)
	}
	for _, kind := range []string{http.MethodHead, http.MethodGet, http.MethodPut} {
		if n := f.requests(kind); n != 1 {
			t.Errorf("%s: %d requests, want 1", kind, n)
		}
	}
}

// TestThrottlingBudget: a bucket that throttles forever fails the PUT as
// Unavailable once the budget leaves no room for another backoff.
func TestThrottlingBudget(t *testing.T) {
	r := awsconf.Retry{MaxAttempts: 1000, Budget: 500 * time.Millisecond, BaseDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond}
	f, ep := newFakeS3(t, func(string, int) fault { return slowDown })
	s := newFakeStore(t, ep, s3store.Options{Retry: r})
	start := time.Now()
	err := s.Put(t.Context(), "a.png", []byte("png"), tilestore.Meta{})
	took := time.Since(start)
	if !apperr.Is(err, apperr.Unavailable) || !strings.Contains(apperr.Message(err), "SlowDown") {
		t.Errorf("got %v, want Unavailable (SlowDown)", err)
	}
	// minio-go sleeps up to 200 ms after its one attempt failed in a way it
	// would retry.
	if took < r.Budget-r.MaxDelay || took > r.Budget+200*time.Millisecond+time.Second {
		t.Errorf("Put took %v, want about the %v budget", took, r.Budget)
	}
	if n := f.requests(http.MethodPut); n < 10 || n >= 1000 {
		t.Errorf("%d PUTs", n)
	}
	t.Logf("%d attempts in %v: %v", f.requests(http.MethodPut), took, err)

	// MaxRetries 1: one attempt.
	f, ep = newFakeS3(t, func(string, int) fault { return slowDown })
	s = newFakeStore(t, ep, s3store.Options{Retry: r, MaxRetries: 1})
	if _, _, err := s.Stat(t.Context(), "a.png"); !apperr.Is(err, apperr.Unavailable) || f.requests(http.MethodHead) != 1 {
		t.Errorf("MaxRetries 1: %d requests, err %v; want 1, Unavailable", f.requests(http.MethodHead), err)
	}
}

// TestCallerDeadline: the caller's context ends the retries before the
// budget does.
func TestCallerDeadline(t *testing.T) {
	_, ep := newFakeS3(t, func(string, int) fault { return slowDown })
	s := newFakeStore(t, ep, s3store.Options{Retry: awsconf.Retry{MaxAttempts: 1000, BaseDelay: 20 * time.Millisecond, MaxDelay: 50 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Put(ctx, "a.png", []byte("png"), tilestore.Meta{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 300*time.Millisecond+time.Second {
		t.Errorf("Put took %v past a 300 ms deadline", took)
	}
}
