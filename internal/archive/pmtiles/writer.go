package pmtiles

import (
	"bufio"
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"tilecache/internal/archive"
)

// Options tune a Writer.
type Options struct {
	// TileCompression says how the tiles given to Put are already
	// compressed (gzip for most vector tile caches, none for images);
	// they are stored as given.
	TileCompression Compression
	// BufferEntries is how many tiles Put holds in memory (24 bytes each)
	// before it sorts them and spills them to a run file; 0 means 1<<18
	// (6 MiB).
	BufferEntries int
}

// Writer builds a clustered PMTiles archive from tiles put in any order.
//
// Each distinct tile content is appended once to a staging file, found
// again by its SHA-256; each Put adds a 20-byte (tile id, content) record
// to an in-memory buffer that is sorted and spilled to a run file when
// full. Close merges the runs in tile id order, copies each content to the
// tile data section in the order of its first tile (so the archive is
// clustered, and the same tiles give the same bytes whatever order they
// were put in), run-length encodes consecutive tiles with the same
// content, builds the root and leaf directories and streams the archive
// to the output. Memory: the buffer, about 60 bytes per distinct content
// (the hash index, then the offset map of Close), 32 KiB per spilled run
// while merging, and one leaf directory; disk: the distinct contents twice
// and 20 bytes per tile.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	dir     string
	ownDir  bool
	out     io.Writer
	opt     Options
	blobs   *os.File
	blobsW  *bufio.Writer
	blobLen uint64
	seen    map[[16]byte]blobRef
	buf     []staged
	runs    []string
	done    bool
}

type blobRef struct {
	off uint64
	n   uint32
}

// staged is one Put: the tile and where its content is in the staging file.
type staged struct {
	id  uint64
	off uint64
	n   uint32
}

const stagedLen = 20

// state is the staging directory's checkpoint, written by Checkpoint and
// read by Resume.
type state struct {
	BlobBytes uint64   `json:"blob_bytes"`
	Runs      []string `json:"runs"`
}

const (
	blobsName = "contents"
	stateName = "state.json"
)

// Create starts an archive staged in dir (created if missing; "" means a
// new temporary directory, removed by Close) that Close writes to out.
// Whatever a previous writer left in dir is discarded.
func Create(dir string, out io.Writer, opt Options) (*Writer, error) {
	w, err := newWriter(dir, out, opt)
	if err != nil {
		return nil, err
	}
	if err := w.clearRuns(nil); err != nil {
		return nil, err
	}
	_ = os.Remove(filepath.Join(w.dir, stateName))
	f, err := os.OpenFile(filepath.Join(w.dir, blobsName), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: staging file: %w", err)
	}
	w.setBlobs(f)
	return w, nil
}

// Resume reopens the archive staged in dir at its last Checkpoint: tiles
// put after it are forgotten and must be put again. It is how an export
// that died goes on; the archive it ends with has the same bytes as if
// it had not died.
func Resume(ctx context.Context, dir string, out io.Writer, opt Options) (*Writer, error) {
	if dir == "" {
		return nil, errors.New("pmtiles: resume needs the staging directory")
	}
	b, err := os.ReadFile(filepath.Join(dir, stateName))
	if err != nil {
		return nil, fmt.Errorf("pmtiles: resume: no checkpoint in %s: %w", dir, err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("pmtiles: resume: checkpoint %s: %w", dir, err)
	}
	w, err := newWriter(dir, out, opt)
	if err != nil {
		return nil, err
	}
	if err := w.clearRuns(st.Runs); err != nil {
		return nil, err
	}
	w.runs = st.Runs
	f, err := os.OpenFile(filepath.Join(dir, blobsName), os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: resume: %w", err)
	}
	if err := f.Truncate(int64(st.BlobBytes)); err != nil {
		f.Close()
		return nil, fmt.Errorf("pmtiles: resume: %w", err)
	}
	// Index the contents again.
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, int64(st.BlobBytes)), 1<<20)
	var pos uint64
	var lenb [4]byte
	var data []byte
	for pos < st.BlobBytes {
		if err := ctx.Err(); err != nil {
			f.Close()
			return nil, err
		}
		if _, err := io.ReadFull(r, lenb[:]); err != nil {
			f.Close()
			return nil, fmt.Errorf("pmtiles: resume: staging file at %d: %w", pos, err)
		}
		n := binary.LittleEndian.Uint32(lenb[:])
		data = slices.Grow(data[:0], int(n))[:n]
		if _, err := io.ReadFull(r, data); err != nil {
			f.Close()
			return nil, fmt.Errorf("pmtiles: resume: staging file at %d: %w", pos, err)
		}
		w.seen[key(data)] = blobRef{off: pos + 4, n: n}
		pos += 4 + uint64(n)
	}
	if _, err := f.Seek(int64(st.BlobBytes), io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("pmtiles: resume: %w", err)
	}
	w.setBlobs(f)
	w.blobLen = st.BlobBytes
	return w, nil
}

