package lambdatest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RuntimeResult is what a bootstrap posted for the one invocation of a
// RuntimeAPI: its response, its invocation error, or its init error.
type RuntimeResult struct {
	At   time.Time
	Kind string // "response", "error" or "init/error"
	Body []byte
}

// RuntimeAPI is a fake Lambda Runtime API
// (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html) serving
// one invocation: the first GET …/invocation/next gets Event with the
// Lambda-Runtime-* headers; later ones block, as the real API does between
// invocations. Point a bootstrap at it with AWS_LAMBDA_RUNTIME_API=Addr.
type RuntimeAPI struct {
	Addr string
	// Next receives the time of the first GET …/invocation/next: the
	// moment the function's init finished.
	Next chan time.Time
	// Result receives what the function posted.
	Result chan RuntimeResult

	event    []byte
	timeout  time.Duration
	mu       sync.Mutex
	served   bool
	closed   chan struct{}
	closeOne sync.Once
}

const runtimePrefix = "/2018-06-01/runtime/"

// NewRuntimeAPI starts a fake Runtime API that hands out event once, with
// a deadline timeout after it is handed out. It stops when the test ends.
func NewRuntimeAPI(t testing.TB, event []byte, timeout time.Duration) *RuntimeAPI {
	t.Helper()
	api := &RuntimeAPI{
		Next: make(chan time.Time, 1), Result: make(chan RuntimeResult, 1),
		event: event, timeout: timeout, closed: make(chan struct{}),
	}
	srv := httptest.NewServer(http.HandlerFunc(api.serve))
	t.Cleanup(func() {
		api.closeOne.Do(func() { close(api.closed) })
		srv.Close()
	})
	api.Addr = strings.TrimPrefix(srv.URL, "http://")
	return api
}

func (a *RuntimeAPI) serve(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, runtimePrefix)
	switch {
	case ok && r.Method == http.MethodGet && path == "invocation/next":
		a.mu.Lock()
		first := !a.served
		a.served = true
		a.mu.Unlock()
		if !first {
			select { // no second invocation: block like the real API
			case <-r.Context().Done():
			case <-a.closed:
			}
			return
		}
		a.Next <- time.Now()
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Lambda-Runtime-Aws-Request-Id", "8476a536-e9f4-11e8-9739-2dfe598c3fcd")
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(a.timeout).UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:tilecache-test")
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-5bef4de7-ad49b0e87f6ef6c87fc2e700;Parent=9a9197af755a6419;Sampled=1")
		w.Write(a.event)
	case ok && r.Method == http.MethodPost && (strings.HasSuffix(path, "/response") || strings.HasSuffix(path, "/error")):
		kind := path[strings.LastIndexByte(path, '/')+1:]
		if path == "init/error" {
			kind = "init/error"
		}
		body, _ := io.ReadAll(r.Body)
		select {
		case a.Result <- RuntimeResult{At: time.Now(), Kind: kind, Body: body}:
		default:
		}
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"status":"OK"}`)
	default:
		http.Error(w, "fake Runtime API: unknown request "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	}
}
