// Package pmtiles writes and reads PMTiles version 3 archives: one file
// holding a header, a root directory, JSON metadata, leaf directories and
// the tile data, addressed by Hilbert tile ids so that a client finds any
// tile with two or three range requests.
//
// The format is implemented here rather than imported: the reference
// library's Go package also links cloud-storage drivers, a tile server and
// their dependencies (837 packages and 48 MB more in a binary that only
// computes a tile id), and its converter keeps every directory entry in
// memory. The tests check this package against independent parts instead:
// the specification's tile id vectors, archives the reference converter
// wrote (testdata), the pmtiles JavaScript library reading what this
// package writes, and the format's invariants checked on every archive.
package pmtiles

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
)

// Compression is a PMTiles compression code, for the tiles or for the
// directories and metadata.
type Compression uint8

// The compression codes of the specification.
const (
	UnknownCompression Compression = 0
	NoCompression      Compression = 1
	Gzip               Compression = 2
	Brotli             Compression = 3
	Zstd               Compression = 4
)

// TileType is a PMTiles tile type code.
type TileType uint8

// The tile type codes of the specification.
const (
	UnknownTileType TileType = 0
	MVT             TileType = 1
	PNG             TileType = 2
	JPEG            TileType = 3
	WebP            TileType = 4
	AVIF            TileType = 5
)

// TileTypeOf returns the tile type of an archive.Metadata format name.
func TileTypeOf(format string) TileType {
	switch format {
	case "pbf", "mvt":
		return MVT
	case "png":
		return PNG
	case "jpg", "jpeg":
		return JPEG
	case "webp":
		return WebP
	case "avif":
		return AVIF
	}
	return UnknownTileType
}

// FormatOf returns the archive.Metadata format name of a tile type.
func FormatOf(t TileType) string {
	switch t {
	case MVT:
		return "pbf"
	case PNG:
		return "png"
	case JPEG:
		return "jpg"
	case WebP:
		return "webp"
	case AVIF:
		return "avif"
	}
	return ""
}

// headerLen is the fixed length of a version 3 header.
const headerLen = 127

// rootLimit is how many bytes the header and the root directory may take
// together: a client reads them with its first 16 KiB request.
const rootLimit = 16384

// Header is a version 3 archive header.
type Header struct {
	RootOffset, RootLength         uint64
	MetadataOffset, MetadataLength uint64
	LeafOffset, LeafLength         uint64
	DataOffset, DataLength         uint64
	AddressedTiles                 uint64
	TileEntries                    uint64
	TileContents                   uint64
	Clustered                      bool
	InternalCompression            Compression
	TileCompression                Compression
	TileType                       TileType
	MinZoom, MaxZoom               uint8
	MinLonE7, MinLatE7             int32
	MaxLonE7, MaxLatE7             int32
	CenterZoom                     uint8
	CenterLonE7, CenterLatE7       int32
}

func (h Header) marshal() []byte {
	b := make([]byte, headerLen)
	copy(b, "PMTiles")
	b[7] = 3
	le := binary.LittleEndian
	for i, v := range []uint64{h.RootOffset, h.RootLength, h.MetadataOffset, h.MetadataLength,
		h.LeafOffset, h.LeafLength, h.DataOffset, h.DataLength,
		h.AddressedTiles, h.TileEntries, h.TileContents} {
		le.PutUint64(b[8+8*i:], v)
	}
	if h.Clustered {
		b[96] = 1
	}
	b[97], b[98], b[99] = byte(h.InternalCompression), byte(h.TileCompression), byte(h.TileType)
	b[100], b[101] = h.MinZoom, h.MaxZoom
	le.PutUint32(b[102:], uint32(h.MinLonE7))
	le.PutUint32(b[106:], uint32(h.MinLatE7))
	le.PutUint32(b[110:], uint32(h.MaxLonE7))
	le.PutUint32(b[114:], uint32(h.MaxLatE7))
	b[118] = h.CenterZoom
	le.PutUint32(b[119:], uint32(h.CenterLonE7))
	le.PutUint32(b[123:], uint32(h.CenterLatE7))
	return b
}

func unmarshalHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < headerLen || string(b[:7]) != "PMTiles" {
		return h, errors.New("not a PMTiles archive: no PMTiles magic number")
	}
	if b[7] != 3 {
		return h, fmt.Errorf("PMTiles version %d is not supported, only version 3", b[7])
	}
	le := binary.LittleEndian
	p := []*uint64{&h.RootOffset, &h.RootLength, &h.MetadataOffset, &h.MetadataLength,
		&h.LeafOffset, &h.LeafLength, &h.DataOffset, &h.DataLength,
		&h.AddressedTiles, &h.TileEntries, &h.TileContents}
	for i, v := range p {
		*v = le.Uint64(b[8+8*i:])
	}
	h.Clustered = b[96] == 1
	h.InternalCompression, h.TileCompression, h.TileType = Compression(b[97]), Compression(b[98]), TileType(b[99])
	h.MinZoom, h.MaxZoom = b[100], b[101]
	h.MinLonE7 = int32(le.Uint32(b[102:]))
	h.MinLatE7 = int32(le.Uint32(b[106:]))
	h.MaxLonE7 = int32(le.Uint32(b[110:]))
	h.MaxLatE7 = int32(le.Uint32(b[114:]))
	h.CenterZoom = b[118]
	h.CenterLonE7 = int32(le.Uint32(b[119:]))
	h.CenterLatE7 = int32(le.Uint32(b[123:]))
	return h, nil
}

