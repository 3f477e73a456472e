package s3store

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"tilecache/internal/awsconf"
	"tilecache/internal/metrics"
)

// maxRetryBody is the largest request body the store buffers to send it
// again; a larger one (or one of unknown length) gets a single attempt.
// Tiles are far smaller, DeleteObjects bodies too (1,000 keys).
const maxRetryBody = 32 << 20

// maxErrorBody bounds the bytes of an error answer read to find its code.
const maxErrorBody = 64 << 10

// retryTransport retries S3 requests by the store's policy (awsconf.Retry):
// minio-go's own retry loop is off (MaxRetries 1), because its backoff is
// fixed process-wide (200 ms doubling to 1 s), it has no time budget, and
// nothing outside it sees its attempts. It sits above countingTransport,
// so every attempt is counted as a request.
//
// It retries what minio-go's loop would: a transport failure (connection
// refused, reset or closed, a timeout; not a TLS certificate or protocol
// mismatch, nor a host that does not exist), HTTP 408, 429, 499, 500, 502,
// 503, 504 and 520, and an error answer whose code is RequestTimeout,
// InternalError or a throttling code (SlowDown, SlowDownRead/Write,
// Throttling, RequestLimitExceeded, …). Not ExpiredToken: sending the same
// signed request again cannot help.
type retryTransport struct {
	base   http.RoundTripper
	policy awsconf.Retry
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	getBody, once, err := rewindable(req)
	if err != nil {
		return nil, err
	}
	ctx := req.Context()
	start := time.Now()
	for n := 1; ; n++ {
		r := req
		if getBody != nil && (n > 1 || req.GetBody == nil) {
			r = new(http.Request)
			*r = *req // the caller's request stays as it is
			if r.Body, err = getBody(); err != nil {
				return nil, err
			}
			r.GetBody = getBody
		}
		resp, err := t.base.RoundTrip(r)
		again, throttled := retryable(ctx, req, resp, err)
		if throttled {
			metrics.AWSThrottled.Add(ctx, 1, awsconf.ServiceS3)
		}
		if !again || once || !t.policy.Allows(n, time.Since(start)) {
			return resp, err
		}
		if resp != nil {
			drain(resp.Body)
		}
		if err := sleep(ctx, t.policy.Backoff(n)); err != nil {
			return nil, err
		}
		metrics.AWSRetries.Add(ctx, 1, awsconf.ServiceS3)
	}
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the pool.
func (t *retryTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// putBodyKey is the context key under which Put hands its bytes to
// rewindable.
type putBodyKey struct{}

// rewindable returns a function giving req's body afresh for each attempt:
// req.GetBody, the bytes Put left in the request's context when they are
// the body (as long), or a buffered copy of a body of known length up to
// maxRetryBody (req.Body is then read and closed). once is set for a body
// that cannot be sent twice; both are zero for a request without a body.
func rewindable(req *http.Request) (getBody func() (io.ReadCloser, error), once bool, err error) {
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		return nil, false, nil
	case req.GetBody != nil:
		return req.GetBody, false, nil
	case req.ContentLength < 0 || req.ContentLength > maxRetryBody:
		return nil, true, nil
	}
	if data, ok := req.Context().Value(putBodyKey{}).([]byte); ok && int64(len(data)) == req.ContentLength {
		// A tile's PUT: its bytes, as Put was given them, are the body
		// (the checksum travels in a header, the payload unsigned), and
		// are sent again without a copy.
		req.Body.Close()
		return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, false, nil
	}
	defer req.Body.Close()
	buf := bytes.NewBuffer(make([]byte, 0, req.ContentLength))
	if _, err := buf.ReadFrom(req.Body); err != nil {
		return nil, false, err
	}
	body := buf.Bytes()
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }, false, nil
}

// retryable reports whether the answer (resp or err) to req may be retried,
// and whether it is throttling (HTTP 429 or 503, or a throttling code: S3
// answers SlowDown with 503, and a HEAD answer has no body to tell more).
// It reads a small error answer's body to find its code, and leaves resp
// readable from its start.
func retryable(ctx context.Context, req *http.Request, resp *http.Response, err error) (again, throttled bool) {
	if err != nil {
		return ctx.Err() == nil && transient(err), false
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true, true
	case http.StatusRequestTimeout, 499, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusGatewayTimeout, 520:
		return true, false
	}
	if resp.StatusCode < 400 || req.Method == http.MethodHead {
		return false, false
	}
	code := errorCode(resp)
	_, throttle := retry.DefaultThrottleErrorCodes[code]
	throttle = throttle || code == "SlowDownRead" || code == "SlowDownWrite"
	return throttle || code == "RequestTimeout" || code == "InternalError", throttle
}

// transient reports whether a failed round trip may succeed when tried
// again.
func transient(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalidCert      x509.CertificateInvalidError
		hostname         x509.HostnameError
		verification     *tls.CertificateVerificationError
		dns              *net.DNSError
	)
	switch {
	case errors.As(err, &unknownAuthority), errors.As(err, &invalidCert), errors.As(err, &hostname),
		errors.As(err, &verification),
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return false
	case errors.As(err, &dns) && dns.IsNotFound:
		return false
	}
	return true
}

// errorCode returns the Code of an S3 error document in resp's body, or "",
// and puts what it read back in front of the body.
func errorCode(resp *http.Response) string {
	if resp.Body == nil || resp.Body == http.NoBody {
		return ""
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody)) // a read error reaches minio-go on its own read
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	var doc struct {
		Code string `xml:"Code"`
	}
	if xml.Unmarshal(head, &doc) != nil {
		return ""
	}
	return doc.Code
}

// drain reads a little of an answer that is given up, so that its
// connection can be reused, and closes it.
func drain(body io.ReadCloser) {
	if body == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxErrorBody))
	body.Close()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
