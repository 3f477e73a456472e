package lambdatest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// rieInvokePath is where the emulator takes invocations, as the Lambda
// Invoke API does (function name "function").
const rieInvokePath = "/2015-03-31/functions/function/invocations"

// Function is a function to run under the emulator.
type Function struct {
	// Bootstrap is the function's executable (see Bootstrap).
	Bootstrap string
	// Name is AWS_LAMBDA_FUNCTION_NAME: the function's name in its logs
	// and the Function dimension of its EMF lines. "tilecache-test" when
	// empty.
	Name string
	// Env is the function's configuration, as template.yaml sets it (see
	// Env). The TILECACHE_* variables of this process are not passed on;
	// its other variables (the local stack's AWS endpoints and
	// credentials) are, as Lambda passes the execution role's.
	Env map[string]string
	// Timeout is the function timeout: each invocation's deadline. The
	// emulator counts whole seconds (AWS_LAMBDA_FUNCTION_TIMEOUT); a
	// minute when zero.
	Timeout time.Duration
}

// RIE is one execution environment of a function: the Lambda Runtime
// Interface Emulator (the real Runtime API, built by RIEBinary) running the
// function's bootstrap on free loopback ports. As in Lambda, the bootstrap
// starts (cold start) with the first invocation, serves one invocation at
// a time and stays up for the next; a bootstrap that exits is started
// again by the next invocation. Stdout and stderr of the emulator and of
// the bootstrap are collected (Log), so that tests read the function's log
// lines and EMF metrics where CloudWatch Logs would.
type RIE struct {
	// URL is the invocation endpoint.
	URL string

	fn       Function
	timeout  time.Duration
	cmd      *exec.Cmd
	exited   chan struct{}
	out      *os.File
	readDone chan struct{}
	invoke   sync.Mutex // one invocation at a time, as in one execution environment

	mu    sync.Mutex
	lines []string
	grew  chan struct{} // closed (and replaced) when lines grow
}

