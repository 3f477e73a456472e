package pmtiles

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// distinctContents is the number of distinct contents of set.
func distinctContents(set map[tile][]byte) uint64 {
	seen := map[string]bool{}
	for _, d := range set {
		seen[string(d)] = true
	}
	return uint64(len(seen))
}

// Contents put again long after (beyond the hot contents Put keeps) are
// staged again but stored once: the archive is the one a writer that
// remembers every content writes.
func TestDedupeBeyondTheHotContents(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(21, 22))
	set := tileSet(rng, 7, 6000)
	ts := shuffled(rng, set)
	want := write(t, ts, set, Options{HotContents: 1 << 20})

	var out bytes.Buffer
	w, err := Create(t.TempDir(), &out, Options{HotContents: 2, BufferEntries: 64})
	if err != nil {
		t.Fatal(err)
	}
	var distinctBytes uint64
	seen := map[string]bool{}
	for _, tl := range ts {
		if d := set[tl]; !seen[string(d)] {
			seen[string(d)] = true
			distinctBytes += 4 + uint64(len(d))
		}
		if err := w.Put(ctx, tl.z, tl.x, tl.y, set[tl]); err != nil {
			t.Fatal(err)
		}
	}
	if w.blobLen <= distinctBytes {
		t.Fatalf("staged %d bytes, the distinct contents alone %d: the hot contents caught every duplicate", w.blobLen, distinctBytes)
	}
	if err := w.Close(ctx, testMD); err != nil {
		t.Fatal(err)
	}
	if h, _ := unmarshalHeader(out.Bytes()); h.TileContents != distinctContents(set) {
		t.Fatalf("%d contents stored, want %d", h.TileContents, distinctContents(set))
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatal("the archive differs from the one written with every content remembered")
	}
	check(t, out.Bytes(), set)
}

// Tiny buffers and a fan-in of 2 or 3 make every sort spill many runs
// and merge them in several passes; the archive is the same.
func TestManyRunsSameArchive(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	set := tileSet(rng, 6, 1200)
	want := write(t, shuffled(rng, set), set, Options{})
	for _, opt := range []Options{
		{BufferEntries: 4, HotContents: 1, fanIn: 2},
		{BufferEntries: 16, HotContents: 3, fanIn: 3},
		{BufferEntries: 50, fanIn: 2},
	} {
		t.Run(fmt.Sprintf("%d/%d/%d", opt.BufferEntries, opt.HotContents, opt.fanIn), func(t *testing.T) {
			dir := t.TempDir()
			var out bytes.Buffer
			w, err := Create(dir, &out, opt)
			if err != nil {
				t.Fatal(err)
			}
			ts := shuffled(rng, set)
			for i, tl := range ts {
				data := set[tl]
				if i%10 == 0 { // put again below with its own content: the last Put wins
					data = []byte("replaced")
				}
				if err := w.Put(context.Background(), tl.z, tl.x, tl.y, data); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < len(ts); i += 10 {
				tl := ts[i]
				if err := w.Put(context.Background(), tl.z, tl.x, tl.y, set[tl]); err != nil {
					t.Fatal(err)
				}
			}
			if len(w.puts.runs) < 20 {
				t.Fatalf("%d runs spilled", len(w.puts.runs))
			}
			if err := w.Close(context.Background(), testMD); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatal("the archive differs")
			}
			if names, _ := os.ReadDir(dir); len(names) != 0 {
				t.Fatalf("staging files left: %v", names)
			}
		})
	}
}

// An export resumed twice, with tiny buffers and hot contents, ends with
// the bytes of one that never stopped.
func TestResumeWithSpilledSortsGivesTheSameArchive(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(25, 26))
	set := tileSet(rng, 7, 4000)
	ts := shuffled(rng, set)
	want := write(t, ts, set, Options{})
	opt := Options{BufferEntries: 37, HotContents: 4, fanIn: 3}
	dir := t.TempDir()
	w, err := Create(dir, io.Discard, opt)
	if err != nil {
		t.Fatal(err)
	}
	put := func(from, to int, lost bool) {
		t.Helper()
		for _, tl := range ts[from:to] {
			data := set[tl]
			if lost {
				data = fmt.Appendf(nil, "lost %d", rng.Uint64())
			}
			if err := w.Put(ctx, tl.z, tl.x, tl.y, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	die := func() {
		w.blobsW.Flush() // what the dead worker had written reaches the disk
		w.blobs.Close()
	}
	put(0, 1000, false)
	if err := w.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	put(1000, 1500, true)
	die()
	if w, err = Resume(ctx, dir, io.Discard, opt); err != nil {
		t.Fatal(err)
	}
	put(1000, 2500, false)
	if err := w.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	put(2500, 3900, true)
	die()
	var out bytes.Buffer
	if w, err = Resume(ctx, dir, &out, opt); err != nil {
		t.Fatal(err)
	}
	put(2500, len(ts), false)
	if err := w.Close(ctx, testMD); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatal("resumed archive differs from the uninterrupted one")
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("staging files left: %v", names)
	}
}

// A checkpoint of run files of another layout is not resumed.
func TestResumeRefusesAnotherVersion(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, stateName), []byte(`{"blob_bytes":0,"runs":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(context.Background(), dir, io.Discard, Options{}); err == nil {
		t.Fatal("resumed a checkpoint of version 0")
	}
}

// The external sort gives what a sort in memory gives, the last of
// equal records kept with lastWins, whatever its buffer and fan-in.
func TestExternalSort(t *testing.T) {
	ctx := context.Background()
	codec := recordCodec[otherRec]{size: 16, put: others.put, get: others.get,
		cmp: func(a, b otherRec) int { return cmp.Compare(a.first, b.first) }}
	for _, c := range []struct{ n, max, fanIn int }{{0, 4, 2}, {1, 1, 2}, {10, 100, 2}, {300, 1, 2}, {1000, 7, 3}, {5000, 64, 4}, {5000, 100, 64}} {
		for _, lastWins := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/%d/%d/%v", c.n, c.max, c.fanIn, lastWins), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(c.n), uint64(c.max)))
				dir := t.TempDir()
				s := newExtSort(codec, dir, "sort-t", c.max, c.fanIn)
				s.lastWins = lastWins
				var all []otherRec
				for i := range c.n {
					r := otherRec{first: rng.Uint64N(uint64(c.n/3 + 1)), id: uint64(i)}
					all = append(all, r)
					if err := s.add(ctx, r); err != nil {
						t.Fatal(err)
					}
				}
				// The order of equal records is the order added.
				slices.SortStableFunc(all, codec.cmp)
				if lastWins {
					var last []otherRec
					for i, r := range all {
						if i+1 == len(all) || all[i+1].first != r.first {
							last = append(last, r)
						}
					}
					all = last
				}
				m, err := s.sorted(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var got []otherRec
				for {
					r, ok, err := m.next()
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						break
					}
					got = append(got, r)
				}
				m.close()
				if !lastWins {
					// Equal records come in any order.
					slices.SortStableFunc(got, func(a, b otherRec) int {
						if c := cmp.Compare(a.first, b.first); c != 0 {
							return c
						}
						return cmp.Compare(a.id, b.id)
					})
				}
				if !slices.Equal(got, all) {
					t.Fatalf("got %d records %v, want %d %v", len(got), head(got), len(all), head(all))
				}
				if names, _ := os.ReadDir(dir); len(names) != 0 {
					t.Fatalf("files left: %v", names)
				}
			})
		}
	}
}

func head[T any](s []T) []T { return s[:min(len(s), 8)] }