func newWriter(dir string, out io.Writer, opt Options) (*Writer, error) {
	if opt.BufferEntries <= 0 {
		opt.BufferEntries = 1 << 18
	}
	if opt.TileCompression == UnknownCompression {
		opt.TileCompression = NoCompression
	}
	w := &Writer{dir: dir, out: out, opt: opt, seen: make(map[[16]byte]blobRef)}
	if dir == "" {
		d, err := os.MkdirTemp("", "pmtiles-")
		if err != nil {
			return nil, fmt.Errorf("pmtiles: staging directory: %w", err)
		}
		w.dir, w.ownDir = d, true
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pmtiles: staging directory: %w", err)
	}
	return w, nil
}

func (w *Writer) setBlobs(f *os.File) {
	w.blobs = f
	w.blobsW = bufio.NewWriterSize(f, 1<<20)
}

// clearRuns removes the run files of dir that keep does not list.
func (w *Writer) clearRuns(keep []string) error {
	names, err := filepath.Glob(filepath.Join(w.dir, "run-*"))
	if err != nil {
		return fmt.Errorf("pmtiles: staging directory: %w", err)
	}
	for _, n := range names {
		if !slices.Contains(keep, filepath.Base(n)) {
			if err := os.Remove(n); err != nil {
				return fmt.Errorf("pmtiles: staging directory: %w", err)
			}
		}
	}
	return nil
}

func key(data []byte) [16]byte {
	h := sha256.Sum256(data)
	return [16]byte(h[:16])
}

// Put adds a tile; a tile put twice keeps the data of the last Put.
func (w *Writer) Put(ctx context.Context, z int, x, y int64, data []byte) error {
	if w.done {
		return errors.New("pmtiles: put after close")
	}
	if err := archive.CheckTile(z, x, y); err != nil {
		return fmt.Errorf("pmtiles: %w", err)
	}
	if uint64(len(data)) > math.MaxUint32 {
		return fmt.Errorf("pmtiles: tile %d/%d/%d has %d bytes, more than a PMTiles entry holds", z, x, y, len(data))
	}
	k := key(data)
	ref, ok := w.seen[k]
	if !ok {
		var lenb [4]byte
		binary.LittleEndian.PutUint32(lenb[:], uint32(len(data)))
		if _, err := w.blobsW.Write(lenb[:]); err != nil {
			return fmt.Errorf("pmtiles: staging file: %w", err)
		}
		if _, err := w.blobsW.Write(data); err != nil {
			return fmt.Errorf("pmtiles: staging file: %w", err)
		}
		ref = blobRef{off: w.blobLen + 4, n: uint32(len(data))}
		w.blobLen += 4 + uint64(len(data))
		w.seen[k] = ref
	}
	w.buf = append(w.buf, staged{id: TileID(z, uint32(x), uint32(y)), off: ref.off, n: ref.n})
	if len(w.buf) >= w.opt.BufferEntries {
		return w.spill(ctx)
	}
	return nil
}

