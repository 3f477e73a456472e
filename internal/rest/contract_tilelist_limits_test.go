package rest_test

// The limits of a tile list, checked as its lines arrive: its lines, the
// metatiles its lines name with their parents and children (duplicates
// included), its distinct metatiles, and its size unzipped. Each refusal
// names the limit and what the list reached.

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
)

// gzipRepeat returns text n times, gzipped.
func gzipRepeat(t *testing.T, text string, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	chunk := []byte(strings.Repeat(text, 1000))
	for i := 0; i < n; i += 1000 {
		if _, err := zw.Write(chunk[:min(1000, n-i)*len(text)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestTileListLimits(t *testing.T) {
	if apptest.AWSPass() {
		// Each list is refused as it is read, before any task or tile
		// reaches a backend.
		t.Skip("runs in the embedded pass only: the limits of a tile list are the same on every backend")
	}
	a := apptest.Start(t, apptest.Options{})
	var z10 strings.Builder
	for x := range 13 {
		fmt.Fprintf(&z10, "10/%d/0\n", x)
	}
	for _, tt := range []struct {
		name, query string
		body        []byte
		gzip        bool
		status      int
		want        string
	}{
		// Each tile of z10 has 1.4 million metatiles of 4×4 down to z22:
		// the sixth passes the limit, refused before its children are
		// kept (the list was taken, 18 million metatiles).
		{"13 tiles of z10 with their children to z22", "childrenTo=22", []byte(z10.String()), false, 400,
			"tile list line 6: the list names more than 8000000 metatiles (the limit of a list): 8388611 with this line's tiles, parents and children"},
		// 4,000,001 lines of one tile: 24 MB unzipped, 110 KB gzipped
		// (the list was taken, its 4 million keys held until the end).
		{"0/0/0 4,000,001 times", "", gzipRepeat(t, "0/0/0\n", 4_000_001), true, 400,
			"tile list line 4000001: the list has more than 4000000 lines (the limit of a list)"},
		// Two quarters of the world with their children to z12,
		// about 350,000 metatiles each, one after the other: 700,000
		// distinct metatiles, each named again at each line.
		{"two tiles with their children, 100 times", "childrenTo=12", []byte(strings.Repeat("1/0/0\n1/1/1\n", 100)), false, 400,
			"tile list line 184: the list's lines name more than 64000000 metatiles with their parents and children, duplicates included (the limit of a list's work): 64312602 with this line's"},
		// 2.7 million comment lines of 100 bytes: more than 256 MiB
		// unzipped, from 1 MB gzipped.
		{"256 MiB unzipped", "", gzipRepeat(t, "#"+strings.Repeat(" ", 98)+"\n", 2_700_000), true, 413,
			"a tile list is at most 256 MiB (gzip it: the limit holds for the list unzipped too)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			headers := []string{"Content-Type", "text/x-tile-list"}
			if tt.gzip {
				headers = append(headers, "Content-Encoding", "gzip")
			}
			res := doReader(t, a, "POST", "/rest/seed/demo:world.json?gridSetId=EPSG:900913&type=truncate&"+tt.query,
				bytes.NewReader(tt.body), int64(len(tt.body)), headers...)
			if res.Status != tt.status || !strings.Contains(res.Body, tt.want) {
				t.Fatalf("got %d %.300q, want %d naming %q", res.Status, res.Body, tt.status, tt.want)
			}
		})
	}
	if rows := list(t, a, "/rest/seed.json"); len(rows) != 0 {
		t.Fatalf("refused lists recorded tasks: %v", rows)
	}
}