// TileID returns the Hilbert tile id of z/x/y: the tiles of all lower
// levels come first, then level z's tiles along a Hilbert curve.
func TileID(z int, x, y uint32) uint64 {
	id := (uint64(1)<<(2*uint(z)) - 1) / 3
	for s := uint32(1) << uint(z) >> 1; s > 0; s >>= 1 {
		var rx, ry uint32
		if x&s != 0 {
			rx = 1
		}
		if y&s != 0 {
			ry = 1
		}
		id += uint64(s) * uint64(s) * uint64((3*rx)^ry)
		x, y = rotate(s, x, y, rx, ry)
	}
	return id
}

// TileZXY is the inverse of TileID.
func TileZXY(id uint64) (z int, x, y uint32) {
	z = (bits.Len64(3*id+1) - 1) / 2
	t := id - (uint64(1)<<(2*uint(z))-1)/3
	for a := 0; a < z; a++ {
		s := uint32(1) << uint(a)
		rx := uint32(1 & (t >> 1))
		ry := uint32(1 & (t ^ uint64(rx)))
		x, y = rotate(s, x, y, rx, ry)
		x += s * rx
		y += s * ry
		t >>= 2
	}
	return z, x, y
}

func rotate(s, x, y, rx, ry uint32) (uint32, uint32) {
	if ry == 0 {
		if rx == 1 {
			x = s - 1 - x
			y = s - 1 - y
		}
		return y, x
	}
	return x, y
}

// Entry is a directory entry: RunLength tiles from TileID on share the
// data at Offset (relative to the tile data section); a RunLength of 0
// points at a leaf directory instead (Offset relative to the leaf section).
type Entry struct {
	TileID    uint64
	Offset    uint64
	Length    uint32
	RunLength uint32
}

// marshalEntries encodes a directory as the specification lays it out:
// the count, then the columns of id deltas, run lengths, lengths and
// offsets (0 meaning "right after the previous entry's data"), all as
// varints, the whole compressed with c.
func marshalEntries(es []Entry, c Compression) ([]byte, error) {
	var raw bytes.Buffer
	tmp := make([]byte, binary.MaxVarintLen64)
	put := func(v uint64) { raw.Write(tmp[:binary.PutUvarint(tmp, v)]) }
	put(uint64(len(es)))
	var last uint64
	for _, e := range es {
		put(e.TileID - last)
		last = e.TileID
	}
	for _, e := range es {
		put(uint64(e.RunLength))
	}
	for _, e := range es {
		put(uint64(e.Length))
	}
	for i, e := range es {
		if i > 0 && e.Offset == es[i-1].Offset+uint64(es[i-1].Length) {
			put(0)
		} else {
			put(e.Offset + 1)
		}
	}
	return compress(raw.Bytes(), c)
}

func unmarshalEntries(b []byte, c Compression) ([]Entry, error) {
	raw, err := decompress(b, c)
	if err != nil {
		return nil, fmt.Errorf("directory: %w", err)
	}
	r := bytes.NewReader(raw)
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, fmt.Errorf("directory: entry count: %w", err)
	}
	if n > uint64(len(raw)) { // each entry takes at least 4 bytes
		return nil, fmt.Errorf("directory: %d entries in %d bytes", n, len(raw))
	}
	es := make([]Entry, n)
	var last uint64
	for i := range es {
		d, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, fmt.Errorf("directory: tile id %d: %w", i, err)
		}
		last += d
		es[i].TileID = last
	}
	for i := range es {
		v, err := binary.ReadUvarint(r)
		if err != nil || v > 1<<32-1 {
			return nil, fmt.Errorf("directory: run length %d: bad varint", i)
		}
		es[i].RunLength = uint32(v)
	}
	for i := range es {
		v, err := binary.ReadUvarint(r)
		if err != nil || v > 1<<32-1 {
			return nil, fmt.Errorf("directory: length %d: bad varint", i)
		}
		es[i].Length = uint32(v)
	}
	for i := range es {
		v, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, fmt.Errorf("directory: offset %d: %w", i, err)
		}
		switch {
		case v == 0 && i > 0:
			es[i].Offset = es[i-1].Offset + uint64(es[i-1].Length)
		case v == 0:
			return nil, errors.New("directory: first offset is 0")
		default:
			es[i].Offset = v - 1
		}
	}
	return es, nil
}

// find returns the entry of a sorted directory that holds id: the tile
// entry whose run covers it, or the leaf entry to look in.
func find(es []Entry, id uint64) (Entry, bool) {
	lo, hi := 0, len(es)-1
	for lo <= hi {
		m := (lo + hi) / 2
		switch {
		case id > es[m].TileID:
			lo = m + 1
		case id < es[m].TileID:
			hi = m - 1
		default:
			return es[m], true
		}
	}
	if hi >= 0 {
		e := es[hi]
		if e.RunLength == 0 || id-e.TileID < uint64(e.RunLength) {
			return e, true
		}
	}
	return Entry{}, false
}

// gzipWriters are compress's (one is most of a megabyte; a large archive
// has thousands of leaf directories).
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestCompression)
	return w
}}

func compress(b []byte, c Compression) ([]byte, error) {
	switch c {
	case NoCompression:
		return b, nil
	case Gzip:
		var out bytes.Buffer
		w := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(w)
		w.Reset(&out)
		if _, err := w.Write(b); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return out.Bytes(), nil
	}
	return nil, fmt.Errorf("compression %d is not supported for directories", c)
}

func decompress(b []byte, c Compression) ([]byte, error) {
	switch c {
	case NoCompression:
		return b, nil
	case Gzip:
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(io.LimitReader(r, 1<<30))
	}
	return nil, fmt.Errorf("compression %d is not supported for directories", c)
}
