// Package upstream holds what the sources that fetch from a map server
// share: an HTTP client that caps concurrent requests per layer, times
// requests out and retries transient failures with backoff, and the image
// pipeline that cuts a fetched metatile into encoded tiles.
package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"tilecache/internal/metrics"
	"tilecache/internal/vectortile"
)

// HTTPOptions configure how a source talks to its upstream. Zero values
// mean the defaults.
type HTTPOptions struct {
	// Timeout bounds one request, body included. Default 60s.
	Timeout time.Duration `yaml:"timeout"`
	// Retries is how many times a transient failure (connection error,
	// timeout, HTTP 5xx or 429) is retried. Default 2; -1 means never.
	Retries int `yaml:"retries"`
	// RetryBackoff is the first wait before a retry; it doubles each time,
	// with jitter, up to 30s. Default 250ms.
	RetryBackoff time.Duration `yaml:"retryBackoff"`
	// MaxConcurrent caps this layer's requests in flight at once, however
	// many seed threads work on it, so seeding cannot overwhelm the map
	// server. Default 4.
	MaxConcurrent int `yaml:"maxConcurrent"`
	// Headers are sent with every request (e.g. an API key or a Referer).
	Headers map[string]string `yaml:"headers"`
	// AllowPrivateUpstream lets the upstream be at any address, loopback
	// and private networks included; only a layer of the layer file may
	// set it (the source passes it on as Addresses.Any).
	AllowPrivateUpstream bool `yaml:"allowPrivateUpstream"`
	// Layer names the layer in metrics (set by the source, not configured).
	Layer string `yaml:"-"`
	// Addresses are those the client may connect to (set by the source,
	// not configured); the zero value refuses every address AddressClass
	// names.
	Addresses AddressPolicy `yaml:"-"`
}

const (
	defaultTimeout       = 60 * time.Second
	defaultRetries       = 2
	defaultRetryBackoff  = 250 * time.Millisecond
	defaultMaxConcurrent = 4
	maxBackoff           = 30 * time.Second
	// maxBody bounds an upstream answer: a 4096² RGBA image is 64 MiB raw.
	maxBody = 256 << 20
)

// Validate reports the first invalid option.
func (o HTTPOptions) Validate() error {
	switch {
	case o.Timeout < 0:
		return fmt.Errorf("timeout %v is negative", o.Timeout)
	case o.Retries < -1:
		return fmt.Errorf("retries %d is below -1", o.Retries)
	case o.RetryBackoff < 0:
		return fmt.Errorf("retryBackoff %v is negative", o.RetryBackoff)
	case o.MaxConcurrent < 0:
		return fmt.Errorf("maxConcurrent %d is negative", o.MaxConcurrent)
	}
	return nil
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.Timeout == 0 {
		o.Timeout = defaultTimeout
	}
	switch o.Retries {
	case 0:
		o.Retries = defaultRetries
	case -1:
		o.Retries = 0
	}
	if o.RetryBackoff == 0 {
		o.RetryBackoff = defaultRetryBackoff
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = defaultMaxConcurrent
	}
	return o
}

// Client fetches from one upstream on behalf of one layer.
type Client struct {
	opts HTTPOptions
	http *http.Client
	sem  chan struct{}
	bufs sync.Pool
}

// MaxConcurrent returns the cap on this layer's requests in flight.
func (c *Client) MaxConcurrent() int { return c.opts.MaxConcurrent }

// NewClient returns a client with the options' defaults applied.
func NewClient(o HTTPOptions) (*Client, error) {
	return newClient(o, net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}, proxyFromEnvironment)
}

// newClient is NewClient connecting with dialer d (its resolver, say)
// through the proxy proxyFor names for a request (nil URL: none).
func newClient(o HTTPOptions, d net.Dialer, proxyFor func(*http.Request) (*url.URL, error)) (*Client, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	// The addresses are checked by the dialer, after the name is resolved
	// and at each connection, redirects included.
	g := newGuard(o.Addresses, d, proxyFor)
	tr := &http.Transport{
		Proxy:               g.proxy,
		DialContext:         g.dial,
		MaxIdleConnsPerHost: o.MaxConcurrent,
		IdleConnTimeout:     90 * time.Second,
		// Images are already compressed; asking for gzip only costs CPU.
		DisableCompression: true,
	}
	return &Client{
		opts: o,
		http: &http.Client{Transport: checkLocation{tr}, CheckRedirect: sameOrigin},
		sem:  make(chan struct{}, o.MaxConcurrent),
	}, nil
}

// errRedirect matches every redirect that was not followed.
var errRedirect = errors.New("redirect not followed")

// redirectError is a redirect that was not followed. Its message names no
// more of the target than its scheme and host.
type redirectError struct {
	status int // the redirect's HTTP status; 0: the response's
	msg    string
}

func (e *redirectError) Error() string        { return errRedirect.Error() + ": " + e.msg }
func (e *redirectError) Is(target error) bool { return target == errRedirect }

