package pmtiles

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"tilecache/internal/archive"
)

// RangeReader reads length bytes at off of an archive: a file, an object
// read with range requests, an HTTP range request. It may return fewer
// bytes only at the end of the archive.
type RangeReader interface {
	ReadRange(ctx context.Context, off, length int64) ([]byte, error)
}

// ReaderAt makes an io.ReaderAt (an *os.File, a bytes.Reader) a RangeReader.
func ReaderAt(r io.ReaderAt) RangeReader { return readerAt{r} }

type readerAt struct{ r io.ReaderAt }

func (r readerAt) ReadRange(ctx context.Context, off, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := make([]byte, length)
	n, err := r.r.ReadAt(b, off)
	if err == io.EOF {
		err = nil
	}
	return b[:n], err
}

// Reader reads tiles of a PMTiles archive with a few range reads each: the
// header and root directory are read once, by Open, and up to 64 leaf
// directories are kept. It is safe for concurrent use.
type Reader struct {
	src    RangeReader
	header Header
	root   []Entry

	mu     sync.Mutex
	leaves map[uint64][]Entry
}

const maxLeaves = 64

// Open reads the archive's header and root directory.
func Open(ctx context.Context, src RangeReader) (*Reader, error) {
	b, err := src.ReadRange(ctx, 0, rootLimit)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: reading header: %w", err)
	}
	h, err := unmarshalHeader(b)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: %w", err)
	}
	if h.InternalCompression != Gzip && h.InternalCompression != NoCompression {
		return nil, fmt.Errorf("pmtiles: directory compression %d is not supported (gzip or none)", h.InternalCompression)
	}
	var rb []byte
	if h.RootOffset+h.RootLength <= uint64(len(b)) {
		rb = b[h.RootOffset : h.RootOffset+h.RootLength]
	} else if rb, err = readExact(ctx, src, h.RootOffset, h.RootLength); err != nil {
		return nil, fmt.Errorf("pmtiles: root directory: %w", err)
	}
	root, err := unmarshalEntries(rb, h.InternalCompression)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: root %w", err)
	}
	return &Reader{src: src, header: h, root: root, leaves: map[uint64][]Entry{}}, nil
}

func readExact(ctx context.Context, src RangeReader, off, n uint64) ([]byte, error) {
	if n > 1<<31 {
		return nil, fmt.Errorf("a section of %d bytes is too long", n)
	}
	b, err := src.ReadRange(ctx, int64(off), int64(n))
	if err != nil {
		return nil, err
	}
	if uint64(len(b)) != n {
		return nil, fmt.Errorf("archive ends %d bytes into a section of %d at %d", len(b), n, off)
	}
	return b, nil
}

// Header returns the archive's header.
func (r *Reader) Header() Header { return r.header }

// Close releases nothing; the RangeReader is the caller's.
func (r *Reader) Close() error { return nil }

func (r *Reader) leaf(ctx context.Context, e Entry) ([]Entry, error) {
	off := r.header.LeafOffset + e.Offset
	r.mu.Lock()
	es, ok := r.leaves[off]
	r.mu.Unlock()
	if ok {
		return es, nil
	}
	b, err := readExact(ctx, r.src, off, uint64(e.Length))
	if err != nil {
		return nil, fmt.Errorf("pmtiles: leaf directory at %d: %w", off, err)
	}
	es, err = unmarshalEntries(b, r.header.InternalCompression)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: leaf %w", err)
	}
	r.mu.Lock()
	if len(r.leaves) >= maxLeaves {
		for k := range r.leaves {
			delete(r.leaves, k)
			break
		}
	}
	r.leaves[off] = es
	r.mu.Unlock()
	return es, nil
}

// Tile returns the data of tile z/x/y, as stored (compressed as the
// header's TileCompression says).
func (r *Reader) Tile(ctx context.Context, z int, x, y int64) ([]byte, bool, error) {
	if err := archive.CheckTile(z, x, y); err != nil {
		return nil, false, fmt.Errorf("pmtiles: %w", err)
	}
	id := TileID(z, uint32(x), uint32(y))
	dir := r.root
	for depth := 0; depth < 4; depth++ {
		e, ok := find(dir, id)
		if !ok {
			return nil, false, nil
		}
		if e.RunLength > 0 {
			b, err := readExact(ctx, r.src, r.header.DataOffset+e.Offset, uint64(e.Length))
			if err != nil {
				return nil, false, fmt.Errorf("pmtiles: tile %d/%d/%d: %w", z, x, y, err)
			}
			return b, true, nil
		}
		var err error
		if dir, err = r.leaf(ctx, e); err != nil {
			return nil, false, err
		}
	}
	return nil, false, errors.New("pmtiles: directories nested more than 4 deep")
}

