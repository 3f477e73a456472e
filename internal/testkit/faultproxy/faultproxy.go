// Package faultproxy is an HTTP proxy that sits in front of one local
// AWS-compatible service (S3, DynamoDB or SQS) and injects faults at fixed
// rates drawn from a fixed seed. The fault-injection test suite points the
// project's clients at a Proxy instead of at MinIO, DynamoDB Local or the
// local SQS server and checks that the code survives what real AWS does
// under load.
//
// # Forwarding
//
// A request that draws no fault is forwarded faithfully: method, path (with
// its original escaping), raw query, headers and body go upstream unchanged,
// and the incoming Host header is kept, because clients sign requests with
// SigV4 over the host they talked to. Request and response bodies are
// streamed, never buffered (except the small form body of an SQS
// query-protocol request, read to find its Action). Client connections are
// HTTP/1.1 keep-alive; a fault that resets a connection affects only that
// connection.
//
// # Faults
//
// One number is drawn per request (under a mutex, from a PCG generator
// seeded with Config.Seed) and mapped onto the fault kinds by their rates:
//   - Throttle: answered without forwarding, in the service's wire format
//     (S3 503 SlowDown, DynamoDB 400 ProvisionedThroughputExceededException,
//     SQS 403 RequestThrottled), codes the AWS SDK's retryer treats as
//     throttling;
//   - ServerError: answered without forwarding with a 500 (S3 InternalError,
//     DynamoDB and SQS InternalFailure);
//   - Reset: the client connection is reset (TCP RST) without an answer and
//     without forwarding;
//   - DropAnswer: the request is forwarded and its answer read and
//     discarded, so the write is applied, and then the client connection is
//     reset: the client sees a failure although the write happened.
//
// Throttle, ServerError and DropAnswer apply to writes only (see IsWrite)
// unless Config.FaultReads is set; Reset applies to every request.
//
// # Observability
//
// Stats reports how many requests and writes were seen and forwarded and how
// many faults of each kind were injected, in total and per operation. Every
// injected fault is logged at debug level.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// Service names the AWS service a Proxy stands in front of; it decides how
// requests are classified and in which wire format faults are answered.
type Service string

// The services a Proxy understands.
const (
	// S3 is Amazon S3 (or MinIO), REST-XML.
	S3 Service = "s3"
	// DynamoDB is Amazon DynamoDB (or DynamoDB Local), AWS JSON 1.0.
	DynamoDB Service = "dynamodb"
	// SQS is Amazon SQS (or a local SQS server), AWS JSON 1.0 or, for old
	// clients, the query protocol.
	SQS Service = "sqs"
)

// Config sets the fault mix of a Proxy. Rates are fractions between 0 and 1
// whose sum is at most 1. The zero Config injects nothing.
type Config struct {
	// Seed seeds the PCG generator the decisions are drawn from.
	Seed uint64
	// ThrottleRate is the fraction of writes answered with a throttling
	// error.
	ThrottleRate float64
	// ServerErrorRate is the fraction of writes answered with a 500.
	ServerErrorRate float64
	// ResetRate is the fraction of all requests whose connection is reset
	// without an answer.
	ResetRate float64
	// DropAnswerRate is the fraction of writes that are applied upstream but
	// whose answer is replaced by a connection reset.
	DropAnswerRate float64
	// FaultReads applies Throttle, ServerError and DropAnswer to reads too.
	FaultReads bool
	// After is the number of requests let through untouched (and without a
	// draw) before faults start, counting every request the proxy receives.
	After int
	// Disabled starts the proxy with fault injection off; SetEnabled(true)
	// turns it on.
	Disabled bool
	// ThrottleCodes are the error codes throttle answers carry, used in turn
	// (so {"ProvisionedThroughputExceededException", "ThrottlingException"}
	// alternates the two). Empty means the service's usual code: SlowDown,
	// ProvisionedThroughputExceededException or RequestThrottled.
	ThrottleCodes []string
}

func (c Config) validate() error {
	rates := []struct {
		name string
		v    float64
	}{
		{"ThrottleRate", c.ThrottleRate}, {"ServerErrorRate", c.ServerErrorRate},
		{"ResetRate", c.ResetRate}, {"DropAnswerRate", c.DropAnswerRate},
	}
	sum := 0.0
	for _, r := range rates {
		if !(r.v >= 0 && r.v <= 1) { // also rejects NaN
			return fmt.Errorf("faultproxy: %s %v is not between 0 and 1", r.name, r.v)
		}
		sum += r.v
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("faultproxy: the fault rates add up to %v, more than 1", sum)
	}
	if c.After < 0 {
		return fmt.Errorf("faultproxy: After %d is negative", c.After)
	}
	for _, code := range c.ThrottleCodes {
		if code == "" {
			return errors.New("faultproxy: ThrottleCodes holds an empty code")
		}
	}
	return nil
}