// StartRIE starts fn under the emulator and stops both when the test ends.
// It needs the RIE binary (RIEBinary: skips or fails when it cannot be
// built).
func StartRIE(t testing.TB, fn Function) *RIE {
	t.Helper()
	bin := RIEBinary(t)
	if fn.Timeout == 0 {
		fn.Timeout = time.Minute
	}
	if fn.Timeout%time.Second != 0 {
		t.Fatalf("StartRIE: timeout %v: the emulator takes whole seconds", fn.Timeout)
	}
	if fn.Name == "" {
		fn.Name = "tilecache-test"
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		// The emulator passes its whole environment to the function; it
		// sets the AWS_LAMBDA_* variables itself, LOG_LEVEL is its own.
		if strings.HasPrefix(name, "TILECACHE_") || strings.HasPrefix(name, "AWS_LAMBDA_") || name == "_HANDLER" || name == "LOG_LEVEL" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "AWS_LAMBDA_FUNCTION_NAME="+fn.Name, "AWS_LAMBDA_FUNCTION_VERSION=$LATEST", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
		"AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int(fn.Timeout/time.Second)), "_HANDLER=bootstrap", "TZ=:UTC")
	for k, v := range fn.Env {
		env = append(env, k+"="+v)
	}
	dir := t.TempDir() // the function's working directory (/var/task in Lambda)
	var last string
	for range 3 { // a free port can be taken between probe and use: try again
		r, err := startRIE(bin, fn, env, dir)
		if err == nil {
			t.Cleanup(func() {
				r.stop()
				if t.Failed() {
					t.Logf("%s under the Lambda Runtime Interface Emulator, output:\n%s", fn.Name, tail(r.Log(), 200))
				}
			})
			return r
		}
		last = err.Error()
	}
	t.Fatalf("start the Lambda Runtime Interface Emulator for %s: %s", fn.Name, last)
	return nil
}

func startRIE(bin string, fn Function, env []string, dir string) (*RIE, error) {
	addrs, err := freeLoopbackAddrs(2)
	if err != nil {
		return nil, err
	}
	addr, apiAddr := addrs[0], addrs[1] // invocations; the Runtime API the bootstrap calls
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--runtime-interface-emulator-address", addr, "--runtime-api-address", apiAddr, fn.Bootstrap)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	pw.Close() // the emulator and the bootstrap hold it
	r := &RIE{URL: "http://" + addr + rieInvokePath, fn: fn, timeout: fn.Timeout, cmd: cmd, exited: make(chan struct{}),
		out: pr, readDone: make(chan struct{}), grew: make(chan struct{})}
	go func() { cmd.Wait(); close(r.exited) }()
	go r.read()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-r.exited:
			r.stop()
			return nil, fmt.Errorf("the emulator exited at start (%v):\n%s", cmd.ProcessState, tail(r.Log(), 20))
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return r, nil
		}
		if time.Now().After(deadline) {
			r.stop()
			return nil, fmt.Errorf("the emulator did not listen on %s within 10 s:\n%s", addr, tail(r.Log(), 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freeLoopbackAddrs returns n distinct addresses 127.0.0.1:port of ports
// free now.
func freeLoopbackAddrs(n int) ([]string, error) {
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("no free loopback port: %w", err)
		}
		defer ln.Close() // held until all are chosen, so that they differ
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

func (r *RIE) read() {
	defer close(r.readDone)
	sc := bufio.NewScanner(r.out)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		r.mu.Lock()
		r.lines = append(r.lines, sc.Text())
		close(r.grew)
		r.grew = make(chan struct{})
		r.mu.Unlock()
	}
}

// stop ends the emulator (SIGTERM: it kills the bootstrap) and, should it
// not end in time, it and the bootstrap it started (SIGKILL).
func (r *RIE) stop() {
	pid := r.cmd.Process.Pid
	children := childrenOf(pid) // the bootstrap, before it is orphaned
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(5 * time.Second):
		r.cmd.Process.Kill()
		<-r.exited
	}
	for _, c := range children {
		if cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(c) + "/cmdline"); err == nil && strings.HasPrefix(string(cmdline), r.fn.Bootstrap+"\x00") {
			syscall.Kill(c, syscall.SIGKILL)
		}
	}
	select {
	case <-r.readDone:
	case <-time.After(2 * time.Second):
	}
	r.out.Close()
}

// childrenOf returns the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if f := strings.Fields(string(stat[i+1:])); i >= 0 && len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

func tail(lines []string, n int) string {
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// Log returns the output lines of the emulator and the function so far.
func (r *RIE) Log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// waitLine waits until a line at or after index from matches, and returns
// the index of the first that does, or -1 after timeout or once the
// output ended without one.
func (r *RIE) waitLine(from int, timeout time.Duration, match func(string) bool) int {
	deadline := time.After(timeout)
	for ended := false; ; {
		r.mu.Lock()
		for i := from; i < len(r.lines); i++ {
			if match(r.lines[i]) {
				r.mu.Unlock()
				return i
			}
		}
		from = max(from, len(r.lines))
		grew := r.grew
		r.mu.Unlock()
		if ended {
			return -1
		}
		select {
		case <-grew:
		case <-r.readDone:
			ended = true // look at the last lines once more
		case <-deadline:
			return -1
		}
	}
}

// Invocation is the outcome of one invocation under the emulator.
type Invocation struct {
	RequestID string
	// Status is the emulator's HTTP status: 200 for the function's
	// response and for its error (as the Lambda Invoke API answers), 502
	// when the runtime failed (an init that exited, a crash).
	Status int
	// Body is the function's response, its error document or, for a
	// timeout, the emulator's "Task timed out after …".
	Body []byte
	// Error is the error the function reported (errorType, errorMessage),
	// or Sandbox.Timedout for a timeout; nil for a response.
	Error *FunctionError
	// Log is this invocation's part of the output, from the emulator's
	// START line to its REPORT line (or to its report of the failure): the
	// function's log lines and EMF lines and the emulator's own.
	Log []string
	// Elapsed is the time from the request to the answer; Init, for the
	// invocation that started the bootstrap, the init phase as the
	// emulator measured it (INIT REPORT: process start to the first
	// request for the next invocation).
	Elapsed, Init time.Duration
}

// FunctionError is the error document of a function's failed invocation.
type FunctionError struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
}

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// Invoke invokes the function with event (JSON) and returns the outcome,
// failing the test only when the emulator cannot be reached.
func (r *RIE) Invoke(t testing.TB, event []byte) Invocation {
	t.Helper()
	inv, err := r.invokeCtx(t.Context(), event)
	if err != nil {
		t.Fatalf("invoke %s: %v\n%s", r.fn.Name, err, tail(r.Log(), 50))
	}
	return inv
}

func (r *RIE) invokeCtx(ctx context.Context, event []byte) (Invocation, error) {
	r.invoke.Lock()
	defer r.invoke.Unlock()
	id := requestID()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(event))
	if err != nil {
		return Invocation{}, err
	}
	req.Header.Set("X-Amzn-RequestId", id)
	req.Header.Set("Content-Type", "application/json")
	r.mu.Lock()
	from := len(r.lines)
	r.mu.Unlock()
	client := &http.Client{Timeout: r.timeout + 30*time.Second} // init has its own 10 s in Lambda
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return Invocation{}, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return Invocation{}, err
	}
	inv := Invocation{RequestID: id, Status: res.StatusCode, Body: body, Elapsed: time.Since(start)}

	// The emulator prints its report before it answers; wait until this
	// process has read it.
	first := r.waitLine(from, 5*time.Second, func(l string) bool { return strings.HasPrefix(l, "START RequestId: "+id+" ") })
	end := -1
	if first >= 0 {
		end = r.waitLine(first, 5*time.Second, func(l string) bool {
			return strings.HasPrefix(l, "REPORT RequestId: "+id) || strings.Contains(l, "Invoke DONE failed")
		})
	}
	lines := r.Log()
	switch {
	case first < 0:
		inv.Log = lines[min(from, len(lines)):]
	case end < 0:
		inv.Log = lines[first:]
	default:
		inv.Log = lines[first : end+1]
	}
	for _, l := range inv.Log {
		if _, rest, ok := strings.Cut(l, "INIT REPORT(durationMs: "); ok {
			ms, _ := strconv.ParseFloat(strings.TrimSuffix(rest, ")"), 64)
			inv.Init = time.Duration(ms * float64(time.Millisecond))
			break
		}
	}
	if inv.Status == http.StatusOK {
		inv.Error = errorDocument(body)
	}
	return inv, nil
}

