package quota_test

import (
	"testing"

	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// TestTileKeysOnly: a recount counts the keys TileSet.Key builds, and the
// tiles of a format this program does not serve by their own extension,
// and nothing else (a number with a sign or a leading zero, an extension
// other than the format's, a side object); a clean-up of the pages of the
// unknown format, which lists their columns, deletes those tiles alone.
func TestTileKeysOnly(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	png := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, LayerID: "a", Ext: "png"}
	pbf := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "pbf", ParametersID: "default"}, LayerID: "a", Ext: "pbf"}
	tiles := []string{png.Key(3, 1, 1), pbf.Key(3, 1, 2)}
	others := []string{
		png.LevelDir(3) + "1/01.png", png.LevelDir(3) + "1/+2.png", png.LevelDir(3) + "1/-1.png", png.LevelDir(3) + "1/3.jpeg",
		pbf.LevelDir(3) + "1/02.pbf", pbf.LevelDir(3) + "1/4.", png.Dir() + "tilemapresource.xml", tilestore.ParametersKey("", "a", "abc"),
	}
	f.put(t, append(tiles, others...)...)
	ls := f.maintain(t)
	if len(ls) != 1 || ls[0].Dirty || ls[0].Tiles != 2 || ls[0].Bytes != 2*8192 {
		t.Fatalf("recount: got %+v, want 2 tiles of 8192 bytes, clean", ls)
	}
	ps, err := f.store.Pages(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	formats := map[string]int64{}
	for _, p := range ps {
		formats[p.Key.Set.FormatID] += p.Tiles
	}
	if len(formats) != 2 || formats["png"] != 1 || formats["pbf"] != 1 {
		t.Fatalf("recount: got tiles by format %v, want one png and one pbf", formats)
	}

	f.configure(t, quota.Patch{Enabled: ptr(true), GlobalQuota: ptr(int64(0))})
	if err := f.cleaner.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range tiles {
		if _, found, err := f.tiles.Stat(ctx, k); err != nil || found {
			t.Errorf("tile %s: got found %v (err %v) after the clean-up, want it deleted", k, found, err)
		}
	}
	for _, k := range others {
		if _, found, err := f.tiles.Stat(ctx, k); err != nil || !found {
			t.Errorf("object %s: got found %v (err %v) after the clean-up, want it kept", k, found, err)
		}
	}
}

// TestNameOfAnotherLayersID: the usage of a layer that is gone, whose name
// is now another layer's id, reaches none of that layer's tiles: its
// recount counts it empty (the other layer's tiles are counted once, as
// that layer's), and its clean-up removes its page records and no tile.
func TestNameOfAnotherLayersID(t *testing.T) {
	f := newFixtureWith(t, `
layers:
  - name: b
    id: gone
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
`)
	ctx := t.Context()
	name := tilestore.SetName{Layer: "gone", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}
	b := tilestore.TileSet{SetName: name, LayerID: "gone", Ext: "png"}
	b.SetName.Layer = "b"
	tiles := []string{b.Key(3, 1, 1), b.Key(3, 70, 1)}
	f.put(t, tiles...)
	// The usage the layer called gone left behind.
	left := []quota.PageDelta{{Page: quota.PageOf(name, 3, 1, 1), Tiles: 1, Bytes: 8192}}
	if err := f.store.ApplyDeltas(ctx, left, f.now); err != nil {
		t.Fatal(err)
	}
	ls := f.maintain(t)
	got := map[string]int64{}
	for _, l := range ls {
		if l.Dirty {
			t.Errorf("layer %s still awaits its recount", l.Layer)
		}
		got[l.Layer] = l.Tiles
	}
	if got["b"] != 2 || got["gone"] != 0 {
		t.Fatalf("recount: got tiles by layer %v, want b 2 and gone 0", got)
	}

	// A clean-up of gone's pages (recorded again) deletes none of b's tiles.
	if err := f.store.ApplyDeltas(ctx, left, f.now); err != nil {
		t.Fatal(err)
	}
	f.configure(t, quota.Patch{Enabled: ptr(true), LayerQuotas: &[]quota.LayerQuota{{Layer: "gone", Policy: "LRU", Quota: 0}}})
	if err := f.cleaner.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if ps, err := f.store.Pages(ctx, "gone"); err != nil || len(ps) != 0 {
		t.Errorf("gone's pages after its clean-up: %+v (err %v), want none", ps, err)
	}
	for _, k := range tiles {
		if _, found, err := f.tiles.Stat(ctx, k); err != nil || !found {
			t.Errorf("b's tile %s: got found %v (err %v) after gone's clean-up, want it kept", k, found, err)
		}
	}
}
