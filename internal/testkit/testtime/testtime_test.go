package testtime

import (
	"io"
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testdata/sample.jsonl is recorded `go test -json` output of a module
// with a passing package (a log line, a sleep, parallel subtests, a skip),
// a failing one (a failed subtest), one that does not build and one whose
// test panics, followed by a line of the go command's own.
func readSample(t *testing.T) (Run, string) {
	t.Helper()
	f, err := os.Open("testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	run, err := Filter(f, &out)
	if err != nil {
		t.Fatal(err)
	}
	return run, out.String()
}

func TestFilterShowsFailuresAndDropsPassingOutput(t *testing.T) {
	_, out := readSample(t)
	for _, want := range []string{
		"broken/broken_test.go:5:33: undefined: undefined\n",
		"=== RUN   TestFails\n    bad_test.go:11: context before the failure\n=== RUN   TestFails/inner\n    bad_test.go:13: got 1, want 2\n--- FAIL: TestFails/inner (0.00s)\n--- FAIL: TestFails (0.00s)\n",
		"FAIL\texample.com/sample/bad\t0.098s\n",
		"FAIL\texample.com/sample/broken [build failed]\n",
		"ok  \texample.com/sample/good\t0.414s\n",
		"    p_test.go:8: before the panic\n",
		"panic: assignment to entry in nil map",
		"go: a line that is not JSON\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"a log line of a passing test", "TestSlow", "TestPasses", "TestParallel", "not here", "\nPASS\n"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("the output shows %q, from a test that passed or skipped:\n%s", unwanted, out)
		}
	}
}

func TestFilterTimes(t *testing.T) {
	run, _ := readSample(t)
	pkgs := map[string]Package{}
	for _, p := range run.Packages {
		pkgs[p.Name] = p
	}
	for name, want := range map[string]Package{
		"example.com/sample/good":   {Result: "ok", Elapsed: 414 * time.Millisecond},
		"example.com/sample/bad":    {Result: "FAIL", Elapsed: 102 * time.Millisecond},
		"example.com/sample/broken": {Result: "build failed"},
		"example.com/sample/panics": {Result: "FAIL", Elapsed: 9 * time.Millisecond},
	} {
		want.Name = name
		if got := pkgs[name]; got != want {
			t.Errorf("package %s: %+v, want %+v", name, got, want)
		}
	}
	if len(run.Packages) != 4 {
		t.Errorf("%d packages, want 4: %+v", len(run.Packages), run.Packages)
	}
	tests := map[string]Test{}
	for _, tt := range run.Tests {
		tests[tt.Name] = tt
	}
	// TestFast, TestSlow, TestParallel, TestPasses, TestFails, TestOK and
	// TestPanics: no skip, no subtest.
	if len(run.Tests) != 7 {
		t.Errorf("%d top-level tests, want 7: %+v", len(run.Tests), run.Tests)
	}
	if _, ok := tests["TestSkipped"]; ok {
		t.Error("a skipped test is timed")
	}
	if _, ok := tests["TestFails/inner"]; ok {
		t.Error("a subtest is timed on its own")
	}
	if got := tests["TestSlow"]; got.Elapsed < 300*time.Millisecond || got.Result != "ok" {
		t.Errorf("TestSlow: %+v, want ok with at least its 0.3 s sleep", got)
	}
	// A parent of parallel subtests reports 0 s itself; its wall time
	// holds its subtests' 0.1 s.
	if got := tests["TestParallel"]; got.Elapsed < 100*time.Millisecond {
		t.Errorf("TestParallel: %v, want its subtests' 0.1 s", got.Elapsed)
	}
	if got := tests["TestPanics"]; got.Result != "FAIL" {
		t.Errorf("TestPanics: %+v, want FAIL", got)
	}
}

func TestFilterShowsTestsCutShort(t *testing.T) {
	// A test still running when its package fails (a timeout) has no
	// result event: its output comes before the package's verdict.
	events := `{"Action":"run","Package":"p","Test":"TestHangs"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"=== RUN   TestHangs\n"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"    hang_test.go:9: waiting\n"}
{"Action":"output","Package":"p","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t1.005s\n"}
{"Action":"fail","Package":"p","Elapsed":1.005}
`
	var out strings.Builder
	run, err := Filter(strings.NewReader(events), &out)
	if err != nil {
		t.Fatal(err)
	}
	want := "panic: test timed out after 1s\n=== RUN   TestHangs\n    hang_test.go:9: waiting\nFAIL\tp\t1.005s\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	if len(run.Packages) != 1 || run.Packages[0].Result != "FAIL" {
		t.Errorf("packages %+v, want p failed", run.Packages)
	}
}