// sameOrigin follows a redirect only to the host the request went to (and
// from http to https on it), at most 5 times: the layer's headers (API
// keys, referers) are never sent to another host, and nothing another host
// answers reaches the logs. A redirect it follows keeps the userinfo of a
// relative Location's base; errors after it carry the target's URL, which
// request redacts like the first.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return &redirectError{msg: "more than 5 redirects"}
	}
	from := via[0].URL
	if req.URL.Host != from.Host || (req.URL.Scheme != from.Scheme && (from.Scheme != "http" || req.URL.Scheme != "https")) {
		return &redirectError{msg: fmt.Sprintf("the upstream redirected to another host, %s://%s", req.URL.Scheme, req.URL.Host)}
	}
	return nil
}

// checkLocation refuses a redirect whose Location does not parse before
// the HTTP client sees it: the client's own error for it quotes the
// Location whole, query included, in its message.
type checkLocation struct{ next http.RoundTripper }

func (t checkLocation) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		if loc := resp.Header.Get("Location"); loc != "" {
			if _, err := req.URL.Parse(loc); err != nil {
				resp.Body.Close()
				return nil, &redirectError{status: resp.StatusCode, msg: "the upstream redirected to a Location that does not parse"}
			}
		}
	}
	return resp, nil
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// transport.
func (t checkLocation) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// proxyFromEnvironment is http.ProxyFromEnvironment with an error that
// does not quote the variable's value, which may carry a proxy password.
func proxyFromEnvironment(req *http.Request) (*url.URL, error) {
	u, err := http.ProxyFromEnvironment(req)
	if err != nil {
		return nil, errors.New("the proxy set in the environment (HTTPS_PROXY, HTTP_PROXY) is not a valid URL")
	}
	return u, nil
}

// Options returns the options in force, defaults applied.
func (c *Client) Options() HTTPOptions { return c.opts }

// Error is an upstream answer that is not what was asked for: an HTTP
// error status, a service exception or a body that is not an image.
type Error struct {
	// URL is the request's, redacted (see Redact): whoever makes an Error
	// stores Redact(url), and Error() redacts it again in case.
	URL    string
	Status int    // HTTP status; 200 for an exception delivered as 200
	Msg    string // the upstream's own message, shortened to one line
	retry  bool
}

func (e *Error) Error() string {
	if e.Status != http.StatusOK {
		return fmt.Sprintf("upstream answered HTTP %d: %s (%s)", e.Status, e.Msg, Redact(e.URL))
	}
	return fmt.Sprintf("upstream error: %s (%s)", e.Msg, Redact(e.URL))
}

// Fetch GETs url and hands the body and its Content-Type to use, whose
// body slice is only valid during the call. Transient failures are retried
// per the options; an answer with a status other than 200 is an *Error
// carrying the upstream's message. Its errors name url only redacted (see
// Redact). The concurrency cap covers the request only, not use: decoding
// and encoding do not hold up other requests.
func (c *Client) Fetch(ctx context.Context, url string, use func(body []byte, contentType string) error) error {
	return c.FetchLimited(ctx, url, maxBody, use)
}

// FetchLimited is Fetch for answers of at most limit bytes (capped at 256
// MiB): a longer answer is an *Error, read no further than the limit.
// Sources pass the size the image they asked for can take, so an upstream
// cannot make a process hold more than that per request.
func (c *Client) FetchLimited(ctx context.Context, url string, limit int64, use func(body []byte, contentType string) error) error {
	return c.fetchLimited(ctx, url, limit, "the image", use)
}

// FetchVector is FetchLimited for a vector tile: an answer of at most
// vectortile.MaxSize bytes plus room for headers and an exception report
// (1 MiB).
func (c *Client) FetchVector(ctx context.Context, url string, use func(body []byte, contentType string) error) error {
	return c.fetchLimited(ctx, url, vectortile.MaxSize+1<<20, "the vector tile", use)
}

// fetchLimited is FetchLimited of an answer that is what (for the message
// refusing a longer one).
func (c *Client) fetchLimited(ctx context.Context, url string, limit int64, what string, use func(body []byte, contentType string) error) error {
	limit = min(max(limit, 1), maxBody)
	return c.withRetries(ctx, func() error {
		buf, h, err := c.fetchOnce(ctx, url, limit, what, nil)
		if err != nil {
			return err
		}
		defer c.release(buf)
		return useError{use(buf.Bytes(), h.Get("Content-Type"))}
	})
}

// useError carries the error of what a fetch's caller did with the
// answer, which is never retried.
type useError struct{ err error }

func (e useError) Error() string { return e.err.Error() }

