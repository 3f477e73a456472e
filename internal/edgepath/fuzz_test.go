package edgepath

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"tilecache/internal/tilestore"
)

// FuzzMap: Map never panics; a path it maps to a tile's key names, once
// percent-decoded as the bucket decodes it, a key tilestore parses back
// to the tile the path asked for (rows flipped); a path it maps to an
// OGC API document names a .json key under /ogcapi without empty, . or ..
// segments; and the key it gives is never longer than MaxKey, never one of
// the service's own objects, and never holds an escaped slash.
func FuzzMap(f *testing.F) {
	table, ct := loadCases(f)
	for _, c := range ct.Cases {
		f.Add(c.URI)
	}
	for _, s := range []string{
		"/xyz/a%2F..%2F_tilecache/EPSG:900913/png/default/0/0/0.png",
		"/xyz/%2E%2E/EPSG:900913/png/default/0/0/0.png",
		"/xyz/_tilecache/EPSG:900913/png/default/0/0/0.png",
		"/wmts/l/EPSG:4326/png/default/0/0/0.png%2F..%2Fx",
		"/xyz/l/EPSG:4326/png/default/0/0/0.jpeg",
		"/ogcapi/collections%2Fx",
		"/ogcapi/%2e%2E/x",
		"/xyz/" + strings.Repeat("l", 2000) + "/EPSG:4326/png/default/0/0/0.png",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		key, ok := Map(path, table)
		if !ok {
			return
		}
		if len(key) > MaxKey {
			t.Fatalf("%q: key of %d bytes, more than %d", path, len(key), MaxKey)
		}
		if strings.Contains(strings.ToLower(key), "%2f") {
			t.Fatalf("%q: key %q holds an escaped slash", path, key)
		}
		plain, err := url.PathUnescape(key)
		if err != nil {
			t.Fatalf("%q: key %q is not percent-decoded: %v", path, key, err)
		}
		if Reserved(key) {
			t.Fatalf("%q: key %q is one of the service's own objects", path, key)
		}
		if plain == "/ogcapi.json" || strings.HasPrefix(plain, "/ogcapi/") {
			if !strings.HasSuffix(plain, ".json") {
				t.Fatalf("%q: document key %q without .json", path, key)
			}
			for _, s := range strings.Split(strings.TrimPrefix(plain, "/"), "/") {
				if s == "" || s == "." || s == ".." {
					t.Fatalf("%q: document key %q has a segment %q", path, key, s)
				}
			}
			return
		}
		layerID, _, _ := strings.Cut(strings.TrimPrefix(plain, "/"), "/")
		set, z, x, y, ok := tilestore.ParseLayerKey("", layerID, strings.TrimPrefix(plain, "/"))
		if !ok {
			t.Fatalf("%q: key %q does not parse as a tile's", path, key)
		}
		if layerID == "." || layerID == ".." {
			t.Fatalf("%q: key %q names layer %q", path, key, layerID)
		}
		for _, s := range []string{set.GridSetID, set.FormatID, set.ParametersID, set.Ext} {
			if s == "." || s == ".." {
				t.Fatalf("%q: key %q has a segment %q", path, key, s)
			}
		}
		if set.Key(z, x, y) != strings.TrimPrefix(plain, "/") {
			t.Fatalf("%q: key %q is written %q by tilestore", path, key, set.Key(z, x, y))
		}
		// The tile the path asked for, its row from the top.
		seg := strings.Split(path, "/")
		var zs, xs, ys, gridSet string
		switch {
		case strings.HasPrefix(path, ogcTiles) && len(seg) == 9: // /ogcapi/collections/{layer}/tiles/{tms}/{z}/{row}/{col}.{f}
			gridSet, zs, ys = seg[5], seg[6], seg[7]
			xs, _, _ = strings.Cut(seg[8], ".")
		case strings.HasPrefix(path, ogcTiles): // /ogcapi/collections/{layer}/map/tiles/{tms}/{z}/{row}/{col}.{f}
			gridSet, zs, ys = seg[6], seg[7], seg[8]
			xs, _, _ = strings.Cut(seg[9], ".")
		default: // /{xyz,wmts}/{layer}/{gridSet}/{format}/{params}/{z}/{x}/{y}.{ext}
			gridSet, zs, xs = seg[3], seg[6], seg[7]
			ys, _, _ = strings.Cut(seg[8], ".")
		}
		id, _ := url.PathUnescape(gridSet)
		levels := table[id]
		wantZ, _ := strconv.Atoi(zs)
		wantX, _ := strconv.ParseInt(xs, 10, 64)
		top, _ := strconv.ParseInt(ys, 10, 64)
		if z != wantZ || x != wantX || y != levels.Rows[z]-1-top {
			t.Fatalf("%q: key %q is tile %d/%d/%d, want %d/%d/%d", path, key, z, x, y, wantZ, wantX, levels.Rows[wantZ]-1-top)
		}
		if want := levels.GridSet; want != "" && set.GridSetID != want {
			t.Fatalf("%q: key %q has grid set %q, want %q", path, key, set.GridSetID, want)
		}
	})
}
