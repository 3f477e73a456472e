package pmtiles

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// verify checks the invariants of the version 3 specification on a
// whole archive, walking its directories on its own (the header and
// entry decoders are the only code of the package it uses): every
// section lies inside the file and the file is exactly its sections;
// the root directory fits the first 16 KiB; each directory is non-empty
// and sorted, no entry has a length of 0, leaf entries point inside the
// leaf section and tile entries inside the tile data; no two sections
// overlap; the header's counts (addressed tiles, tile entries, distinct
// contents) are the ones the directories hold; in a clustered archive
// each new content follows the previous one; the min and max zoom are
// the lowest and highest tiles', the center zoom lies between them and
// the bounds have an area. fn, if not nil, is called with each
// addressed tile and its data.
func verify(b []byte, fn func(z int, x, y uint32, data []byte) error) error {
	h, err := unmarshalHeader(b)
	if err != nil {
		return err
	}
	size := uint64(len(b))
	sections := []struct {
		name        string
		off, length uint64
	}{
		{"root directory", h.RootOffset, h.RootLength},
		{"metadata", h.MetadataOffset, h.MetadataLength},
		{"leaf directories", h.LeafOffset, h.LeafLength},
		{"tile data", h.DataOffset, h.DataLength},
	}
	total := uint64(headerLen)
	for _, s := range sections {
		if s.off < headerLen && s.length > 0 || s.off > size || s.length > size-s.off {
			return fmt.Errorf("%s at %d, %d bytes: outside the %d-byte file", s.name, s.off, s.length, size)
		}
		total += s.length
	}
	for _, s := range sections {
		for _, o := range sections {
			if s.name != o.name && s.length > 0 && o.length > 0 && s.off < o.off+o.length && o.off < s.off+s.length {
				return fmt.Errorf("%s and %s overlap", s.name, o.name)
			}
		}
	}
	if total != size {
		return fmt.Errorf("sections and header take %d bytes, the file %d", total, size)
	}
	if h.RootOffset+h.RootLength > rootLimit {
		return fmt.Errorf("root directory ends at %d, past the first %d bytes", h.RootOffset+h.RootLength, rootLimit)
	}
	if h.RootLength == 0 {
		return fmt.Errorf("no root directory")
	}

	var addressed, entries uint64
	minID, maxID := uint64(math.MaxUint64), uint64(0)
	contents := map[uint64]bool{}
	var next uint64 // where the next new content must start when clustered
	var walk func(off, length uint64, depth int, lo, hi uint64) error
	walk = func(off, length uint64, depth int, lo, hi uint64) error {
		if depth > 3 {
			return fmt.Errorf("directories deeper than 3 levels")
		}
		es, err := unmarshalEntries(b[off:off+length], h.InternalCompression)
		if err != nil {
			return fmt.Errorf("directory at %d: %w", off, err)
		}
		if len(es) == 0 {
			return fmt.Errorf("directory at %d: empty", off)
		}
		for i, e := range es {
			if i > 0 && e.TileID <= es[i-1].TileID {
				return fmt.Errorf("directory at %d: entry %d: tile id %d after %d", off, i, e.TileID, es[i-1].TileID)
			}
			if e.TileID < lo || e.TileID >= hi {
				return fmt.Errorf("directory at %d: entry %d: tile id %d outside [%d, %d) its parent gives", off, i, e.TileID, lo, hi)
			}
			end := hi
			if i+1 < len(es) {
				end = es[i+1].TileID
			}
			if e.RunLength == 0 {
				if e.Offset+uint64(e.Length) > h.LeafLength || e.Length == 0 {
					return fmt.Errorf("leaf entry %+v: outside the leaf section (%d bytes)", e, h.LeafLength)
				}
				if err := walk(h.LeafOffset+e.Offset, uint64(e.Length), depth+1, e.TileID, end); err != nil {
					return err
				}
				continue
			}
			if e.TileID+uint64(e.RunLength) > end {
				return fmt.Errorf("tile entry %+v: its run overlaps the next entry at %d", e, end)
			}
			if e.Length == 0 || e.Offset+uint64(e.Length) > h.DataLength {
				return fmt.Errorf("tile entry %+v: outside the tile data (%d bytes)", e, h.DataLength)
			}
			if !contents[e.Offset] {
				if h.Clustered && e.Offset != next {
					return fmt.Errorf("clustered archive: new content of entry %+v at %d, want %d", e, e.Offset, next)
				}
				contents[e.Offset] = true
				next = e.Offset + uint64(e.Length)
			}
			addressed += uint64(e.RunLength)
			entries++
			minID = min(minID, e.TileID)
			maxID = max(maxID, e.TileID+uint64(e.RunLength)-1)
			if fn != nil {
				data := b[h.DataOffset+e.Offset : h.DataOffset+e.Offset+uint64(e.Length)]
				for id := e.TileID; id < e.TileID+uint64(e.RunLength); id++ {
					z, x, y := TileZXY(id)
					if err := fn(z, x, y, data); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := walk(h.RootOffset, h.RootLength, 0, 0, math.MaxUint64); err != nil {
		return err
	}
	if h.Clustered && next != h.DataLength {
		return fmt.Errorf("clustered archive: contents end at %d, the tile data at %d", next, h.DataLength)
	}
	if addressed != h.AddressedTiles || entries != h.TileEntries || uint64(len(contents)) != h.TileContents {
		return fmt.Errorf("header counts %d addressed tiles, %d entries, %d contents; the directories %d, %d, %d",
			h.AddressedTiles, h.TileEntries, h.TileContents, addressed, entries, len(contents))
	}
	if minZ, _, _ := TileZXY(minID); minZ != int(h.MinZoom) {
		return fmt.Errorf("header min zoom %d, lowest tile's %d", h.MinZoom, minZ)
	}
	if maxZ, _, _ := TileZXY(maxID); maxZ != int(h.MaxZoom) {
		return fmt.Errorf("header max zoom %d, highest tile's %d", h.MaxZoom, maxZ)
	}
	if h.CenterZoom < h.MinZoom || h.CenterZoom > h.MaxZoom {
		return fmt.Errorf("center zoom %d outside %d-%d", h.CenterZoom, h.MinZoom, h.MaxZoom)
	}
	if h.MinLonE7 >= h.MaxLonE7 || h.MinLatE7 >= h.MaxLatE7 {
		return fmt.Errorf("bounds %d,%d,%d,%d have no area", h.MinLonE7, h.MinLatE7, h.MaxLonE7, h.MaxLatE7)
	}
	return nil
}

// verify rejects an archive whose header disagrees with its directories
// or points outside the file.
func TestVerifyRejectsBrokenArchives(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	set := tileSet(rng, 5, 500)
	b := write(t, shuffled(rng, set), set, Options{})
	if err := verify(b, nil); err != nil {
		t.Fatalf("the unbroken archive: %v", err)
	}
	for name, breakIt := range map[string]func(h *Header){
		"addressed tiles":   func(h *Header) { h.AddressedTiles++ },
		"tile entries":      func(h *Header) { h.TileEntries-- },
		"tile contents":     func(h *Header) { h.TileContents++ },
		"min zoom":          func(h *Header) { h.MinZoom++ },
		"max zoom":          func(h *Header) { h.MaxZoom-- },
		"center zoom":       func(h *Header) { h.CenterZoom = h.MaxZoom + 1 },
		"bounds":            func(h *Header) { h.MaxLonE7 = h.MinLonE7 },
		"data past the end": func(h *Header) { h.DataLength++ },
		"overlapping":       func(h *Header) { h.MetadataOffset = h.RootOffset },
		"root past 16 KiB":  func(h *Header) { h.RootOffset += rootLimit },
		"leaf outside":      func(h *Header) { h.LeafOffset = uint64(len(b)) + 1; h.LeafLength = 1 },
		"metadata into the tile data": func(h *Header) {
			h.DataLength--
			h.MetadataLength++
		},
	} {
		h, err := unmarshalHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		breakIt(&h)
		broken := append(h.marshal(), b[headerLen:]...)
		if err := verify(broken, nil); err == nil {
			t.Errorf("%s: verify found nothing wrong", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// In an archive marked clustered each new content follows the previous
// one: two tiles whose contents are stored in the reverse order pass only
// when the archive is not marked clustered.
func TestVerifyClusteredOrder(t *testing.T) {
	root, err := marshalEntries([]Entry{
		{TileID: 1, Offset: 1, Length: 1, RunLength: 1},
		{TileID: 2, Offset: 0, Length: 1, RunLength: 1},
	}, NoCompression)
	if err != nil {
		t.Fatal(err)
	}
	md := []byte("{}")
	h := Header{
		RootOffset: headerLen, RootLength: uint64(len(root)),
		MetadataOffset: headerLen + uint64(len(root)), MetadataLength: uint64(len(md)),
		AddressedTiles: 2, TileEntries: 2, TileContents: 2,
		InternalCompression: NoCompression, TileCompression: NoCompression, TileType: PNG,
		MinZoom: 1, MaxZoom: 1, CenterZoom: 1, MinLonE7: -1, MinLatE7: -1, MaxLonE7: 1, MaxLatE7: 1,
	}
	h.LeafOffset = h.MetadataOffset + h.MetadataLength
	h.DataOffset, h.DataLength = h.LeafOffset, 2
	for _, clustered := range []bool{false, true} {
		h.Clustered = clustered
		b := append(append(append(h.marshal(), root...), md...), "ba"...)
		err := verify(b, nil)
		if clustered != (err != nil) {
			t.Errorf("clustered %v: verify: %v", clustered, err)
		}
	}
}
