package audit

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Identity tells who the request was authenticated as: an account (or,
// later, a token id) and its role. It is called by Identify, inside the
// authentication middleware.
type Identity func(r *http.Request) (account, role string)

// Address returns the client address of a request (auth.ClientAddress).
type Address func(r *http.Request) string

// Refusal aggregation.
const (
	// RefusalWindow: after a refusal from an address is written, the
	// address's further refusals within this window make one record,
	// written when the window ends, carrying their count.
	RefusalWindow = 10 * time.Second
	// MaxRefusalAddresses bounds the addresses whose windows are open;
	// refusals from further addresses share one window (address "*").
	MaxRefusalAddresses = 4096
	// writeTimeout bounds one append.
	writeTimeout = 10 * time.Second
)

// Recorder is the middleware that leaves the audit trail: exactly one
// record per state-changing request (any method but GET, HEAD and OPTIONS)
// and refused requests (401, 403, 429, any method), aggregated per
// address. Records are appended synchronously after the handler returned,
// before the answer leaves (a small answer is buffered until then), so
// that none is lost; aggregated refusals are appended when their window
// ends and by Flush.
type Recorder struct {
	store   Store
	who     Identity
	address Address
	log     *slog.Logger
	clock   func() time.Time
	window  time.Duration
	maxAddr int

	mu      sync.Mutex
	windows map[string]*refusals
	timer   *time.Timer // flushes the windows when the first pending one ends
}

// refusals is one address's window: opened by a refusal written at once,
// counting those that followed (n) until it ends.
type refusals struct {
	end  time.Time
	n    int
	last Record // the latest refusal counted
}

// Option adjusts a Recorder.
type Option func(*Recorder)

// WithClock sets the Recorder's clock (time.Now by default).
func WithClock(now func() time.Time) Option { return func(r *Recorder) { r.clock = now } }

// WithRefusalWindow sets the refusal window (RefusalWindow by default)
// and the most addresses with one open (MaxRefusalAddresses).
func WithRefusalWindow(d time.Duration, maxAddresses int) Option {
	return func(r *Recorder) { r.window, r.maxAddr = d, maxAddresses }
}

// NewRecorder returns a Recorder appending to store; who identifies
// authenticated requests (see Identify) and address gives a request's
// client address.
func NewRecorder(store Store, who Identity, address Address, log *slog.Logger, opts ...Option) *Recorder {
	r := &Recorder{store: store, who: who, address: address, log: log, clock: time.Now,
		window: RefusalWindow, maxAddr: MaxRefusalAddresses, windows: map[string]*refusals{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Store returns the store the Recorder appends to.
func (rec *Recorder) Store() Store { return rec.store }

// Identify returns next behind a step that tells the Recorder who the
// request was authenticated as (through the Identity); place it inside
// the authentication middleware.
func (rec *Recorder) Identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n, ok := r.Context().Value(noteKey{}).(*note); ok {
			n.account, n.role = rec.who(r)
			n.identified = true
		}
		next.ServeHTTP(w, r)
	})
}

// Scope is the paths below the base path whose requests are recorded:
// the administration interface and the console.
var Scope = []string{"/rest", "/console"}

// inScope returns path below base if it is in Scope.
func inScope(base, path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, base)
	if !ok {
		return "", false
	}
	for _, p := range Scope {
		if rest == p || strings.HasPrefix(rest, p+"/") {
			return rest, true
		}
	}
	return "", false
}

// Wrap returns next behind the Recorder, which records the requests to
// paths in Scope below base (paths recorded without base) and passes any
// other untouched. Place it outside the authentication middleware and
// whatever else may refuse a request (the cross-site guard).
func (rec *Recorder) Wrap(base string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, ok := inScope(base, r.URL.Path)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		at := rec.clock().UTC()
		n := &note{}
		cw := &capture{ResponseWriter: w}
		defer func() {
			// A handler that panicked answered nothing yet: recorded as
			// the 500 the server's recovery makes of it.
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler && cw.status == 0 {
					cw.status = http.StatusInternalServerError
					cw.body.WriteString("the handler failed (panic; see the server log)")
				}
				rec.finish(base, path, at, r, n, cw)
				panic(p)
			}
		}()
		next.ServeHTTP(cw, r.WithContext(context.WithValue(r.Context(), noteKey{}, n)))
		rec.finish(base, path, at, r, n, cw)
	})
}

// finish records request r (path below base, arrived at at) once its
// handler returned, if it is a change or was refused.
func (rec *Recorder) finish(base, path string, at time.Time, r *http.Request, n *note, cw *capture) {
	status := cw.status
	if status == 0 {
		status = http.StatusOK
	}
	refused := Refused(status)
	if !refused && (r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions) {
		return
	}
	rc := Record{At: at, Address: rec.address(r), Method: r.Method, Path: path,
		Layer: n.layer, Tasks: n.tasks, Status: status}
	if n.identified {
		rc.Account, rc.Role = n.account, n.role
	} else if name, _, ok := r.BasicAuth(); ok {
		rc.Account, rc.Unverified = name, true
	}
	if rc.Layer == "" {
		if escaped, ok := inScope(base, r.URL.EscapedPath()); ok {
			rc.Layer = PathLayer(escaped)
		}
	}
	if status >= 400 {
		rc.Message = cw.message()
	}
	// The request's own context may end with its client: the record is
	// still due.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), writeTimeout)
	defer cancel()
	if refused {
		rec.refused(ctx, rc)
		return
	}
	rec.append(ctx, rc)
}

