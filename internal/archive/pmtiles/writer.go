package pmtiles

import (
	"bufio"
	"bytes"
	"cmp"
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
	// BufferEntries is how many records each of the Writer's sorts holds
	// in memory (40 bytes each) before it sorts them and spills them to a
	// run file: Put's, and those of Close; 0 means 1<<16 (2.5 MiB).
	BufferEntries int
	// HotContents is how many recently put distinct contents Put
	// remembers (in two generations of up to this many, about 40 bytes
	// each), so as to stage a content put again soon only once; 0 means
	// 1<<14 (at most about 1.5 MiB). A content put again after more than
	// that is staged again (and stored once all the same).
	HotContents int

	fanIn int // the most runs a sort merges at once; 0 means defaultFanIn
}

// Writer builds a clustered PMTiles archive from tiles put in any order.
//
// Put appends a tile's content to a staging file unless it is one of the
// HotContents distinct contents put last (blank and sea tiles, mostly),
// and adds a (tile id, SHA-256 of the content, where a copy of it is
// staged) record to a buffer that is sorted by tile id and spilled to a
// run file when full. Close deduplicates exactly with external sorts of
// these records: it merges the runs in tile id order (the last Put of a
// tile wins), sorts the tiles by content to find each content's first
// tile, copies each distinct content once to the tile data section in
// the order of its first tile (so the archive is clustered, and the same
// tiles give the same bytes whatever order they were put in), sorts the
// other tiles of each content back into tile id order beside them,
// run-length encodes consecutive tiles with the same content, builds the
// root and leaf directories and streams the archive to the output.
//
// Memory, whatever the number of tiles: the hot contents (two maps of at
// most HotContents entries), at most three sort buffers of BufferEntries
// records (40 bytes each) at once, 32 KiB per run merged at once (at most
// 128 runs, two merges at once: 8 MiB), 1 MiB buffers of the staging
// file, the tile data and the output, the largest tile, and one leaf
// directory (4096 entries, or 1/3500 of the entries when more: 28 bytes
// each). With the defaults, about 20 MiB. Disk: each distinct content
// once, and again each time it is put after it left the hot contents (at
// most once per tile); 36 bytes per tile of Put's runs; in Close, the
// tile data, 36 bytes per tile sorted by content, 20 bytes per distinct
// content, 36 bytes per other tile and 24 per entry, and twice a sort's
// records while a merge pass runs. A sort of more than 128 runs (128 ×
// BufferEntries records, 8 million by default) merges them in passes of
// 128, each reading and writing its records once more (one more pass up
// to a billion records by default).
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
	hot     hotSet
	puts    *extSort[putRec]
	done    bool
}

type blobRef struct {
	off uint64
	n   uint32
}

// hotSet is where Put finds the contents put last: two generations of
// up to max, the older dropped when the newer is full.
type hotSet struct {
	cur, prev map[[16]byte]blobRef
	max       int
}

func (h *hotSet) get(k [16]byte) (blobRef, bool) {
	if r, ok := h.cur[k]; ok {
		return r, true
	}
	if r, ok := h.prev[k]; ok {
		h.add(k, r) // still in use: into the newer generation
		return r, true
	}
	return blobRef{}, false
}

func (h *hotSet) add(k [16]byte, r blobRef) {
	if h.cur == nil {
		h.cur = make(map[[16]byte]blobRef)
	}
	h.cur[k] = r
	if len(h.cur) >= h.max {
		// The older generation's table, emptied, holds the next.
		h.prev, h.cur = h.cur, h.prev
		if h.cur == nil {
			h.cur = make(map[[16]byte]blobRef, h.max)
		}
		clear(h.cur)
	}
}

// putRec is one Put: the tile, its content's hash and where a copy of
// the content is in the staging file.
type putRec struct {
	id   uint64
	off  uint64
	n    uint32
	hash [16]byte
}

func putPut(b []byte, r putRec) {
	binary.LittleEndian.PutUint64(b[0:], r.id)
	binary.LittleEndian.PutUint64(b[8:], r.off)
	binary.LittleEndian.PutUint32(b[16:], r.n)
	copy(b[20:36], r.hash[:])
}