// spill sorts the buffer by tile id (keeping the last Put of a tile) and
// writes it to a new run file.
func (w *Writer) spill(ctx context.Context) error {
	if len(w.buf) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	slices.SortStableFunc(w.buf, func(a, b staged) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	name := fmt.Sprintf("run-%06d", len(w.runs))
	f, err := os.OpenFile(filepath.Join(w.dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("pmtiles: run file: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	var rec [stagedLen]byte
	for i, s := range w.buf {
		if i+1 < len(w.buf) && w.buf[i+1].id == s.id {
			continue // a later Put of the same tile wins
		}
		binary.LittleEndian.PutUint64(rec[0:], s.id)
		binary.LittleEndian.PutUint64(rec[8:], s.off)
		binary.LittleEndian.PutUint32(rec[16:], s.n)
		bw.Write(rec[:])
	}
	err = bw.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pmtiles: run file: %w", err)
	}
	w.runs = append(w.runs, name)
	w.buf = w.buf[:0]
	return nil
}

// Checkpoint makes every tile put so far durable in the staging
// directory: a Resume after it starts from here.
func (w *Writer) Checkpoint(ctx context.Context) error {
	if err := w.spill(ctx); err != nil {
		return err
	}
	if err := w.blobsW.Flush(); err != nil {
		return fmt.Errorf("pmtiles: staging file: %w", err)
	}
	if err := w.blobs.Sync(); err != nil {
		return fmt.Errorf("pmtiles: staging file: %w", err)
	}
	b, _ := json.Marshal(state{BlobBytes: w.blobLen, Runs: w.runs})
	tmp := filepath.Join(w.dir, stateName+".tmp")
	if err := writeSynced(tmp, b); err != nil {
		return fmt.Errorf("pmtiles: checkpoint: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(w.dir, stateName)); err != nil {
		return fmt.Errorf("pmtiles: checkpoint: %w", err)
	}
	return nil
}

func writeSynced(name string, b []byte) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Abort drops the archive and its staging files.
func (w *Writer) Abort() error {
	w.done = true
	if w.blobs != nil {
		w.blobs.Close()
	}
	return w.cleanup()
}

func (w *Writer) cleanup() error {
	if w.ownDir {
		return os.RemoveAll(w.dir)
	}
	var errs []error
	for _, n := range append(slices.Clone(w.runs), blobsName, stateName, "data", "entries", "leaves") {
		if err := os.Remove(filepath.Join(w.dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close writes the archive to the output and removes the staging files.
// When it fails, a staging directory given to Create stays as the last
// Checkpoint left it, for Resume or Abort.
func (w *Writer) Close(ctx context.Context, md archive.Metadata) (err error) {
	if w.done {
		return errors.New("pmtiles: closed twice")
	}
	w.done = true
	defer func() {
		w.blobs.Close()
		if err != nil && !w.ownDir {
			return // the staging directory stays for Resume or Abort
		}
		if cerr := w.cleanup(); err == nil && cerr != nil {
			err = fmt.Errorf("pmtiles: removing staging files: %w", cerr)
		}
	}()
	if err := w.spill(ctx); err != nil {
		return err
	}
	if err := w.blobsW.Flush(); err != nil {
		return fmt.Errorf("pmtiles: staging file: %w", err)
	}
	w.seen = nil
	data, err := os.OpenFile(filepath.Join(w.dir, "data"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("pmtiles: %w", err)
	}
	defer data.Close()
	entries, err := os.OpenFile(filepath.Join(w.dir, "entries"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("pmtiles: %w", err)
	}
	defer entries.Close()
	h, err := w.layout(ctx, data, entries)
	if err != nil {
		return err
	}
	leaves, err := os.OpenFile(filepath.Join(w.dir, "leaves"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("pmtiles: %w", err)
	}
	defer leaves.Close()
	root, leafLen, err := buildDirectories(ctx, entries, h.TileEntries, leaves)
	if err != nil {
		return err
	}
	meta, err := marshalMetadata(md)
	if err != nil {
		return err
	}
	fillHeader(&h, md)
	h.TileCompression = w.opt.TileCompression
	h.RootOffset, h.RootLength = headerLen, uint64(len(root))
	h.MetadataOffset, h.MetadataLength = h.RootOffset+h.RootLength, uint64(len(meta))
	h.LeafOffset, h.LeafLength = h.MetadataOffset+h.MetadataLength, leafLen
	h.DataOffset = h.LeafOffset + h.LeafLength

	out := bufio.NewWriterSize(w.out, 1<<20)
	for _, b := range [][]byte{h.marshal(), root, meta} {
		if _, err := out.Write(b); err != nil {
			return fmt.Errorf("pmtiles: writing archive: %w", err)
		}
	}
	for _, f := range []*os.File{leaves, data} {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("pmtiles: %w", err)
		}
		if _, err := io.Copy(out, f); err != nil {
			return fmt.Errorf("pmtiles: writing archive: %w", err)
		}
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("pmtiles: writing archive: %w", err)
	}
	return nil
}

// layout merges the runs into the final, run-length encoded entries
// (written to entries, 24 bytes each) and copies each distinct content to
// data in the order of its first tile.
func (w *Writer) layout(ctx context.Context, data, entries *os.File) (Header, error) {
	var h Header
	m, err := newMerger(w.dir, w.runs)
	if err != nil {
		return h, err
	}
	defer m.close()
	dw := bufio.NewWriterSize(data, 1<<20)
	ew := bufio.NewWriterSize(entries, 1<<16)
	placed := make(map[uint64]uint64) // staging offset -> data offset
	var cur Entry
	var have bool
	var rec [24]byte
	flush := func() {
		binary.LittleEndian.PutUint64(rec[0:], cur.TileID)
		binary.LittleEndian.PutUint64(rec[8:], cur.Offset)
		binary.LittleEndian.PutUint32(rec[16:], cur.Length)
		binary.LittleEndian.PutUint32(rec[20:], cur.RunLength)
		ew.Write(rec[:])
		h.TileEntries++
	}
	var blob []byte
	for i := 0; ; i++ {
		if i%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return h, err
			}
		}
		s, ok, err := m.next()
		if err != nil {
			return h, err
		}
		if !ok {
			break
		}
		h.AddressedTiles++
		off, ok := placed[s.off]
		if !ok {
			blob = slices.Grow(blob[:0], int(s.n))[:s.n]
			if _, err := w.blobs.ReadAt(blob, int64(s.off)); err != nil {
				return h, fmt.Errorf("pmtiles: staging file: %w", err)
			}
			off = h.DataLength
			if _, err := dw.Write(blob); err != nil {
				return h, fmt.Errorf("pmtiles: tile data: %w", err)
			}
			h.DataLength += uint64(s.n)
			h.TileContents++
			placed[s.off] = off
		}
		// A run stops at the end of a level, so that the last entry's
		// tile id names the highest level, as readers check.
		if have && cur.Offset == off && cur.TileID+uint64(cur.RunLength) == s.id && cur.RunLength < math.MaxUint32 && !firstOfLevel(s.id) {
			cur.RunLength++
			continue
		}
		if have {
			flush()
		}
		cur, have = Entry{TileID: s.id, Offset: off, Length: s.n, RunLength: 1}, true
	}
	if have {
		flush()
	}
	if err := dw.Flush(); err != nil {
		return h, fmt.Errorf("pmtiles: tile data: %w", err)
	}
	if err := ew.Flush(); err != nil {
		return h, fmt.Errorf("pmtiles: entries: %w", err)
	}
	h.Clustered = true
	if h.TileEntries > 0 {
		first, err := readEntries(entries, 0, 1)
		if err != nil {
			return h, err
		}
		last, err := readEntries(entries, h.TileEntries-1, 1)
		if err != nil {
			return h, err
		}
		minZ, _, _ := TileZXY(first[0].TileID)
		maxZ, _, _ := TileZXY(last[0].TileID)
		h.MinZoom, h.MaxZoom = uint8(minZ), uint8(maxZ)
	}
	return h, nil
}

func firstOfLevel(id uint64) bool {
	z, _, _ := TileZXY(id)
	return id == (uint64(1)<<(2*uint(z))-1)/3
}

func readEntries(f *os.File, from, n uint64) ([]Entry, error) {
	b := make([]byte, 24*n)
	if _, err := f.ReadAt(b, int64(24*from)); err != nil {
		return nil, fmt.Errorf("pmtiles: entries: %w", err)
	}
	es := make([]Entry, n)
	for i := range es {
		r := b[24*i:]
		es[i] = Entry{
			TileID:    binary.LittleEndian.Uint64(r[0:]),
			Offset:    binary.LittleEndian.Uint64(r[8:]),
			Length:    binary.LittleEndian.Uint32(r[16:]),
			RunLength: binary.LittleEndian.Uint32(r[20:]),
		}
	}
	return es, nil
}

// buildDirectories returns the root directory, writing leaf directories
// to leaves when the entries do not fit in the root: leaves of at least
// 4096 entries, grown until the root fits in the first 16 KiB.
func buildDirectories(ctx context.Context, entries *os.File, n uint64, leaves *os.File) ([]byte, uint64, error) {
	const maxRoot = rootLimit - headerLen
	if n <= 16384 {
		es, err := readEntries(entries, 0, n)
		if err != nil {
			return nil, 0, err
		}
		root, err := marshalEntries(es, Gzip)
		if err != nil {
			return nil, 0, fmt.Errorf("pmtiles: root directory: %w", err)
		}
		if len(root) <= maxRoot {
			return root, 0, nil
		}
	}
	leafSize := max(uint64(4096), n/3500)
	for {
		if err := leaves.Truncate(0); err != nil {
			return nil, 0, fmt.Errorf("pmtiles: leaf directories: %w", err)
		}
		lw := bufio.NewWriterSize(io.NewOffsetWriter(leaves, 0), 1<<20)
		var rootEntries []Entry
		var off uint64
		for from := uint64(0); from < n; from += leafSize {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
			es, err := readEntries(entries, from, min(leafSize, n-from))
			if err != nil {
				return nil, 0, err
			}
			b, err := marshalEntries(es, Gzip)
			if err != nil {
				return nil, 0, fmt.Errorf("pmtiles: leaf directory: %w", err)
			}
			if _, err := lw.Write(b); err != nil {
				return nil, 0, fmt.Errorf("pmtiles: leaf directories: %w", err)
			}
			rootEntries = append(rootEntries, Entry{TileID: es[0].TileID, Offset: off, Length: uint32(len(b))})
			off += uint64(len(b))
		}
		if err := lw.Flush(); err != nil {
			return nil, 0, fmt.Errorf("pmtiles: leaf directories: %w", err)
		}
		root, err := marshalEntries(rootEntries, Gzip)
		if err != nil {
			return nil, 0, fmt.Errorf("pmtiles: root directory: %w", err)
		}
		if len(root) <= maxRoot {
			return root, off, nil
		}
		leafSize += leafSize / 5
	}
}

func marshalMetadata(md archive.Metadata) ([]byte, error) {
	m := map[string]any{}
	for k, v := range map[string]string{"name": md.Name, "description": md.Description,
		"attribution": md.Attribution, "type": md.Type, "format": md.Format} {
		if v != "" {
			m[k] = v
		}
	}
	if len(md.VectorLayers) > 0 {
		if !json.Valid(md.VectorLayers) || !strings.HasPrefix(strings.TrimSpace(string(md.VectorLayers)), "[") {
			return nil, errors.New("pmtiles: vector_layers is not a JSON array")
		}
		m["vector_layers"] = md.VectorLayers
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: metadata: %w", err)
	}
	return compress(b, Gzip)
}

func e7(v float64) int32 { return int32(math.Round(v * 1e7)) }

func fillHeader(h *Header, md archive.Metadata) {
	h.InternalCompression = Gzip
	h.TileType = TileTypeOf(md.Format)
	if h.TileEntries == 0 { // otherwise the zooms are those of the tiles, as readers check
		h.MinZoom, h.MaxZoom = uint8(md.MinZoom), uint8(md.MaxZoom)
	}
	b := md.Bounds
	if b == [4]float64{} {
		b = [4]float64{-180, -85.0511287798066, 180, 85.0511287798066}
	}
	h.MinLonE7, h.MinLatE7, h.MaxLonE7, h.MaxLatE7 = e7(b[0]), e7(b[1]), e7(b[2]), e7(b[3])
	c := md.Center
	if c == [3]float64{} {
		c = [3]float64{(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, float64(h.MinZoom)}
	}
	c[2] = min(max(c[2], float64(h.MinZoom)), float64(h.MaxZoom))
	h.CenterLonE7, h.CenterLatE7, h.CenterZoom = e7(c[0]), e7(c[1]), uint8(c[2])
}

// merger reads the sorted runs back as one sorted stream, keeping for
// each tile the record of the latest run.
type merger struct {
	files []*os.File
	h     runHeap
}

type runHead struct {
	s   staged
	run int
	r   *bufio.Reader
}

type runHeap []*runHead

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if h[i].s.id != h[j].s.id {
		return h[i].s.id < h[j].s.id
	}
	return h[i].run > h[j].run
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runHead)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newMerger(dir string, runs []string) (*merger, error) {
	m := &merger{}
	for i, name := range runs {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			m.close()
			return nil, fmt.Errorf("pmtiles: run file: %w", err)
		}
		m.files = append(m.files, f)
		rh := &runHead{run: i, r: bufio.NewReaderSize(f, 1<<15)}
		ok, err := rh.advance()
		if err != nil {
			m.close()
			return nil, err
		}
		if ok {
			m.h = append(m.h, rh)
		}
	}
	heap.Init(&m.h)
	return m, nil
}

func (rh *runHead) advance() (bool, error) {
	var rec [stagedLen]byte
	if _, err := io.ReadFull(rh.r, rec[:]); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, fmt.Errorf("pmtiles: run file: %w", err)
	}
	rh.s = staged{
		id:  binary.LittleEndian.Uint64(rec[0:]),
		off: binary.LittleEndian.Uint64(rec[8:]),
		n:   binary.LittleEndian.Uint32(rec[16:]),
	}
	return true, nil
}

// next returns the next tile in id order.
func (m *merger) next() (staged, bool, error) {
	if len(m.h) == 0 {
		return staged{}, false, nil
	}
	top := m.h[0]
	s := top.s // the latest run's record of this tile comes first
	for len(m.h) > 0 && m.h[0].s.id == s.id {
		rh := m.h[0]
		ok, err := rh.advance()
		if err != nil {
			return staged{}, false, err
		}
		if ok {
			heap.Fix(&m.h, 0)
		} else {
			heap.Pop(&m.h)
		}
	}
	return s, true, nil
}

func (m *merger) close() {
	for _, f := range m.files {
		f.Close()
	}
}