// Proxy is a fault-injecting reverse proxy for one upstream service. It is
// an http.Handler and safe for concurrent use.
type Proxy struct {
	service   Service
	cfg       Config
	log       *slog.Logger
	target    *url.URL
	transport *http.Transport
	rp        *httputil.ReverseProxy

	mu       sync.Mutex // guards the fields below
	rng      *rand.Rand
	enabled  bool
	seen     int   // requests received, for Config.After
	throttle int   // throttle answers given, to cycle ThrottleCodes
	reqID    int64 // sequence of request ids in injected answers
	stats    Stats

	srvMu sync.Mutex // guards srv and ln
	srv   *http.Server
	ln    net.Listener
}

// New returns a Proxy that forwards to target (an http URL such as
// "http://127.0.0.1:9310") and injects faults into service's traffic as cfg
// says. A nil log discards the proxy's logs.
func New(target string, service Service, cfg Config, log *slog.Logger) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: parse target %q: %w", target, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q is not an http(s) URL with a host", target)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("faultproxy: target %q has a path or query; give scheme and host only", target)
	}
	switch service {
	case S3, DynamoDB, SQS:
	default:
		return nil, fmt.Errorf("faultproxy: unknown service %q", service)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.ThrottleCodes = append([]string(nil), cfg.ThrottleCodes...)
	p := &Proxy{
		service: service,
		cfg:     cfg,
		log:     log.With("service", string(service), "target", u.Host),
		target:  u,
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		enabled: !cfg.Disabled,
	}
	p.stats.init()
	p.transport = &http.Transport{
		Proxy:                 nil, // never through an environment proxy
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          128,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       30 * time.Second,
		DisableCompression:    true, // pass Content-Encoding through untouched
		ExpectContinueTimeout: time.Second,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      p.transport,
		FlushInterval:  -1,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
		ErrorLog:       slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	return p, nil
}

// Start listens on a free port of 127.0.0.1 and serves in the background
// until Close.
func (p *Proxy) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("faultproxy: listen: %w", err)
	}
	srv, err := p.server(ln)
	if err != nil {
		ln.Close()
		return err
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("faultproxy: serve", "err", err)
		}
	}()
	return nil
}

// Serve serves on ln until Close and then returns nil. A Proxy serves at
// most one listener.
func (p *Proxy) Serve(ln net.Listener) error {
	srv, err := p.server(ln)
	if err != nil {
		return err
	}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("faultproxy: serve on %s: %w", ln.Addr(), err)
	}
	return nil
}

func (p *Proxy) server(ln net.Listener) (*http.Server, error) {
	p.srvMu.Lock()
	defer p.srvMu.Unlock()
	if p.srv != nil {
		return nil, errors.New("faultproxy: already serving")
	}
	p.ln = ln
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	return p.srv, nil
}

// URL returns the proxy's base URL, "http://127.0.0.1:port", or "" before
// Start or Serve.
func (p *Proxy) URL() string {
	p.srvMu.Lock()
	defer p.srvMu.Unlock()
	if p.ln == nil {
		return ""
	}
	return "http://" + p.ln.Addr().String()
}

// Close stops the proxy: it closes the listener and every client
// connection, and the idle connections to the upstream.
func (p *Proxy) Close() error {
	p.srvMu.Lock()
	srv := p.srv
	p.srvMu.Unlock()
	var err error
	if srv != nil {
		if cerr := srv.Close(); cerr != nil {
			err = fmt.Errorf("faultproxy: close: %w", cerr)
		}
	}
	p.transport.CloseIdleConnections()
	return err
}

// SetEnabled turns fault injection on or off. While off, every request is
// forwarded untouched and no decision is drawn.
func (p *Proxy) SetEnabled(on bool) {
	p.mu.Lock()
	p.enabled = on
	p.mu.Unlock()
}

// Enabled reports whether fault injection is on.
func (p *Proxy) Enabled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.enabled
}

// drainLimit bounds how much of an unforwarded request's body is read
// before answering, so that the client, still sending, sees the answer
// rather than a broken pipe and the connection can be kept alive.
const drainLimit = 32 << 20

// drain reads and discards what is left of r's body, up to drainLimit. A
// request that expects 100-continue is left alone: the server then answers
// without asking for the body.
func drain(r *http.Request) {
	if r.Body == nil || r.Header.Get("Expect") != "" {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, drainLimit))
}
