// Package browsertest opens pages in a real headless Chromium (Debian's
// chromium package, driven over the DevTools protocol by chromedp) for
// end-to-end tests of what the program serves to browsers. It records
// what a page logs, throws and requests, and takes screenshots.
package browsertest

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Path returns the Chromium to run: $TILECACHE_CHROMIUM, else
// /usr/bin/chromium.
func Path() string {
	if p := os.Getenv("TILECACHE_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// Request is a request the page made and the status of its answer (0 when
// none came).
type Request struct {
	URL    string
	Status int64
}

// Page is a browser tab. Its methods fail the test on errors.
type Page struct {
	ctx context.Context

	mu       sync.Mutex
	console  []string // console messages of type error or warning, and uncaught exceptions
	requests []Request
	byID     map[network.RequestID]int
	budget   chan struct{} // closed when the virtual time budget RunVirtualTime set is spent
	changed  chan struct{} // closed (and replaced) when requests gains a request or an answer
}

// Open starts a headless Chromium with a fresh profile, opens url and
// returns the page; the browser stops when the test ends. Flags: headless,
// no sandbox (tests run as root), no GPU, and none of the background
// networking Chromium does on its own (it would try hosts this machine
// cannot reach).
func Open(t testing.TB, url string, timeout time.Duration) *Page {
	t.Helper()
	return OpenWithHeaders(t, url, timeout, nil)
}

// OpenWithHeaders is Open with HTTP headers sent with every request of
// the tab (e.g. Authorization), set before the page loads.
func OpenWithHeaders(t testing.TB, url string, timeout time.Duration, headers map[string]string) *Page {
	t.Helper()
	return open(t, url, timeout, headers)
}

// open is OpenWithHeaders with more Chromium flags.
func open(t testing.TB, url string, timeout time.Duration, headers map[string]string, flags ...chromedp.ExecAllocatorOption) *Page {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Path()),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.WindowSize(1024, 768),
	}
	opts = append(opts, flags...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	p := &Page{byID: map[network.RequestID]int{}, changed: make(chan struct{})}
	// The listener sees every event from the tab's first one on.
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(p.listen))
	ctx, cancelTime := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	p.ctx = ctx
	if len(headers) > 0 {
		h := network.Headers{}
		for k, v := range headers {
			h[k] = v
		}
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			t.Fatalf("enable network: %v", err)
		}
		if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h}); err != nil {
			t.Fatalf("set headers: %v", err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s in %s: %v", url, Path(), err)
	}
	return p
}

func (p *Page) listen(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			msg := string(ev.Type) + ":"
			for _, a := range ev.Args {
				msg += " " + string(a.Value) + a.Description
			}
			p.console = append(p.console, msg)
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := "exception: " + d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		p.console = append(p.console, msg)
	case *emulation.EventVirtualTimeBudgetExpired:
		if p.budget != nil {
			close(p.budget)
			p.budget = nil
		}
	case *network.EventRequestWillBeSent:
		p.byID[ev.RequestID] = len(p.requests)
		p.requests = append(p.requests, Request{URL: ev.Request.URL})
		p.notify()
	case *network.EventResponseReceived:
		if i, ok := p.byID[ev.RequestID]; ok {
			p.requests[i].Status = ev.Response.Status
			p.notify()
		}
	}
}

// notify wakes the WaitRequests waiting; p.mu is held.
func (p *Page) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Console returns the error and warning messages logged and the uncaught
// exceptions so far.
func (p *Page) Console() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.console...)
}

// Requests returns the requests made so far, in order.
func (p *Page) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

// WaitRequests waits until cond holds of the requests made so far (as
// Requests returns them), checking it at once and again at each request
// made or answered, for at most d. It reports whether cond held.
func (p *Page) WaitRequests(d time.Duration, cond func([]Request) bool) bool {
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	for {
		p.mu.Lock()
		reqs, changed := append([]Request(nil), p.requests...), p.changed
		p.mu.Unlock()
		if cond(reqs) {
			return true
		}
		select {
		case <-changed:
		case <-timeout.C:
			return false
		case <-p.ctx.Done():
			return false
		}
	}
}

// Ctx returns the tab's context, for chromedp actions Do and Eval do not
// cover (e.g. an evaluation awaiting a promise).
func (p *Page) Ctx() context.Context { return p.ctx }

// Do runs chromedp actions in the page.
func (p *Page) Do(t testing.TB, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		t.Fatalf("%s: %v (console: %q)", what, err, p.Console())
	}
}

// Eval evaluates a JavaScript expression whose value is a string (use
// JSON.stringify for more) and returns it.
func (p *Page) Eval(t testing.TB, expr string) string {
	t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v (console: %q)", expr, err, p.Console())
	}
	return v
}

// Await evaluates a JavaScript expression whose value is a promise of a
// string, waits for at most d until it settles and returns its value.
// timedOut is true when it had not settled by then; a rejection fails the
// test.
func (p *Page) Await(t testing.TB, expr string, d time.Duration) (v string, timedOut bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, d)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if errors.Is(err, context.DeadlineExceeded) && p.ctx.Err() == nil {
		return "", true
	}
	if err != nil {
		t.Fatalf("evaluate %s: %v (console: %q)", expr, err, p.Console())
	}
	return v, false
}

// WaitFor waits until the first element matching a CSS selector is
// visible.
func (p *Page) WaitFor(t testing.TB, selector string) {
	t.Helper()
	p.Do(t, "wait for "+selector, chromedp.WaitVisible(chromedp.CSS(selector)))
}

// RunVirtualTime lets d of the page's time pass on Chromium's virtual
// clock: its timers fire, and Date.now and performance.now move, as if d
// had passed, in the real time the page's work takes. The clock stands
// still while one of the page's requests is waiting for its answer, so
// every request made meanwhile is answered by the real server in the
// page's order. After d the page's clock stays paused until the next
// call: use it for a behaviour over a span of time (e.g. how often an
// idle page polls), after the steps that need the page's clock to run
// with the real one.
func (p *Page) RunVirtualTime(t testing.TB, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	p.mu.Lock()
	p.budget = done
	p.mu.Unlock()
	budget := float64(d.Milliseconds())
	if _, err := chromedp.Call(p.ctx, emulation.SetVirtualTimePolicy, emulation.SetVirtualTimePolicyParams{
		Policy: emulation.VirtualTimePolicyPauseIfNetworkFetchesPending,
		Budget: &budget,
	}); err != nil {
		t.Fatalf("virtual time: %v", err)
	}
	select {
	case <-done:
	case <-p.ctx.Done():
		t.Fatalf("%v of virtual time did not pass: %v (console: %q)", d, p.ctx.Err(), p.Console())
	}
}

// Screenshot returns a PNG of the viewport (CSS pixels at scale 1, so
// getBoundingClientRect coordinates are pixel coordinates in it).
func (p *Page) Screenshot(t testing.TB) []byte {
	t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return png
}
