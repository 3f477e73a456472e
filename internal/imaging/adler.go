package imaging

import "encoding/binary"

// adlerMod is the Adler-32 modulus (the largest prime below 2¹⁶).
const adlerMod = 65521

// adlerUpdate continues the Adler-32 checksum adler (1 for a new stream) of
// a zlib stream over p, with the same results as hash/adler32 in about half
// the time. Adler-32 is on both hot paths: every decoded and every encoded
// PNG byte goes through it.
//
// It reads 8 bytes at a time as a uint64 and keeps running sums of its even
// and odd bytes in 16-bit lanes (SIMD within a register): per 8 bytes that is
// a few adds and masks instead of 16 dependent adds. The lanes are folded
// into s1 and s2 every adlerGroups words, before a lane can overflow.
func adlerUpdate(adler uint32, p []byte) uint32 {
	const lanes = 0x00ff00ff00ff00ff
	s1, s2 := uint64(adler&0xffff), uint64(adler>>16)
	for len(p) >= 8*adlerGroups {
		// Over G words: E, O sum the even and odd bytes per lane; P sums
		// E+O as it was before each word, i.e. what the earlier words of
		// the block add to s1 before each word.
		var e, o, pre uint64
		q := p[: 8*adlerGroups : 8*adlerGroups]
		p = p[8*adlerGroups:]
		for i := 0; i < 8*adlerGroups; i += 8 {
			w := binary.LittleEndian.Uint64(q[i:])
			pre += e + o
			e += w & lanes
			o += (w >> 8) & lanes
		}
		// s2 gains, per word, 8·s1 at its start plus (8-i)·byte i.
		s2 += 8*adlerGroups*s1 + 8*laneSum(pre) +
			8*(e&0xffff) + 6*(e>>16&0xffff) + 4*(e>>32&0xffff) + 2*(e>>48) +
			7*(o&0xffff) + 5*(o>>16&0xffff) + 3*(o>>32&0xffff) + (o >> 48)
		s1 += laneSum(e) + laneSum(o)
		s1 %= adlerMod
		s2 %= adlerMod
	}
	for _, b := range p {
		s1 += uint64(b)
		s2 += s1
	}
	s1 %= adlerMod
	s2 %= adlerMod
	return uint32(s2<<16 | s1)
}

// adlerGroups is how many 8-byte words adlerUpdate sums in 16-bit lanes
// before folding them: P's lanes reach 255·G·(G-1), below 2¹⁶ for G = 16.
const adlerGroups = 16

// laneSum adds the four 16-bit lanes of v.
func laneSum(v uint64) uint64 {
	return v&0xffff + v>>16&0xffff + v>>32&0xffff + v>>48
}
