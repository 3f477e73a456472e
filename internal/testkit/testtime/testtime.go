// Package testtime reads the event stream of `go test -json` (the format of
// cmd/test2json): it passes on what a person reads while the tests run —
// build errors, the whole output of a failed test, each package's result
// line — and keeps the times of packages and top-level tests, for the table
// `make test` prints at its end (infra/test.sh, infra/testtime).
package testtime

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json`.
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     float64 // seconds
	Output      string
	ImportPath  string // build-output, build-fail
	FailedBuild string
}

// Package is one package's result.
type Package struct {
	Name    string
	Result  string // "ok", "FAIL" or "build failed"
	Elapsed time.Duration
}

// Test is one top-level test's result (subtests are part of their
// parent's time).
type Test struct {
	Package, Name string
	Result        string // "ok" or "FAIL"
	// Elapsed is the test's own time as `go test` reports it, or, for a
	// test with subtests, the wall time from its start (or resumption)
	// to its end when longer: a parent of parallel subtests reports
	// about nothing itself.
	Elapsed time.Duration
	// Running is the time it ran: the union of the times it and its
	// subtests were running, not paused waiting for a parallel slot. A
	// parent is counted until its first subtest starts; from then on,
	// its subtests are. Of a parallel test in a busy package, Elapsed
	// mostly measures the wait; Running is its own time.
	Running time.Duration
}

// Run is what one `go test -json` stream reported.
type Run struct {
	Packages []Package
	Tests    []Test
	// Wall is the time from the first to the last timed event.
	Wall time.Duration
}

// line is a test's output line, kept until the test's result is known.
type line struct{ test, text string }

// filter is the state of one stream being read.
type filter struct {
	w       io.Writer
	run     Run
	first   time.Time
	last    time.Time
	started map[string]time.Time // package + "\x00" + test: start or resumption
	parents map[string]bool      // package + "\x00" + test: has subtests
	// running: when a test or subtest started or resumed, while it runs
	// and is not a parent; busy: the top-level test's running intervals.
	running map[string]time.Time
	busy    map[string][]interval
	pending map[string][]line // package: output of tests not finished
}

// Filter reads a `go test -json` stream from r and writes to w what a
// person needs to read: build output, lines not in the JSON format (the go
// command's own messages), package-level output (result lines, panics
// outside tests) and the complete output of every failed top-level test,
// subtests included. The output of tests that pass or skip is dropped;
// that of tests still running when their package fails (a timeout) is
// written then. It returns the times it saw.
func Filter(r io.Reader, w io.Writer) (Run, error) {
	f := &filter{w: w, started: map[string]time.Time{}, parents: map[string]bool{}, pending: map[string][]line{},
		running: map[string]time.Time{}, busy: map[string][]interval{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		b := sc.Bytes()
		var e event
		if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil {
			if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
				return f.run, fmt.Errorf("testtime: write: %w", err)
			}
			continue
		}
		if err := f.event(e); err != nil {
			return f.run, err
		}
	}
	if err := sc.Err(); err != nil {
		return f.run, fmt.Errorf("testtime: read the test events: %w", err)
	}
	for pkg := range f.pending { // a stream cut short: show what was running
		if err := f.flush(pkg, func(string) bool { return true }); err != nil {
			return f.run, err
		}
	}
	if !f.first.IsZero() {
		f.run.Wall = f.last.Sub(f.first)
	}
	return f.run, nil
}

func (f *filter) write(s string) error {
	if _, err := io.WriteString(f.w, s); err != nil {
		return fmt.Errorf("testtime: write: %w", err)
	}
	return nil
}

func (f *filter) event(e event) error {
	if !e.Time.IsZero() {
		if f.first.IsZero() {
			f.first = e.Time
		}
		f.last = e.Time
	}
	switch {
	case e.Action == "build-output":
		return f.write(e.Output)
	case e.Test == "":
		return f.packageEvent(e)
	}
	key := e.Package + "\x00" + e.Test
	top := !strings.Contains(e.Test, "/")
	f.track(e, key)
	switch e.Action {
	case "output":
		f.pending[e.Package] = append(f.pending[e.Package], line{e.Test, e.Output})
	case "run", "cont":
		if top {
			f.started[key] = e.Time
		} else {
			parent, _, _ := strings.Cut(e.Test, "/")
			f.parents[e.Package+"\x00"+parent] = true
		}
	case "pass", "fail", "skip":
		if !top {
			return nil
		}
		mine := func(test string) bool { return test == e.Test || strings.HasPrefix(test, e.Test+"/") }
		if e.Action == "fail" {
			if err := f.flush(e.Package, mine); err != nil {
				return err
			}
		} else {
			f.drop(e.Package, mine)
		}
		if e.Action == "skip" {
			return nil
		}
		elapsed := time.Duration(e.Elapsed * float64(time.Second))
		if start, ok := f.started[key]; ok && f.parents[key] && !start.IsZero() && !e.Time.IsZero() {
			elapsed = max(elapsed, e.Time.Sub(start))
		}
		delete(f.started, key)
		delete(f.parents, key)
		running := union(f.busy[key])
		delete(f.busy, key)
		f.run.Tests = append(f.run.Tests, Test{Package: e.Package, Name: e.Test, Result: result(e.Action), Elapsed: elapsed, Running: running})
	}
	return nil
}

// interval is a time a test ran.
type interval struct{ from, to time.Time }

// track follows when each test and subtest runs, for Test.Running: a
// test runs from "run" or "cont" to "pause" or its result; a parent only
// until its first subtest starts.
func (f *filter) track(e event, key string) {
	if e.Time.IsZero() {
		return
	}
	top, _, _ := strings.Cut(e.Test, "/")
	topKey := e.Package + "\x00" + top
	end := func(k string) {
		if from, ok := f.running[k]; ok {
			f.busy[topKey] = append(f.busy[topKey], interval{from, e.Time})
			delete(f.running, k)
		}
	}
	switch e.Action {
	case "run", "cont":
		if i := strings.LastIndexByte(e.Test, '/'); i >= 0 && e.Action == "run" {
			end(e.Package + "\x00" + e.Test[:i]) // the parent's time is now its subtests'
		}
		f.running[key] = e.Time
	case "pause", "pass", "fail", "skip":
		end(key)
	}
}

// union is the length of the union of the intervals.
func union(in []interval) time.Duration {
	slices.SortFunc(in, func(a, b interval) int { return a.from.Compare(b.from) })
	var sum time.Duration
	var cur interval
	for i, v := range in {
		switch {
		case i == 0:
			cur = v
		case v.from.After(cur.to):
			sum += cur.to.Sub(cur.from)
			cur = v
		case v.to.After(cur.to):
			cur.to = v.to
		}
	}
	if len(in) > 0 {
		sum += cur.to.Sub(cur.from)
	}
	return sum
}

func (f *filter) packageEvent(e event) error {
	switch e.Action {
	case "output":
		if e.Output == "PASS\n" {
			return nil
		}
		if strings.HasPrefix(e.Output, "FAIL\t") { // tests cut short (a timeout) come before the verdict
			if err := f.flush(e.Package, func(string) bool { return true }); err != nil {
				return err
			}
		}
		return f.write(e.Output)
	case "pass", "fail":
		if err := f.flush(e.Package, func(string) bool { return true }); err != nil {
			return err
		}
		delete(f.pending, e.Package)
		p := Package{Name: e.Package, Result: result(e.Action), Elapsed: time.Duration(e.Elapsed * float64(time.Second))}
		if e.FailedBuild != "" {
			p.Result = "build failed"
		}
		f.run.Packages = append(f.run.Packages, p)
	}
	return nil
}

// flush writes the pending output of pkg's tests for which mine is true,
// in the order it came, and forgets it.
func (f *filter) flush(pkg string, mine func(test string) bool) error {
	var keep []line
	for _, l := range f.pending[pkg] {
		if !mine(l.test) {
			keep = append(keep, l)
			continue
		}
		if err := f.write(l.text); err != nil {
			return err
		}
	}
	f.pending[pkg] = keep
	return nil
}

// drop forgets the pending output of pkg's tests for which mine is true.
func (f *filter) drop(pkg string, mine func(test string) bool) {
	f.pending[pkg] = slices.DeleteFunc(f.pending[pkg], func(l line) bool { return mine(l.test) })
}

func result(action string) string {
	if action == "fail" {
		return "FAIL"
	}
	return "ok"
}

// Summary writes run's packages, slowest first, with their total, and its
// n slowest top-level tests by running time, under the title.
func Summary(w io.Writer, title string, run Run, n int) error {
	pkgs := slices.Clone(run.Packages)
	slices.SortStableFunc(pkgs, func(a, b Package) int { return cmp.Compare(b.Elapsed, a.Elapsed) })
	tests := slices.Clone(run.Tests)
	slices.SortStableFunc(tests, func(a, b Test) int { return cmp.Compare(b.Running, a.Running) })
	tests = tests[:min(n, len(tests))]

	width := len("package")
	var sum time.Duration
	for _, p := range pkgs {
		width = max(width, len(p.Name))
		sum += p.Elapsed
	}
	var b strings.Builder
	fmt.Fprintf(&b, "== test times: %s (wall %s)\n", title, secs(run.Wall))
	fmt.Fprintf(&b, "%-*s  %9s  %s\n", width, "package", "time", "result")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "%-*s  %9s  %s\n", width, p.Name, secs(p.Elapsed), p.Result)
	}
	fmt.Fprintf(&b, "%-*s  %9s\n", width, fmt.Sprintf("(%d packages, summed)", len(pkgs)), secs(sum))
	if len(tests) > 0 {
		fmt.Fprintf(&b, "the %d slowest tests (running: not paused for a parallel slot; elapsed: with the waits):\n", len(tests))
		fmt.Fprintf(&b, "  %9s  %9s\n", "running", "elapsed")
		for _, t := range tests {
			fmt.Fprintf(&b, "  %9s  %9s  %-4s  %s %s\n", secs(t.Running), secs(t.Elapsed), t.Result, t.Package, t.Name)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("testtime: write the summary: %w", err)
	}
	return nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
