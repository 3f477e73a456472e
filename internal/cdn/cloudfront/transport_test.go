package cloudfront

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	cf "github.com/aws/aws-sdk-go-v2/service/cloudfront"
)

// TestLateBodyDrainSendsOnce pins the order of events behind a second
// CreateInvalidation for one that was made (see sendOnce): net/http's
// writer drains the request body only after the SDK closed it. The
// server answers the first request's headers at once and its body once
// the client closed the connection (or after a pause), as moto does when
// its second write comes late; the writer is held after writing the body
// until the body was closed. It fails without sendOnce.
func TestLateBodyDrainSendsOnce(t *testing.T) {
	var (
		requests   atomic.Int32
		bodyClosed = make(chan struct{}) // the first request's body was closed
		connClosed = make(chan struct{}) // the client closed the first connection
		first      sync.Once
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/distribution/EDIST/invalidation") {
			http.Error(w, "unexpected request "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
			return
		}
		io.Copy(io.Discard, r.Body)
		body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<Invalidation xmlns="http://cloudfront.amazonaws.com/doc/2020-05-31/"><Id>I%d</Id><Status>InProgress</Status>`+
			`<CreateTime>2026-01-02T03:04:05Z</CreateTime><InvalidationBatch><Paths><Quantity>1</Quantity>`+
			`<Items><Path>/demo:world/*</Path></Items></Paths><CallerReference>ref</CallerReference></InvalidationBatch></Invalidation>`, n)
		w.Header().Set("Content-Type", "text/xml")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Header().Set("Location", "http://"+r.Host+r.URL.Path+"/I1")
		w.WriteHeader(http.StatusCreated)
		w.(http.Flusher).Flush()
		if n == 1 {
			select {
			case <-connClosed:
			case <-time.After(300 * time.Millisecond):
			}
		}
		io.WriteString(w, body)
	}))
	defer srv.Close()

	dialer := &net.Dialer{}
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &heldConn{Conn: c, bodyClosed: bodyClosed, closed: connClosed, first: &first}, nil
		}
	})
	client := cf.New(cf.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("id", "secret", ""),
		HTTPClient:   closingClient{next: httpClient, closed: bodyClosed, once: new(sync.Once)},
	})
	id, err := New(client, "EDIST").Invalidate(t.Context(), "ref", []string{"/demo:world/*"})
	if err != nil {
		t.Fatalf("Invalidate: %v", err)
	}
	if got := requests.Load(); got != 1 || id != "I1" {
		t.Errorf("got id %q after %d CreateInvalidation requests, want id \"I1\" after 1", id, got)
	}
}

// closingClient closes a request's body as soon as the answer's headers
// arrive, as the SDK does right after its HTTP client returns, and says so
// (once).
type closingClient struct {
	next   cf.HTTPClient
	closed chan struct{}
	once   *sync.Once
}

func (c closingClient) Do(r *http.Request) (*http.Response, error) {
	res, err := c.next.Do(r)
	if r.Body != nil {
		r.Body.Close()
	}
	c.once.Do(func() { close(c.closed) })
	return res, err
}

// heldConn holds the first connection's writer, after it wrote a request
// body, until bodyClosed, and closes closed when that connection is closed.
type heldConn struct {
	net.Conn
	bodyClosed, closed chan struct{}
	first              *sync.Once
	wroteBody          bool        // the writer's own
	isFirst            atomic.Bool // this is the first connection
}

func (c *heldConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if !c.wroteBody && !bytes.HasPrefix(p, []byte("POST ")) {
		c.wroteBody = true
		c.first.Do(func() { c.isFirst.Store(true) })
		if c.isFirst.Load() {
			select {
			case <-c.bodyClosed:
			case <-time.After(5 * time.Second):
			}
		}
	}
	return n, err
}

func (c *heldConn) Close() error {
	if c.isFirst.CompareAndSwap(true, false) {
		close(c.closed)
	}
	return c.Conn.Close()
}
