package imaging

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"

	"golang.org/x/image/tiff"
)

// TIFF answers. A map server asked for image/tiff (MapServer's and GDAL's
// GTiff, GeoServer's, QGIS Server's) answers an uncompressed baseline TIFF
// in strips: the pixels are already in memory, row after row, and
// "decoding" is finding them. For 8-bit RGB that is the whole work: the
// image Decode returns is an *RGB over the answer's own bytes, without a
// copy. 8-bit RGBA (ExtraSamples 1 or 2) is copied once into a pooled
// buffer; anything else (compressed, tiled, planar, 16-bit, grey,
// paletted) goes to golang.org/x/image/tiff after the size check.

const (
	tiffLE = "II\x2a\x00"
	tiffBE = "MM\x00\x2a"
)

// TIFF tags the fast path reads.
const (
	tagImageWidth      = 256
	tagImageLength     = 257
	tagBitsPerSample   = 258
	tagCompression     = 259
	tagPhotometric     = 262
	tagFillOrder       = 266
	tagStripOffsets    = 273
	tagSamplesPerPixel = 277
	tagRowsPerStrip    = 278
	tagStripByteCounts = 279
	tagPlanarConfig    = 284
	tagPredictor       = 317
	tagTileWidth       = 322
	tagExtraSamples    = 338
	tagSampleFormat    = 339
)

// tiffIFD is what the fast path needs of the first image file directory.
type tiffIFD struct {
	width, height   int
	bits            []uint32
	compression     uint32
	photometric     uint32
	fillOrder       uint32
	samples         uint32
	rowsPerStrip    uint32
	planar          uint32
	predictor       uint32
	tiled           bool
	extra           []uint32
	sampleFormat    []uint32
	offsets, counts []uint32
}

var errTIFFCut = errors.New("imaging: decode tiff: unexpected EOF")

