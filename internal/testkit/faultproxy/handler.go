package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
)

// Fault is a kind of fault the proxy injects.
type Fault int

// The fault kinds, in the order their rates partition a draw.
const (
	// None forwards the request untouched.
	None Fault = iota
	// Throttle answers with the service's throttling error, not forwarded.
	Throttle
	// ServerError answers with the service's internal error (500), not
	// forwarded.
	ServerError
	// Reset resets the client connection without an answer, not forwarded.
	Reset
	// DropAnswer forwards, discards the answer and resets the client
	// connection.
	DropAnswer
)

// String returns the fault's name as used in logs and reports.
func (f Fault) String() string {
	switch f {
	case None:
		return "none"
	case Throttle:
		return "throttle"
	case ServerError:
		return "server-error"
	case Reset:
		return "reset"
	case DropAnswer:
		return "drop-answer"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// appliesToReads reports whether f may hit a read without Config.FaultReads.
func (f Fault) appliesToReads() bool { return f == None || f == Reset }

// errDropAnswer is returned by modifyResponse after discarding an answer,
// so that errorHandler resets the client connection.
var errDropAnswer = errors.New("faultproxy: answer dropped")

type dropKey struct{}

// ServeHTTP classifies r, draws its fault and either answers it, resets its
// connection or forwards it upstream.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := p.classify(r)
	fault := p.decide(op)
	log := p.log
	if fault != None {
		log = log.With("op", op.Name, "fault", fault.String(), "method", r.Method, "path", r.URL.Path)
		log.DebugContext(r.Context(), "faultproxy: injecting fault")
	}
	switch fault {
	case Throttle, ServerError:
		drain(r)
		p.answer(w, r, op, fault)
	case Reset:
		if err := resetConn(w); err != nil {
			log.WarnContext(r.Context(), "faultproxy: reset connection", "err", err)
		}
	case DropAnswer:
		p.countForward(op)
		r = r.WithContext(context.WithValue(r.Context(), dropKey{}, op))
		p.rp.ServeHTTP(w, r)
	default:
		p.countForward(op)
		p.rp.ServeHTTP(w, r)
	}
}

// decide draws the fault for one request: one number per request once
// faults are active, mapped onto the rates in the order of the Fault
// constants. Faults that do not apply to op are dropped after the draw, so
// the sequence of draws does not depend on the mix of reads and writes.
func (p *Proxy) decide(op operation) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests++
	o := p.stats.ByOp[op.Name]
	o.Requests++
	if op.Write {
		p.stats.Writes++
		o.Writes++
	}
	p.stats.ByOp[op.Name] = o
	p.seen++
	if !p.enabled || p.seen <= p.cfg.After {
		return None
	}
	u := p.rng.Float64()
	fault := None
	for _, c := range []struct {
		f    Fault
		rate float64
	}{
		{Throttle, p.cfg.ThrottleRate}, {ServerError, p.cfg.ServerErrorRate},
		{Reset, p.cfg.ResetRate}, {DropAnswer, p.cfg.DropAnswerRate},
	} {
		if u < c.rate {
			fault = c.f
			break
		}
		u -= c.rate
	}
	if !op.Write && !p.cfg.FaultReads && !fault.appliesToReads() {
		return None
	}
	if fault != None && fault != DropAnswer { // DropAnswer counts once the answer is gone
		p.stats.count(op.Name, fault)
	}
	return fault
}

func (p *Proxy) countForward(op operation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Forwarded++
	o := p.stats.ByOp[op.Name]
	o.Forwarded++
	if op.Write {
		p.stats.ForwardedWrites++
	}
	p.stats.ByOp[op.Name] = o
}

// rewrite points the outbound request at the upstream and keeps everything
// else as the client sent it: the Host header the client signed, the path
// with its original escaping and the raw query.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.Out.URL.Scheme = p.target.Scheme
	pr.Out.URL.Host = p.target.Host
	pr.Out.URL.Path = pr.In.URL.Path
	pr.Out.URL.RawPath = pr.In.URL.RawPath
	pr.Out.URL.RawQuery = pr.In.URL.RawQuery
	pr.Out.Host = pr.In.Host
}

// modifyResponse discards the answer of a DropAnswer request, so that it
// is applied upstream but never reaches the client.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	op, ok := resp.Request.Context().Value(dropKey{}).(operation)
	if !ok {
		return nil
	}
	_, err := discard(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("faultproxy: read the answer to drop: %w", err)
	}
	p.mu.Lock()
	p.stats.count(op.Name, DropAnswer)
	p.mu.Unlock()
	return errDropAnswer
}

// errorHandler resets the connection of a dropped answer and answers 502
// when the upstream could not be reached.
func (p *Proxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errDropAnswer) {
		if rerr := resetConn(w); rerr != nil {
			p.log.WarnContext(r.Context(), "faultproxy: reset connection after dropping the answer", "err", rerr)
		}
		return
	}
	p.mu.Lock()
	p.stats.UpstreamErrors++
	p.mu.Unlock()
	if r.Context().Err() != nil { // the client went away
		p.log.DebugContext(r.Context(), "faultproxy: client gone", "method", r.Method, "path", r.URL.Path, "err", err)
		return
	}
	p.log.WarnContext(r.Context(), "faultproxy: upstream failed", "method", r.Method, "path", r.URL.Path, "err", err)
	w.WriteHeader(http.StatusBadGateway)
}

// resetConn takes over the client connection and closes it with a TCP RST
// (SO_LINGER 0), so the client sees "connection reset by peer" and no
// answer. A connection that is not TCP is merely closed; one that cannot be
// hijacked (HTTP/2) is dropped by panicking with http.ErrAbortHandler.
func resetConn(w http.ResponseWriter) error {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Cannot take the connection over (HTTP/2): abort the handler,
		// which makes the server drop the stream without an answer.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		if err := tc.SetLinger(0); err != nil {
			conn.Close()
			return fmt.Errorf("set linger 0: %w", err)
		}
	}
	if err := conn.Close(); err != nil {
		return fmt.Errorf("close hijacked connection: %w", err)
	}
	return nil
}
