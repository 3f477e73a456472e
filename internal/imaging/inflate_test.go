package imaging

import (
	"bytes"
	"compress/flate"
	"io"
	"math/rand/v2"
	"testing"

	kflate "github.com/klauspost/compress/flate"
)

// stdInflate decompresses with compress/flate, reporting the output, how
// many input bytes the stream took, and the error.
func stdInflate(src []byte, limit int) ([]byte, int, error) {
	br := bytes.NewReader(src)
	r := flate.NewReader(br)
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err == nil && len(out) > limit {
		return out, 0, errTooMuchData
	}
	return out, len(src) - br.Len(), err
}

// checkInflate compares inflate with compress/flate on src.
func checkInflate(t *testing.T, src []byte) {
	t.Helper()
	want, wantN, wantErr := stdInflate(src, 1<<22)
	var f inflater
	dst := make([]byte, len(want), len(want)+inflateSlack)
	n, err := f.inflate(dst, src)
	switch {
	case wantErr == nil && err != nil:
		t.Fatalf("inflate: %v; compress/flate decodes %d bytes", err, len(want))
	case wantErr == nil && (!bytes.Equal(dst, want) || n != wantN):
		t.Fatalf("inflate gives other bytes or took %d bytes of input, compress/flate %d", n, wantN)
	case wantErr != nil && err == nil:
		t.Fatalf("inflate succeeds; compress/flate: %v after %d bytes", wantErr, len(want))
	}
	if wantErr == nil {
		// One byte more or less than the stream holds is an error.
		if _, err := f.inflate(make([]byte, len(want)+1, len(want)+1+inflateSlack), src); err == nil {
			t.Fatal("inflate into a buffer one byte too long succeeds")
		}
		if len(want) > 0 {
			if _, err := f.inflate(make([]byte, len(want)-1, len(want)-1+inflateSlack), src); err != errTooMuchData {
				t.Fatalf("inflate into a buffer one byte too short: %v, want errTooMuchData", err)
			}
		}
	}
}

func TestInflate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	inputs := map[string][]byte{
		"empty":  nil,
		"zeros":  make([]byte, 100000),
		"random": nil,
		"text":   bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog; "), 3000),
		"map":    mapLike(256, 256, 1, false).Pix,
		"runs":   nil,
	}
	r := make([]byte, 70000)
	for i := range r {
		r[i] = byte(rng.Uint32())
	}
	inputs["random"] = r
	var runs []byte
	for len(runs) < 200000 {
		runs = append(runs, bytes.Repeat([]byte{byte(rng.IntN(4))}, 1+rng.IntN(300))...)
		runs = append(runs, r[:rng.IntN(20)]...)
	}
	inputs["runs"] = runs
	for name, in := range inputs {
		// Huffman only, stored, and the fast, default and best matchers
		// of each implementation: every kind of block.
		for _, level := range []int{-2, 0, 1, 6, 9} {
			for _, impl := range []string{"compress/flate", "klauspost"} {
				var buf bytes.Buffer
				if impl == "klauspost" {
					w, _ := kflate.NewWriter(&buf, level)
					w.Write(in)
					w.Close()
				} else {
					w, _ := flate.NewWriter(&buf, level)
					w.Write(in)
					w.Close()
				}
				t.Run(name+"/"+impl, func(t *testing.T) {
					checkInflate(t, buf.Bytes())
					// Followed by more data: inflate stops at the end.
					checkInflate(t, append(bytes.Clone(buf.Bytes()), 1, 2, 3, 4, 5, 6, 7, 8, 9))
				})
			}
		}
	}
	// Truncation at every point, and flipped bits, of a small stream with
	// stored, fixed and dynamic blocks.
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	w.Write(inputs["text"][:3000])
	w.Flush()
	w.Write(r[:500]) // stored
	w.Flush()
	w.Write([]byte("abc")) // fixed
	w.Close()
	stream := buf.Bytes()
	for i := range stream {
		checkInflate(t, stream[:i])
	}
	for i := range 2000 {
		bad := bytes.Clone(stream)
		bad[rng.IntN(len(bad))] ^= 1 << (i % 8)
		checkInflate(t, bad)
	}
}

func FuzzInflate(f *testing.F) {
	for _, level := range []int{-2, 0, 1, 6, 9} {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, level)
		w.Write(mapLike(32, 16, 1, false).Pix)
		w.Close()
		f.Add(buf.Bytes())
	}
	f.Add([]byte{0x03, 0x00})             // fixed block, end of block
	f.Add([]byte{0x01, 0, 0, 0xff, 0xff}) // empty stored block
	f.Fuzz(func(t *testing.T, src []byte) {
		checkInflate(t, src)
	})
}

func BenchmarkInflate(b *testing.B) {
	m := metatiles(b)[0]
	var z []byte
	for _, c := range splitPNG(b, m.png) {
		if c.typ == "IDAT" {
			z = append(z, c.data...)
		}
	}
	z = z[2:] // the zlib header
	raw, _, err := stdInflate(z, 1<<23)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("compress/flate", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		dst := make([]byte, len(raw))
		r := flate.NewReader(nil)
		for b.Loop() {
			r.(flate.Resetter).Reset(bytes.NewReader(z), nil)
			io.ReadFull(r, dst)
		}
	})
	b.Run("klauspost", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		dst := make([]byte, len(raw))
		r := kflate.NewReader(bytes.NewReader(nil))
		for b.Loop() {
			r.(kflate.Resetter).Reset(bytes.NewReader(z), nil)
			io.ReadFull(r, dst)
		}
	})
	b.Run("imaging", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		dst := make([]byte, len(raw), len(raw)+inflateSlack)
		var f inflater
		for b.Loop() {
			if _, err := f.inflate(dst, z); err != nil {
				b.Fatal(err)
			}
		}
	})
}
