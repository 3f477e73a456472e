package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/cli"
)

// TestIngestLogs: a proxy's combined log of reads of a server's tiles,
// sent with `tilecache quota ingest-logs`, reaches the disk quota's pages
// once (the same file again counts nothing); an unreadable file exits
// non-zero; standard input works.
func TestIngestLogs(t *testing.T) {
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	if r := runCLI(t, cli.Env{}, append([]string{"seed", "demo:world", "--gridset", "EPSG:4326", "--zoom", "0-2", "--every", "100ms"}, auth(a)...)...); r.code != cli.ExitDone {
		t.Fatalf("seed: exit %d\n%s", r.code, r.stderr)
	}
	at := time.Now().UTC()
	var lines []string
	for x := range 4 {
		lines = append(lines, fmt.Sprintf(`2001:db8::7 - - [%s] "GET /cache/demo%%3Aworld/EPSG%%3A4326/png/default/1/%d/0.png HTTP/1.1" 200 2326 "-" "QGIS/3.34"`,
			at.Format("02/Jan/2006:15:04:05 -0700"), x))
	}
	lines = append(lines,
		`192.0.2.1 - - [`+at.Format("02/Jan/2006:15:04:05 -0700")+`] "GET /cache/demo%3Aworld/EPSG%3A4326/png/default/1/0/0.png HTTP/1.1" 304 0 "-" "QGIS/3.34"`,
		`192.0.2.1 - - [`+at.Format("02/Jan/2006:15:04:05 -0700")+`] "GET /cache/index.html HTTP/1.1" 200 10 "-" "curl"`,
		`192.0.2.1 - - [`+at.Format("02/Jan/2006:15:04:05 -0700")+`] "GET /cache/demo%3Aworld/EPSG%3A4326/png/default/1/0/0.png HTTP/1.1" 404 0 "-" "curl"`,
		`this is not a log line`)
	file := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hits := func() int64 {
		t.Helper()
		ps, err := a.Local.Usage.Pages(t.Context(), "demo:world")
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, p := range ps {
			n += p.Hits
		}
		return n
	}
	before := hits()
	args := append([]string{"quota", "ingest-logs", "--format", "combined", "--path-prefix", "/cache", file}, auth(a)...)
	r := runCLI(t, cli.Env{}, args...)
	if r.code != cli.ExitDone || !strings.Contains(r.stdout, "8 lines read, 5 tile reads, 1 pages touched") {
		t.Fatalf("ingest-logs: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if got := hits() - before; got != 5 {
		t.Fatalf("hits added: %d, want 5", got)
	}
	r = runCLI(t, cli.Env{}, args...)
	if r.code != cli.ExitDone || !strings.Contains(r.stdout, "1 of 1 batches were counted before") || hits()-before != 5 {
		t.Fatalf("the same file again: exit %d, stdout %q, hits added %d; want it counted once", r.code, r.stdout, hits()-before)
	}
	r = runCLI(t, cli.Env{Stdin: strings.NewReader(lines[0] + "\n")}, append([]string{"quota", "ingest-logs", "--format", "combined", "--path-prefix", "/cache", "-"}, auth(a)...)...)
	if r.code != cli.ExitDone || hits()-before != 6 {
		t.Fatalf("standard input: exit %d, stdout %q, hits added %d, want 6", r.code, r.stdout, hits()-before)
	}
	r = runCLI(t, cli.Env{}, append([]string{"quota", "ingest-logs", "--format", "combined", filepath.Join(t.TempDir(), "missing.log")}, auth(a)...)...)
	if r.code == cli.ExitDone || !strings.Contains(r.stderr, "missing.log") {
		t.Fatalf("a missing file: exit %d, stderr %q; want non-zero naming it", r.code, r.stderr)
	}
}