func (rec *Recorder) append(ctx context.Context, rc Record) {
	if err := rec.store.Append(ctx, rc); err != nil {
		rec.log.Error("audit record not written", "err", err, "method", rc.Method, "path", rc.Path,
			"account", rc.Account, "status", rc.Status, "count", rc.Count)
	}
}

// refused writes rc at once if its address has no open window (opening
// one), or counts it in the open one.
func (rec *Recorder) refused(ctx context.Context, rc Record) {
	rc.Count = 1
	now := rec.clock()
	var due []Record
	rec.mu.Lock()
	due = rec.takeDue(now)
	key := rc.Address
	if _, open := rec.windows[key]; !open && len(rec.windows) >= rec.maxAddr {
		key = "*"
	}
	win, open := rec.windows[key]
	if open {
		win.n++
		win.last = rc
		if key == "*" {
			win.last.Address = "*"
		}
		rec.arm(now)
	} else {
		rec.windows[key] = &refusals{end: now.Add(rec.window)}
		if key == "*" {
			rc.Address = "*"
		}
	}
	rec.mu.Unlock()
	for _, d := range due {
		rec.append(ctx, d)
	}
	if !open {
		rec.append(ctx, rc)
	}
}

// takeDue closes the windows that ended by now and returns the records of
// those that counted refusals. rec.mu is held.
func (rec *Recorder) takeDue(now time.Time) []Record {
	var out []Record
	for k, w := range rec.windows {
		if now.Before(w.end) {
			continue
		}
		if w.n > 0 {
			d := w.last
			d.Count = w.n
			out = append(out, d)
		}
		delete(rec.windows, k)
	}
	return out
}

// arm makes sure a timer flushes the windows once the earliest one with
// pending refusals ends. rec.mu is held.
func (rec *Recorder) arm(now time.Time) {
	if rec.timer != nil {
		return
	}
	var first time.Time
	for _, w := range rec.windows {
		if w.n > 0 && (first.IsZero() || w.end.Before(first)) {
			first = w.end
		}
	}
	if first.IsZero() {
		return
	}
	rec.timer = time.AfterFunc(first.Sub(now), func() {
		rec.mu.Lock()
		rec.timer = nil
		due := rec.takeDue(rec.clock())
		rec.arm(rec.clock())
		rec.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		defer cancel()
		for _, d := range due {
			rec.append(ctx, d)
		}
	})
}

// Flush writes the refusals counted in open windows now (each window's
// count so far, the window staying open): before a listing, so that it
// shows every refusal counted, and at shutdown.
func (rec *Recorder) Flush(ctx context.Context) {
	rec.mu.Lock()
	var out []Record
	for _, w := range rec.windows {
		if w.n > 0 {
			d := w.last
			d.Count = w.n
			out = append(out, d)
			w.n = 0
		}
	}
	rec.mu.Unlock()
	for _, d := range out {
		rec.append(ctx, d)
	}
}

// Close stops the timer and flushes.
func (rec *Recorder) Close(ctx context.Context) {
	rec.mu.Lock()
	if rec.timer != nil {
		rec.timer.Stop()
		rec.timer = nil
	}
	rec.mu.Unlock()
	rec.Flush(ctx)
}

// PathLayer is the layer named in an administration path (escaped, as
// the REST interface reads it; not /rest/layers/from-capabilities.json):
// /rest/seed/{layer}…,
// /rest/layers/{layer}…, /rest/estimate/{layer}…, /rest/diskquota/pages/{layer}…;
// "" for any other.
func PathLayer(path string) string {
	if path == "/rest/layers/from-capabilities.json" {
		return ""
	}
	for _, p := range []string{"/rest/seed/", "/rest/layers/", "/rest/estimate/", "/rest/diskquota/pages/"} {
		raw, ok := strings.CutPrefix(path, p)
		if !ok || raw == "" {
			continue
		}
		raw, _, _ = strings.Cut(raw, "/")
		for _, s := range []string{".json", ".xml"} {
			raw = strings.TrimSuffix(raw, s)
		}
		if name, err := url.PathUnescape(strings.ReplaceAll(raw, "+", "%20")); err == nil {
			return name
		}
	}
	return ""
}

// capture keeps the status and the start of a failure's body.
type capture struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *capture) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if c.status >= 400 && c.body.Len() < MaxMessage {
		c.body.Write(p[:min(len(p), MaxMessage-c.body.Len())])
	}
	return c.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the writer's Flush and
// deadlines.
func (c *capture) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// message is the failure's body on one line, at most MaxMessage bytes.
func (c *capture) message() string {
	s := strings.Join(strings.Fields(c.body.String()), " ")
	if len(s) > MaxMessage {
		s = s[:MaxMessage]
	}
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
