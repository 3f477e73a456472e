package imaging

import (
	"encoding/binary"
	"image/png"
)

// unfilter reverses the PNG row filter ft in place on cdat, the current
// row without its filter byte; pdat is the previous row, already
// unfiltered (zeros above the first row). bpp is the bytes per complete
// pixel, at least 1.
func unfilter(ft byte, cdat, pdat []byte, bpp int) error {
	switch ft {
	case ftNone:
	case ftSub:
		for i := bpp; i < len(cdat); i++ {
			cdat[i] += cdat[i-bpp]
		}
	case ftUp:
		addBytes(cdat, pdat)
	case ftAverage:
		for i := 0; i < bpp && i < len(cdat); i++ {
			cdat[i] += pdat[i] / 2
		}
		for i := bpp; i < len(cdat); i++ {
			cdat[i] += uint8((int(cdat[i-bpp]) + int(pdat[i])) / 2)
		}
	case ftPaeth:
		unfilterPaeth(cdat, pdat, bpp)
	default:
		return png.FormatError("bad filter type")
	}
	return nil
}

// addBytes adds p to c byte by byte (mod 256), 8 bytes at a time within a
// uint64 with no carry between bytes.
func addBytes(c, p []byte) {
	const h = 0x8080808080808080
	p = p[:len(c)]
	i := 0
	for ; i+8 <= len(c); i += 8 {
		x := binary.LittleEndian.Uint64(c[i:])
		y := binary.LittleEndian.Uint64(p[i:])
		binary.LittleEndian.PutUint64(c[i:], ((x&^h)+(y&^h))^((x^y)&h))
	}
	for ; i < len(c); i++ {
		c[i] += p[i]
	}
}

// unfilterPaeth reverses the Paeth filter (the same computation as
// image/png's, one channel at a time so a, b and c stay in registers).
func unfilterPaeth(cdat, pdat []byte, bpp int) {
	for i := 0; i < bpp; i++ {
		var a, c int
		for j := i; j < len(cdat); j += bpp {
			b := int(pdat[j])
			pa := b - c
			pb := a - c
			pc := abs(pa + pb)
			pa = abs(pa)
			pb = abs(pb)
			if pa <= pb && pa <= pc {
				// predictor a
			} else if pb <= pc {
				a = b
			} else {
				a = c
			}
			a = (a + int(cdat[j])) & 0xff
			cdat[j] = uint8(a)
			c = b
		}
	}
}

func abs(x int) int {
	m := x >> 63
	return (x ^ m) - m
}