// withRetries calls once until it succeeds, fails in a way that is not
// transient or the retries are spent, waiting the options' backoff (with
// jitter) between calls. A useError ends it with the error it carries.
func (c *Client) withRetries(ctx context.Context, once func() error) error {
	for try := 0; ; try++ {
		err := once()
		if u, ok := err.(useError); ok {
			return u.err
		}
		if err == nil || ctx.Err() != nil || try >= c.opts.Retries || !retryable(err) {
			return err
		}
		wait := min(c.opts.RetryBackoff<<try, maxBackoff)
		wait = wait/2 + rand.N(wait/2+1) // jitter spreads the retries of parallel lanes
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

func retryable(err error) bool {
	if refusedAddress(err) {
		return false // the address will be refused again
	}
	var ue *Error
	if errors.As(err, &ue) {
		return ue.retry
	}
	return true // connection refused or reset, timeout, truncated body
}

func (c *Client) release(buf *bytes.Buffer) {
	if buf.Cap() <= 16<<20 {
		buf.Reset()
		c.bufs.Put(buf)
	}
}

// fetchOnce makes one request, with the extra headers, and reads a 200
// answer (206 to a request with a Range) into a pooled buffer; it returns
// the answer's headers.
func (c *Client) fetchOnce(ctx context.Context, url string, limit int64, what string, extra http.Header) (*bytes.Buffer, http.Header, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	defer func() { <-c.sem }()
	start := time.Now()
	buf, h, err := c.request(ctx, url, limit, what, extra)
	metrics.UpstreamSeconds.Observe(ctx, time.Since(start).Seconds(), c.opts.Layer)
	if err != nil && ctx.Err() == nil {
		metrics.UpstreamErrors.Add(ctx, 1, c.opts.Layer)
	}
	return buf, h, err
}

// request is fetchOnce within the cap. Its errors name the URL redacted:
// the HTTP client's *url.Error, which carries the URL of the request that
// failed with its query, is redacted in place, so errors.Is and errors.As
// still see through it (context.DeadlineExceeded, net.Error).
func (c *Client) request(ctx context.Context, rawURL string, limit int64, what string, extra http.Header) (*bytes.Buffer, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	safe := func() string { return Redact(rawURL) } // on failures only
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		// Not err's message: url.Parse's quotes the URL.
		return nil, nil, &Error{URL: safe(), Msg: "the request URL does not parse"}
	}
	for k, v := range c.opts.Headers {
		req.Header.Set(k, v)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	redactURLErrors(err)
	if re, ok := errors.AsType[*redirectError](err); ok {
		// Not retried: the upstream will redirect again.
		status := re.status
		if status == 0 {
			status = http.StatusFound
			if resp != nil {
				status = resp.StatusCode
			}
		}
		return nil, nil, &Error{URL: safe(), Status: status, Msg: re.msg}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("request %s: %w", safe(), err)
	}
	defer resp.Body.Close()

	buf, _ := c.bufs.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	if resp.ContentLength > limit {
		c.release(buf)
		return nil, nil, &Error{URL: safe(), Status: resp.StatusCode, Msg: fmt.Sprintf("answer of %d bytes, more than the %d %s asked for can take", resp.ContentLength, limit, what)}
	}
	if resp.ContentLength > 0 {
		// bytes.MinRead more: ReadFrom wants that much room for the read
		// that meets the end, and would double a full buffer for it (a
		// 3 MB TIFF metatile allocating and clearing 6 MB more).
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		c.release(buf)
		redactURLErrors(err)
		return nil, nil, fmt.Errorf("read answer of %s: %w", safe(), err)
	}
	if n > limit {
		c.release(buf)
		return nil, nil, &Error{URL: safe(), Status: resp.StatusCode, Msg: fmt.Sprintf("answer larger than %d bytes, more than %s asked for can take", limit, what)}
	}
	if resp.StatusCode != http.StatusOK && (resp.StatusCode != http.StatusPartialContent || extra.Get("Range") == "") {
		e := &Error{
			URL: safe(), Status: resp.StatusCode, Msg: Excerpt(buf.Bytes()),
			retry: resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests,
		}
		c.release(buf)
		return nil, nil, e
	}
	return buf, resp.Header, nil
}

// Excerpt returns a short single-line excerpt of an error body: the text
// of an OGC ServiceException when there is one, else the body's first
// characters with markup and runs of white space removed.
func Excerpt(body []byte) string {
	s := cdata.Replace(string(body[:min(len(body), 4096)]))
	if i := strings.Index(s, "<ServiceException"); i >= 0 {
		if j := strings.IndexByte(s[i:], '>'); j >= 0 {
			rest := s[i+j+1:]
			if k := strings.Index(rest, "</ServiceException"); k >= 0 {
				s = rest[:k]
			}
		}
	}
	var b strings.Builder
	inTag := false
	space := false
	for _, r := range s {
		switch {
		case r == '<':
			inTag = true
		case r == '>':
			inTag = false
			space = true
		case inTag:
		case r == ' ' || r == '\n' || r == '\r' || r == '\t':
			space = true
		case r < 0x20 || r == 0xFFFD:
			// drop binary garbage
		default:
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		}
		if b.Len() >= 300 {
			b.WriteString("…")
			break
		}
	}
	s = strings.TrimSpace(b.String())
	if s == "" {
		return "(empty body)"
	}
	return s
}

var cdata = strings.NewReplacer("<![CDATA[", "", "]]>", "")

// DecodeOptions decodes a layer's source mapping into v, rejecting keys v
// does not know, so that a misspelt option is an error rather than
// silently ignored.
func DecodeOptions(node *yaml.Node, v any) error {
	if node == nil || node.Kind == 0 {
		return fmt.Errorf("the source mapping is empty")
	}
	raw, err := yaml.Marshal(node)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	return dec.Decode(v)
}