func TestSummary(t *testing.T) {
	run, _ := readSample(t)
	var b strings.Builder
	if err := Summary(&b, "sample", run, 2); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	// title, header, 4 packages, the sum, the heading of the tests and its
	// columns, 2 tests
	if len(lines) != 11 {
		t.Fatalf("%d lines, want 11:\n%s", len(lines), got)
	}
	if !strings.HasPrefix(lines[0], "== test times: sample (wall ") {
		t.Errorf("title %q", lines[0])
	}
	if !strings.HasPrefix(lines[2], "example.com/sample/good ") || !strings.HasSuffix(lines[2], "0.4s  ok") {
		t.Errorf("the slowest package first: %q", lines[2])
	}
	if !strings.Contains(lines[6], "(4 packages, summed)") || !strings.HasSuffix(lines[6], "0.5s") {
		t.Errorf("sum line %q", lines[6])
	}
	if !strings.HasPrefix(lines[7], "the 2 slowest tests (running: ") || !strings.HasSuffix(lines[9], "ok    example.com/sample/good TestSlow") {
		t.Errorf("slowest tests:\n%s", strings.Join(lines[7:], "\n"))
	}
}

// TestRunningLeavesOutTheWaits: a parallel test that waited 100 s for a
// slot and ran 3 s, and a parent that set up for 1 s and then ran two
// parallel subtests of 2 s each, one after the other after waiting: the
// slowest by elapsed time are not the slowest by running time.
func TestRunningLeavesOutTheWaits(t *testing.T) {
	at := func(s int) string { return time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC).Format(time.RFC3339Nano) }
	ev := func(s int, action, test string, elapsed float64) string {
		return `{"Time":"` + at(s) + `","Action":"` + action + `","Package":"p","Test":"` + test + `","Elapsed":` + strconv.FormatFloat(elapsed, 'f', -1, 64) + "}\n"
	}
	events := ev(0, "run", "TestWaits", 0) + ev(0, "pause", "TestWaits", 0) +
		ev(0, "run", "TestSerial", 0) + ev(5, "pass", "TestSerial", 5) +
		ev(5, "run", "TestParent", 0) + ev(6, "run", "TestParent/a", 0) + ev(6, "pause", "TestParent/a", 0) +
		ev(6, "run", "TestParent/b", 0) + ev(6, "pause", "TestParent/b", 0) +
		ev(50, "cont", "TestParent/a", 0) + ev(52, "pass", "TestParent/a", 2) +
		ev(60, "cont", "TestParent/b", 0) + ev(62, "pass", "TestParent/b", 2) + ev(62, "pass", "TestParent", 0) +
		ev(100, "cont", "TestWaits", 0) + ev(103, "pass", "TestWaits", 103) +
		`{"Time":"` + at(103) + `","Action":"pass","Package":"p","Elapsed":103}` + "\n"
	run, err := Filter(strings.NewReader(events), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Duration{}
	for _, tt := range run.Tests {
		got[tt.Name] = tt.Running
	}
	want := map[string]time.Duration{"TestWaits": 3 * time.Second, "TestSerial": 5 * time.Second, "TestParent": 5 * time.Second}
	if !maps.Equal(got, want) {
		t.Errorf("running times %v, want %v", got, want)
	}
	var b strings.Builder
	if err := Summary(&b, "p", run, 3); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) < 3 || !strings.HasSuffix(lines[len(lines)-1], "p TestWaits") || !strings.Contains(lines[len(lines)-1], "3.0s     103.0s") {
		t.Errorf("the test that waited longest is not the last by running time:\n%s", b.String())
	}
}