func getPut(b []byte) putRec {
	return putRec{id: binary.LittleEndian.Uint64(b[0:]), off: binary.LittleEndian.Uint64(b[8:]),
		n: binary.LittleEndian.Uint32(b[16:]), hash: [16]byte(b[20:36])}
}

// The records of the sorts: Put's by tile id, then Close's.
var (
	byTile = recordCodec[putRec]{size: 36, put: putPut, get: getPut,
		cmp: func(a, b putRec) int { return cmp.Compare(a.id, b.id) }}
	byContent = recordCodec[putRec]{size: 36, put: putPut, get: getPut,
		cmp: func(a, b putRec) int {
			if c := bytes.Compare(a.hash[:], b.hash[:]); c != 0 {
				return c
			}
			return cmp.Compare(a.id, b.id)
		}}
	// contents: a distinct content, by its first tile.
	contents = recordCodec[contentRec]{size: 20,
		put: func(b []byte, r contentRec) {
			binary.LittleEndian.PutUint64(b[0:], r.first)
			binary.LittleEndian.PutUint64(b[8:], r.off)
			binary.LittleEndian.PutUint32(b[16:], r.n)
		},
		get: func(b []byte) contentRec {
			return contentRec{first: binary.LittleEndian.Uint64(b[0:]), off: binary.LittleEndian.Uint64(b[8:]), n: binary.LittleEndian.Uint32(b[16:])}
		},
		cmp: func(a, b contentRec) int { return cmp.Compare(a.first, b.first) }}
	// others: a tile that is not its content's first, by that first tile.
	others = recordCodec[otherRec]{size: 16,
		put: func(b []byte, r otherRec) {
			binary.LittleEndian.PutUint64(b[0:], r.first)
			binary.LittleEndian.PutUint64(b[8:], r.id)
		},
		get: func(b []byte) otherRec {
			return otherRec{first: binary.LittleEndian.Uint64(b[0:]), id: binary.LittleEndian.Uint64(b[8:])}
		},
		cmp: func(a, b otherRec) int {
			if c := cmp.Compare(a.first, b.first); c != 0 {
				return c
			}
			return cmp.Compare(a.id, b.id)
		}}
	// placed: a tile and its content in the tile data, by tile id.
	placed = recordCodec[placedRec]{size: 20,
		put: func(b []byte, r placedRec) {
			binary.LittleEndian.PutUint64(b[0:], r.id)
			binary.LittleEndian.PutUint64(b[8:], r.off)
			binary.LittleEndian.PutUint32(b[16:], r.n)
		},
		get: func(b []byte) placedRec {
			return placedRec{id: binary.LittleEndian.Uint64(b[0:]), off: binary.LittleEndian.Uint64(b[8:]), n: binary.LittleEndian.Uint32(b[16:])}
		},
		cmp: func(a, b placedRec) int { return cmp.Compare(a.id, b.id) }}
)

type contentRec struct {
	first, off uint64 // first tile, staging offset
	n          uint32
}

type otherRec struct{ first, id uint64 }

type placedRec struct {
	id, off uint64 // tile, tile data offset
	n       uint32
}

// state is the staging directory's checkpoint, written by Checkpoint and
// read by Resume.
type state struct {
	Version   int      `json:"version"`
	BlobBytes uint64   `json:"blob_bytes"`
	Runs      []string `json:"runs"`
}