// errorDocument returns the error an invocation's answer reports, or nil
// when it is a response: the runtime's {"errorMessage", "errorType"
// [, "stackTrace"]} document, or the emulator's timeout message.
func errorDocument(body []byte) *FunctionError {
	if msg, ok := bytes.CutPrefix(body, []byte("Task timed out after ")); ok {
		return &FunctionError{Type: "Sandbox.Timedout", Message: "Task timed out after " + string(msg)}
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil || doc["errorMessage"] == nil || doc["errorType"] == nil {
		return nil
	}
	for k := range doc {
		if k != "errorMessage" && k != "errorType" && k != "stackTrace" {
			return nil
		}
	}
	var e FunctionError
	if json.Unmarshal(body, &e) != nil {
		return nil
	}
	return &e
}

// requestID returns a new random invocation id (a version 4 UUID).
func requestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Decode fails the test unless the invocation answered with a response,
// which it decodes into v.
func (inv Invocation) Decode(t testing.TB, v any) {
	t.Helper()
	if err := inv.err(); err != nil {
		t.Fatalf("invocation %s: %v\n%s", inv.RequestID, err, strings.Join(inv.Log, "\n"))
	}
	if err := json.Unmarshal(inv.Body, v); err != nil {
		t.Fatalf("invocation %s: decode the response %.300q: %v", inv.RequestID, inv.Body, err)
	}
}

func (inv Invocation) err() error {
	if inv.Status != http.StatusOK {
		return fmt.Errorf("the emulator answered %d %.300q", inv.Status, inv.Body)
	}
	if inv.Error != nil {
		return fmt.Errorf("the function failed: %w", inv.Error)
	}
	return nil
}

// InvokeJSON invokes the function with event encoded as JSON and decodes
// its response into res, failing the test unless it answered.
func (r *RIE) InvokeJSON(t testing.TB, event, res any) Invocation {
	t.Helper()
	data, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	inv := r.Invoke(t, data)
	inv.Decode(t, res)
	return inv
}

// SQSHandler is a Handler (for EventSource) that invokes the function under
// r with each SQS event. The invocation's deadline is the function's
// Timeout, not ctx's: give the EventSource the same Timeout.
func (r *RIE) SQSHandler() Handler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var res events.SQSEventResponse
		data, err := json.Marshal(ev)
		if err != nil {
			return res, err
		}
		inv, err := r.invokeCtx(ctx, data)
		if err != nil {
			return res, err
		}
		if err := inv.err(); err != nil {
			return res, fmt.Errorf("invocation %s: %w", inv.RequestID, err)
		}
		return res, json.Unmarshal(inv.Body, &res)
	}
}

// EMF returns the CloudWatch Embedded Metric Format records the function
// logged during the invocation, in order (see EMF).
func (inv Invocation) EMF(t testing.TB) []map[string]any {
	t.Helper()
	return EMF(t, inv.Log)
}

// EMF returns the CloudWatch Embedded Metric Format records of a
// function's log lines (those with an "_aws" member), in order, failing
// the test on one that is not a JSON object.
func EMF(t testing.TB, lines []string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range lines {
		if !strings.Contains(l, `"_aws"`) {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("EMF line %q: %v", l, err)
		}
		out = append(out, rec)
	}
	return out
}
