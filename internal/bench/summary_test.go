// Package bench holds the benchmark programs (seedbench, missbench); this
// file tests the summary `make bench` prints (infra/bench.sh and
// infra/bench-summary.sh).
package bench

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the project's root, two levels above this package.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// areaBench is the -bench pattern infra/bench.sh gives the geometry
// benchmarks.
func areaBench(t *testing.T) string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(root(t), "infra/bench.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^AREA_BENCH='([^']+)'$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("infra/bench.sh sets no AREA_BENCH='...'")
	}
	return string(m[1])
}

// summarize runs infra/bench-summary.sh on the outputs in dir.
func summarize(t *testing.T, dir string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root(t), "infra/bench-summary.sh"), dir, "1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String() + errb.String(), err
}

// copyOutputs copies the recorded outputs of every step but the geometry
// one into a new directory.
func copyOutputs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob("testdata/bench-out/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("recorded outputs: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSummaryPrinted runs the geometry benchmarks with the pattern
// bench.sh gives them (once each), and the summary over their output and
// the recorded outputs of the other steps: every figure is a number. A
// pattern that selects no benchmark (as one with a "/" inside a group did)
// fails here, not after eight minutes of `make bench`.
func TestSummaryPrinted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the geometry benchmarks")
	}
	dir := copyOutputs(t)
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", areaBench(t), "-benchtime", "1x", "-count", "1", "./internal/area/")
	cmd.Dir = root(t)
	area, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("geometry benchmarks: %v\n%s", err, area)
	}
	if err := os.WriteFile(filepath.Join(dir, "area.txt"), area, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := summarize(t, dir)
	if err != nil {
		t.Fatalf("bench-summary.sh: %v\n%s", err, out)
	}
	for _, want := range []string{
		"seed tiles/s            1538  vs raw PutObject objects/s 1700   ratio 0.90",
		"reseed of unchanged tiles, S3 requests per 1,000 tiles: 6.3, of which PUT 0.0",
		"seed z0-7, S3 requests per 1,000 tiles: 1006.2",
		"seed z0-7 over every other metatile missing one tile (683 holes), S3 requests per 1,000 tiles: 37.5, of which PUT 31.3",
		"truncate S3 requests per 1,000 tile positions: 1009.1, of which DELETE 1003.0",
		"DynamoDB writes per 1,000 tiles: 1.61",
		"export tiles/s          4398  vs list and GET objects/s 3877   ratio 1.13   (target >= 0.8; z0-8 to PMTiles; peak RSS 192 MiB)",
		"access log of 1 GiB streamed: peak RSS 41.0 MiB",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	num := `[0-9]+(\.[0-9]+)?`
	for _, re := range []string{
		`geometry plan, .*: ` + num + ` M tiles/s, ` + num + ` bytes`,
		`geometry cover of one level \(z12\) M tiles/s  ` + num + `  vs orb tilecover ` + num + `   ratio ` + num,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("summary lacks a line matching %q:\n%s", re, out)
		}
	}
}

// TestSummaryRefusesMissingFigure: a step that printed nothing fails the
// summary, naming the figure, instead of printing an empty one.
func TestSummaryRefusesMissingFigure(t *testing.T) {
	dir := copyOutputs(t)
	if err := os.WriteFile(filepath.Join(dir, "area.txt"), []byte("PASS\nok  \ttilecache/internal/area\t0.01s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := summarize(t, dir)
	if err == nil {
		t.Fatalf("bench-summary.sh passed without geometry figures:\n%s", out)
	}
	if !strings.Contains(out, "no value of PlanCountry z0-16") {
		t.Errorf("the failure does not name the missing figure:\n%s", out)
	}
}