// stateVersion is the layout of the run files a checkpoint names (2: 36
// bytes a tile, with its content's hash).
const stateVersion = 2

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
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, stateName))
	if err != nil {
		return nil, fmt.Errorf("pmtiles: resume: no checkpoint in %s: %w", dir, err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("pmtiles: resume: checkpoint %s: %w", dir, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("pmtiles: resume: the checkpoint in %s is of version %d, not %d: write the archive again", dir, st.Version, stateVersion)
	}
	w, err := newWriter(dir, out, opt)
	if err != nil {
		return nil, err
	}
	if err := w.clearRuns(st.Runs); err != nil {
		return nil, err
	}
	w.puts.runs = st.Runs
	w.puts.next = len(st.Runs)
	f, err := os.OpenFile(filepath.Join(dir, blobsName), os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: resume: %w", err)
	}
	if err := f.Truncate(int64(st.BlobBytes)); err != nil {
		f.Close()
		return nil, fmt.Errorf("pmtiles: resume: %w", err)
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
		opt.BufferEntries = 1 << 16
	}
	if opt.HotContents <= 0 {
		opt.HotContents = 1 << 14
	}
	if opt.TileCompression == UnknownCompression {
		opt.TileCompression = NoCompression
	}
	w := &Writer{dir: dir, out: out, opt: opt, hot: hotSet{max: opt.HotContents}}
	if dir == "" {
		d, err := os.MkdirTemp("", "pmtiles-")
		if err != nil {
			return nil, fmt.Errorf("pmtiles: staging directory: %w", err)
		}
		w.dir, w.ownDir = d, true
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pmtiles: staging directory: %w", err)
	}
	w.puts = w.sort(byTile, "run")
	w.puts.lastWins, w.puts.durable = true, true
	return w, nil
}

// sort returns a new sort of the Writer's, its run files named prefix-*.
func (w *Writer) sort(c recordCodec[putRec], prefix string) *extSort[putRec] {
	return newExtSort(c, w.dir, prefix, w.opt.BufferEntries, w.opt.fanIn)
}

func (w *Writer) setBlobs(f *os.File) {
	w.blobs = f
	w.blobsW = bufio.NewWriterSize(f, 1<<20)
}

// clearRuns removes the run files of dir that keep does not list, and
// any a Close left.
func (w *Writer) clearRuns(keep []string) error {
	var names []string
	for _, pat := range []string{"run-*", "sort-*"} {
		m, err := filepath.Glob(filepath.Join(w.dir, pat))
		if err != nil {
			return fmt.Errorf("pmtiles: staging directory: %w", err)
		}
		names = append(names, m...)
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
	ref, ok := w.hot.get(k)
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
		w.hot.add(k, ref)
	}
	return w.puts.add(ctx, putRec{id: TileID(z, uint32(x), uint32(y)), off: ref.off, n: ref.n, hash: k})
}

// Checkpoint makes every tile put so far durable in the staging
// directory: a Resume after it starts from here.
func (w *Writer) Checkpoint(ctx context.Context) error {
	if err := w.puts.spill(ctx); err != nil {
		return err
	}
	if err := w.puts.syncRuns(); err != nil {
		return err
	}
	if err := w.blobsW.Flush(); err != nil {
		return fmt.Errorf("pmtiles: staging file: %w", err)
	}
	if err := w.blobs.Sync(); err != nil {
		return fmt.Errorf("pmtiles: staging file: %w", err)
	}
	b, _ := json.Marshal(state{Version: stateVersion, BlobBytes: w.blobLen, Runs: w.puts.runs})
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
	if err := w.clearRuns(nil); err != nil {
		errs = append(errs, err)
	}
	for _, n := range []string{blobsName, stateName, "data", "entries", "leaves"} {
		if err := os.Remove(filepath.Join(w.dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close writes the archive to the output and removes the staging files.
// With no tile put, it writes nothing and returns archive.ErrNoTiles.
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
	if err := w.blobsW.Flush(); err != nil {
		return fmt.Errorf("pmtiles: staging file: %w", err)
	}
	w.hot = hotSet{}
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
	if h.AddressedTiles == 0 {
		// The format's directories must not be empty (version 3.1): no
		// archive rather than one its readers may refuse.
		return fmt.Errorf("pmtiles: %w", archive.ErrNoTiles)
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

// layout writes the tile data (each distinct content once, in the order
// of its first tile) to data and the final, run-length encoded entries
// (24 bytes each) to entries.
func (w *Writer) layout(ctx context.Context, data, entries *os.File) (Header, error) {
	var h Header
	// The tiles (the last Put of each), by content.
	byHash := w.sort(byContent, "sort-content")
	tiles, err := w.puts.sorted(ctx)
	if err != nil {
		return h, err
	}
	defer tiles.close()
	for i := 0; ; i++ {
		r, ok, err := tiles.next()
		if err != nil {
			return h, err
		}
		if !ok {
			break
		}
		h.AddressedTiles++
		if err := byHash.add(ctx, r); err != nil {
			return h, err
		}
	}
	tiles.close()

	// Each content's first tile, and its other tiles.
	firsts := newExtSort(contents, w.dir, "sort-first", w.opt.BufferEntries, w.opt.fanIn)
	rest := newExtSort(others, w.dir, "sort-other", w.opt.BufferEntries, w.opt.fanIn)
	hs, err := byHash.sorted(ctx)
	if err != nil {
		return h, err
	}
	defer hs.close()
	var first putRec
	for i := 0; ; i++ {
		r, ok, err := hs.next()
		if err != nil {
			return h, err
		}
		if !ok {
			break
		}
		if i > 0 && r.hash == first.hash {
			err = rest.add(ctx, otherRec{first: first.id, id: r.id})
		} else {
			first = r
			err = firsts.add(ctx, contentRec{first: r.id, off: r.off, n: r.n})
		}
		if err != nil {
			return h, err
		}
	}
	hs.close()

	// The tile data, in the order of the contents' first tiles; the
	// tiles with their place in it, by tile id.
	tilesPlaced := newExtSort(placed, w.dir, "sort-placed", w.opt.BufferEntries, w.opt.fanIn)
	firstsPlaced, err := tilesPlaced.sortedRun()
	if err != nil {
		return h, err
	}
	defer firstsPlaced.abort()
	fs, err := firsts.sorted(ctx)
	if err != nil {
		return h, err
	}
	defer fs.close()
	rs, err := rest.sorted(ctx)
	if err != nil {
		return h, err
	}
	defer rs.close()
	o, more, err := rs.next()
	if err != nil {
		return h, err
	}
	dw := bufio.NewWriterSize(data, 1<<20)
	var blob []byte
	for i := 0; ; i++ {
		if i%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return h, err
			}
		}
		c, ok, err := fs.next()
		if err != nil {
			return h, err
		}
		if !ok {
			break
		}
		blob = slices.Grow(blob[:0], int(c.n))[:c.n]
		if _, err := w.blobs.ReadAt(blob, int64(c.off)); err != nil {
			return h, fmt.Errorf("pmtiles: staging file: %w", err)
		}
		if _, err := dw.Write(blob); err != nil {
			return h, fmt.Errorf("pmtiles: tile data: %w", err)
		}
		p := placedRec{id: c.first, off: h.DataLength, n: c.n}
		h.DataLength += uint64(c.n)
		h.TileContents++
		if err := firstsPlaced.add(p); err != nil {
			return h, err
		}
		for more && o.first == c.first {
			if err := tilesPlaced.add(ctx, placedRec{id: o.id, off: p.off, n: p.n}); err != nil {
				return h, err
			}
			if o, more, err = rs.next(); err != nil {
				return h, err
			}
		}
	}
	if more {
		return h, fmt.Errorf("pmtiles: tile %d has a content with no first tile", o.id)
	}
	if err := dw.Flush(); err != nil {
		return h, fmt.Errorf("pmtiles: tile data: %w", err)
	}
	if err := firstsPlaced.finish(); err != nil {
		return h, err
	}
	fs.close()
	rs.close()
	blob = nil

	// The entries: consecutive tiles of one content make one.
	ps, err := tilesPlaced.sorted(ctx)
	if err != nil {
		return h, err
	}
	defer ps.close()
	ew := bufio.NewWriterSize(entries, 1<<16)
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
	for i := 0; ; i++ {
		if i%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return h, err
			}
		}
		p, ok, err := ps.next()
		if err != nil {
			return h, err
		}
		if !ok {
			break
		}
		// A run stops at the end of a level, so that the last entry's
		// tile id names the highest level, as readers check.
		if have && cur.Offset == p.off && cur.TileID+uint64(cur.RunLength) == p.id && cur.RunLength < math.MaxUint32 && !firstOfLevel(p.id) {
			cur.RunLength++
			continue
		}
		if have {
			flush()
		}
		cur, have = Entry{TileID: p.id, Offset: p.off, Length: p.n, RunLength: 1}, true
	}
	if have {
		flush()
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
