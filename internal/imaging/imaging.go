// Package imaging decodes the images an upstream map server answers with,
// cuts metatiles into tiles and encodes the tiles.
//
// The hot path of seeding is Decode once per metatile, Tiles to cut it
// (sub-images sharing its pixels, no copy), Uniform to spot empty tiles,
// Encoder.Encode per tile, and Release to hand the metatile's pixel buffer
// to the next Decode. All of it is written for CPU per metatile:
//
//   - Decode reads the common PNGs (8-bit RGB, RGBA, grey, and paletted
//     at any depth; not interlaced) with its own chunk reader, inflater
//     (see inflate) and Adler-32. An 8-bit RGB PNG without tRNS decodes to
//     an *RGB (3 bytes per pixel, inflated and unfiltered in place); the
//     others to the same image types, pixels and palettes as image/png.
//     Other PNGs go to image/png.
//   - An uncompressed 8-bit RGB TIFF in strips (what a map server answers
//     for image/tiff) is not decoded at all: the *RGB is laid over the
//     answer's own bytes (see tiff.go). Other TIFFs go to
//     golang.org/x/image/tiff.
//   - The PNG encoder writes *RGB rows as they are and other opaque tiles
//     as RGB too, picks the row filter with a cheap rule (see
//     chooseFilter) and deflates with the encoder of
//     github.com/klauspost/compress.
//   - png8 keeps tiles with at most 256 colours exact and quantises the
//     others with a median cut over a 5-bit-per-channel histogram.
//
// Encoders and Decode are safe for concurrent use.
package imaging

import (
	"fmt"
	"image"
	"image/color"
	"strings"
	"sync"
)

// Options tune the encoders; zero values mean the defaults.
type Options struct {
	PNGCompression int         // zlib level 1..9 for png/png8; 0 = default 1 (fastest). Invalid → error from NewEncoder.
	JPEGQuality    int         // 1..100; 0 = default 85. Invalid → error.
	Background     color.NRGBA // what non-opaque pixels are composited over for JPEG; zero value = opaque white
}

// Default option values.
const (
	DefaultPNGCompression = 1
	DefaultJPEGQuality    = 85
)

// Encoder encodes tiles in one output format. Safe for concurrent use.
type Encoder interface {
	// Encode returns the encoded image in a fresh slice the caller owns.
	Encode(img image.Image) ([]byte, error)
	// ContentType is "image/png" for every png variant, "image/jpeg".
	ContentType() string
}

// Format is the kind of encoding a tile format MIME type asks for.
type Format int

// The formats NewEncoder knows.
const (
	FormatPNG  Format = iota + 1 // truecolour PNG: RGB when opaque, RGBA otherwise
	FormatPNG8                   // paletted PNG, at most 256 colours including alpha
	FormatJPEG
)

// ParseFormat maps a tile format MIME type to its encoding: "image/png",
// "image/png24" and "image/png; mode=24bit" are FormatPNG, "image/png8" and
// "image/png; mode=8bit" FormatPNG8, "image/jpeg" FormatJPEG. Case and the
// spaces around the parameter do not matter.
func ParseFormat(format string) (Format, error) {
	f := strings.ToLower(strings.ReplaceAll(format, " ", ""))
	switch f {
	case "image/png", "image/png24", "image/png;mode=24bit":
		return FormatPNG, nil
	case "image/png8", "image/png;mode=8bit":
		return FormatPNG8, nil
	case "image/jpeg":
		return FormatJPEG, nil
	}
	return 0, fmt.Errorf("imaging: tile format %q is not supported (want image/png, image/png8, image/png24, image/png; mode=8bit, image/png; mode=24bit or image/jpeg)", format)
}

// NewEncoder returns the encoder of a tile format MIME type: "image/png",
// "image/png24", "image/png; mode=24bit" (truecolour PNG, RGB when opaque,
// RGBA otherwise), "image/png8" and "image/png; mode=8bit" (paletted,
// quantised to ≤256 colours incl. alpha via tRNS; lossless when the tile has
// ≤256 distinct colours), "image/jpeg". Unknown → error naming the format.
func NewEncoder(format string, opts Options) (Encoder, error) {
	f, err := ParseFormat(format)
	if err != nil {
		return nil, err
	}
	switch f {
	case FormatPNG, FormatPNG8:
		level := opts.PNGCompression
		if level == 0 {
			level = DefaultPNGCompression
		}
		if level < 1 || level > 9 {
			return nil, fmt.Errorf("imaging: png compression level %d is out of range 1..9", opts.PNGCompression)
		}
		return newPNGEncoder(level, f == FormatPNG8), nil
	default:
		q := opts.JPEGQuality
		if q == 0 {
			q = DefaultJPEGQuality
		}
		if q < 1 || q > 100 {
			return nil, fmt.Errorf("imaging: jpeg quality %d is out of range 1..100", opts.JPEGQuality)
		}
		bg := opts.Background
		if bg == (color.NRGBA{}) {
			bg = color.NRGBA{R: 255, G: 255, B: 255, A: 255}
		}
		return &jpegEncoder{quality: q, bg: bg}, nil
	}
}

// bufPool recycles the output buffers of the encoders: an encoded tile is
// assembled in one, then copied to a slice of its exact size for the caller.
var bufPool sync.Pool // of *[]byte

func getBuf() *[]byte {
	if b, ok := bufPool.Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

func putBuf(b *[]byte) {
	if cap(*b) <= 16<<20 { // keep no buffer of an unusually large image
		bufPool.Put(b)
	}
}