// Metadata returns the header's zooms, bounds, center and tile type with
// the JSON metadata's names.
func (r *Reader) Metadata(ctx context.Context) (archive.Metadata, error) {
	h := r.header
	md := archive.Metadata{
		Format:  FormatOf(h.TileType),
		MinZoom: int(h.MinZoom),
		MaxZoom: int(h.MaxZoom),
		Bounds:  [4]float64{float64(h.MinLonE7) / 1e7, float64(h.MinLatE7) / 1e7, float64(h.MaxLonE7) / 1e7, float64(h.MaxLatE7) / 1e7},
		Center:  [3]float64{float64(h.CenterLonE7) / 1e7, float64(h.CenterLatE7) / 1e7, float64(h.CenterZoom)},
	}
	if h.MetadataLength == 0 {
		return md, nil
	}
	b, err := readExact(ctx, r.src, h.MetadataOffset, h.MetadataLength)
	if err != nil {
		return md, fmt.Errorf("pmtiles: metadata: %w", err)
	}
	if b, err = decompress(b, h.InternalCompression); err != nil {
		return md, fmt.Errorf("pmtiles: metadata: %w", err)
	}
	var m struct {
		Name, Description, Attribution, Type string
		VectorLayers                         json.RawMessage `json:"vector_layers"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return md, fmt.Errorf("pmtiles: metadata: %w", err)
	}
	md.Name, md.Description, md.Attribution, md.Type, md.VectorLayers = m.Name, m.Description, m.Attribution, m.Type, m.VectorLayers
	return md, nil
}

// Tiles calls fn for every tile, in tile id order. It reads the tile data
// in spans of up to 1 MiB, so a clustered archive takes about one read per
// MiB, and keeps up to 16 MiB of small contents that several entries
// share (blank tiles, mostly) rather than read them again.
func (r *Reader) Tiles(ctx context.Context, fn func(z int, x, y int64, data []byte) error) error {
	s := &span{r: r, shared: map[uint64][]byte{}}
	return r.walk(ctx, r.root, 0, s, fn)
}

const (
	spanLen      = 1 << 20
	sharedMaxLen = 4096
	sharedBudget = 16 << 20
)

// span is the part of the tile data section Tiles last read, and the
// small contents it has met.
type span struct {
	r          *Reader
	off        uint64
	buf        []byte
	shared     map[uint64][]byte
	sharedSize int
}

func (s *span) read(ctx context.Context, e Entry) ([]byte, error) {
	if b, ok := s.shared[e.Offset]; ok && len(b) == int(e.Length) {
		return b, nil
	}
	if e.Offset < s.off || e.Offset+uint64(e.Length) > s.off+uint64(len(s.buf)) {
		n := max(uint64(e.Length), spanLen)
		if h := s.r.header; h.DataLength > 0 && e.Offset+n > h.DataLength {
			n = max(h.DataLength-min(e.Offset, h.DataLength), uint64(e.Length))
		}
		b, err := s.r.src.ReadRange(ctx, int64(s.r.header.DataOffset+e.Offset), int64(n))
		if err != nil {
			return nil, err
		}
		if uint64(len(b)) < uint64(e.Length) {
			return nil, fmt.Errorf("archive ends %d bytes into a tile of %d", len(b), e.Length)
		}
		s.off, s.buf = e.Offset, b
	}
	b := s.buf[e.Offset-s.off : e.Offset-s.off+uint64(e.Length) : e.Offset-s.off+uint64(e.Length)]
	if e.Length <= sharedMaxLen && s.sharedSize+int(e.Length) <= sharedBudget {
		if _, ok := s.shared[e.Offset]; !ok {
			s.shared[e.Offset] = bytes.Clone(b)
			s.sharedSize += int(e.Length)
		}
	}
	return b, nil
}

func (r *Reader) walk(ctx context.Context, dir []Entry, depth int, s *span, fn func(z int, x, y int64, data []byte) error) error {
	if depth > 3 {
		return errors.New("pmtiles: directories nested more than 4 deep")
	}
	for _, e := range dir {
		if e.RunLength == 0 {
			leaf, err := r.leaf(ctx, e)
			if err != nil {
				return err
			}
			if err := r.walk(ctx, leaf, depth+1, s, fn); err != nil {
				return err
			}
			continue
		}
		b, err := s.read(ctx, e)
		if err != nil {
			return fmt.Errorf("pmtiles: tile data at %d: %w", e.Offset, err)
		}
		for i := uint64(0); i < uint64(e.RunLength); i++ {
			z, x, y := TileZXY(e.TileID + i)
			if err := fn(z, int64(x), int64(y), b); err != nil {
				return err
			}
		}
	}
	return nil
}
