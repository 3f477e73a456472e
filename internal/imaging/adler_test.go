package imaging

import (
	"hash/adler32"
	"math/rand/v2"
	"testing"
)

func TestAdler32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 5552, 5553, 65536, 1<<20 + 13, 3<<20 + 5} {
		for _, fill := range []string{"random", "0xff"} {
			p := make([]byte, n)
			for i := range p {
				if fill == "random" {
					p[i] = byte(rng.Uint32())
				} else {
					p[i] = 0xff
				}
			}
			if got, want := adlerUpdate(1, p), adler32.Checksum(p); got != want {
				t.Errorf("%d bytes of %s: adlerUpdate = %08x, want %08x", n, fill, got, want)
			}
			// Split at an odd point: the running checksum must continue.
			k := n / 3
			if got, want := adlerUpdate(adlerUpdate(1, p[:k]), p[k:]), adler32.Checksum(p); got != want {
				t.Errorf("%d bytes of %s split at %d: adlerUpdate = %08x, want %08x", n, fill, k, got, want)
			}
		}
	}
}

func BenchmarkAdler32(b *testing.B) {
	p := make([]byte, 3<<20)
	for i := range p {
		p[i] = byte(i * 7)
	}
	b.Run("stdlib", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			adler32.Checksum(p)
		}
	})
	b.Run("imaging", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			adlerUpdate(1, p)
		}
	})
}