// readIFD parses the first IFD of data, which starts with a TIFF header.
// With sizeOnly it stops after the width and height.
func readIFD(data []byte, sizeOnly bool) (*tiffIFD, error) {
	if len(data) < 8 {
		return nil, errTIFFCut
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if string(data[:4]) == tiffBE {
		bo = binary.BigEndian
	}
	off := uint64(bo.Uint32(data[4:8]))
	if off < 8 || off+2 > uint64(len(data)) {
		return nil, fmt.Errorf("imaging: decode tiff: IFD offset %d is outside the %d bytes", off, len(data))
	}
	n := uint64(bo.Uint16(data[off:]))
	if off+2+12*n > uint64(len(data)) {
		return nil, errTIFFCut
	}
	d := &tiffIFD{compression: 1, fillOrder: 1, samples: 1, rowsPerStrip: 1<<32 - 1, planar: 1, predictor: 1}
	for i := range n {
		e := data[off+2+12*i : off+14+12*i]
		tag, typ, count := bo.Uint16(e), bo.Uint16(e[2:]), uint64(bo.Uint32(e[4:]))
		if sizeOnly && tag != tagImageWidth && tag != tagImageLength {
			continue
		}
		vals, err := tiffValues(data, bo, e, typ, count)
		if err != nil {
			return nil, fmt.Errorf("imaging: decode tiff: tag %d: %w", tag, err)
		}
		one := func() uint32 {
			if len(vals) == 0 {
				return 0
			}
			return vals[0]
		}
		switch tag {
		case tagImageWidth:
			d.width = int(one())
		case tagImageLength:
			d.height = int(one())
		case tagBitsPerSample:
			d.bits = vals
		case tagCompression:
			d.compression = one()
		case tagPhotometric:
			d.photometric = one()
		case tagFillOrder:
			d.fillOrder = one()
		case tagStripOffsets:
			d.offsets = vals
		case tagSamplesPerPixel:
			d.samples = one()
		case tagRowsPerStrip:
			d.rowsPerStrip = one()
		case tagStripByteCounts:
			d.counts = vals
		case tagPlanarConfig:
			d.planar = one()
		case tagPredictor:
			d.predictor = one()
		case tagTileWidth:
			d.tiled = true
		case tagExtraSamples:
			d.extra = vals
		case tagSampleFormat:
			d.sampleFormat = vals
		}
	}
	if d.width <= 0 || d.height <= 0 {
		return nil, fmt.Errorf("imaging: decode tiff: no image size (%d×%d)", d.width, d.height)
	}
	return d, nil
}

// tiffValues returns the values of an IFD entry of an integer type (BYTE,
// SHORT, LONG); other types give none, which the fast path then refuses.
func tiffValues(data []byte, bo binary.ByteOrder, e []byte, typ uint16, count uint64) ([]uint32, error) {
	var size uint64
	switch typ {
	case 1: // BYTE
		size = 1
	case 3: // SHORT
		size = 2
	case 4: // LONG
		size = 4
	default:
		return nil, nil
	}
	if count > uint64(len(data)) { // more values than the file has bytes
		return nil, fmt.Errorf("%d values", count)
	}
	raw := e[8:12]
	if size*count > 4 {
		at := uint64(bo.Uint32(e[8:]))
		if at+size*count > uint64(len(data)) {
			return nil, errTIFFCut
		}
		raw = data[at : at+size*count]
	}
	vals := make([]uint32, count)
	for i := range vals {
		switch size {
		case 1:
			vals[i] = uint32(raw[i])
		case 2:
			vals[i] = uint32(bo.Uint16(raw[2*i:]))
		default:
			vals[i] = bo.Uint32(raw[4*i:])
		}
	}
	return vals, nil
}

// tiffSize reads the size a TIFF's first IFD declares.
func tiffSize(data []byte) (w, h int, ok bool) {
	d, err := readIFD(data, true)
	if err != nil {
		return 0, 0, false
	}
	return d.width, d.height, true
}

// decodeTIFF decodes a TIFF answer; see the comment at the top of the file.
func decodeTIFF(data []byte) (image.Image, error) {
	d, err := readIFD(data, false)
	if err != nil {
		return nil, err
	}
	if int64(d.width)*int64(d.height) > maxPixels {
		return nil, fmt.Errorf("imaging: decode tiff: %dx%d image is too large", d.width, d.height)
	}
	if bpp := d.plain(); bpp != 0 {
		return d.strips(data, bpp)
	}
	return decodeWith("tiff", data, tiff.DecodeConfig, tiff.Decode)
}

// plain returns the bytes per pixel when the image is what the fast path
// reads: uncompressed, chunky, in strips, 8-bit unsigned RGB (3) or RGBA
// with the alpha declared associated or not (4); else 0.
func (d *tiffIFD) plain() int {
	if d.compression != 1 || d.photometric != 2 || d.planar != 1 || d.tiled || d.fillOrder != 1 ||
		d.predictor != 1 || len(d.offsets) == 0 || len(d.offsets) != len(d.counts) || d.rowsPerStrip == 0 {
		return 0
	}
	for _, f := range d.sampleFormat {
		if f != 1 {
			return 0
		}
	}
	if len(d.bits) != int(d.samples) {
		return 0
	}
	for _, b := range d.bits {
		if b != 8 {
			return 0
		}
	}
	switch {
	case d.samples == 3 && len(d.extra) == 0:
		return 3
	case d.samples == 4 && len(d.extra) == 1 && (d.extra[0] == 1 || d.extra[0] == 2):
		return 4
	}
	return 0
}

// strips returns the pixels of an uncompressed chunky image of bpp bytes
// per pixel.
func (d *tiffIFD) strips(data []byte, bpp int) (image.Image, error) {
	w, h := d.width, d.height
	stride := w * bpp
	rows := int(min(uint64(d.rowsPerStrip), uint64(h)))
	want := (h + rows - 1) / rows
	if len(d.offsets) < want {
		return nil, fmt.Errorf("imaging: decode tiff: %d strips for %d rows of %d", len(d.offsets), h, rows)
	}
	// Where each strip's rows are, checked before anything is allocated.
	contiguous := true
	for i := range want {
		n := min(rows, h-i*rows) * stride
		off, count := uint64(d.offsets[i]), uint64(d.counts[i])
		if count < uint64(n) || off+uint64(n) > uint64(len(data)) {
			return nil, fmt.Errorf("imaging: decode tiff: strip %d (%d bytes at %d) is cut or too short for %d rows", i, count, off, min(rows, h-i*rows))
		}
		if off != uint64(d.offsets[0])+uint64(i*rows*stride) {
			contiguous = false
		}
	}
	rect := image.Rect(0, 0, w, h)
	if bpp == 3 && contiguous {
		start := int(d.offsets[0])
		end := start + h*stride
		return &RGB{Pix: data[start:end:end], Stride: stride, Rect: rect}, nil
	}
	buf := getPix(h * stride)
	pix := *buf
	for i := range want {
		n := min(rows, h-i*rows) * stride
		copy(pix[i*rows*stride:], data[d.offsets[i]:int(d.offsets[i])+n])
	}
	switch {
	case bpp == 3:
		return &RGB{Pix: pix, Stride: stride, Rect: rect, buf: buf}, nil
	case d.extra[0] == 1: // associated alpha: premultiplied
		return &image.RGBA{Pix: pix, Stride: stride, Rect: rect}, nil
	default:
		return &image.NRGBA{Pix: pix, Stride: stride, Rect: rect}, nil
	}
}
