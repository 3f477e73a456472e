package tilestore_test

import (
	"strconv"
	"strings"
	"testing"

	"tilecache/internal/tilestore"
)

func TestParametersID(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"none", nil, "default"},
		{"contract example", map[string]string{"STYLES": "pophatch"}, "7510004a12f49fdd49a2ba366e9c4594be7e4358"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tilestore.ParametersID(tt.params); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	if got, want := tilestore.ParametersQuery(map[string]string{"STYLES": "a b", "CQL_FILTER": "X > 1"}), "?CQL_FILTER=X > 1&STYLES=a b"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestKey(t *testing.T) {
	id, ext, ok := tilestore.Format("image/png")
	if !ok {
		t.Fatal("image/png unknown")
	}
	ts := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: id, ParametersID: "default"}, Prefix: "tiles", LayerID: "topp:states", Ext: ext}
	if got, want := ts.Key(3, 5, 2), "tiles/topp:states/EPSG:4326/png/default/3/5/2.png"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	ts.Prefix = ""
	if got, want := ts.Key(0, 0, 0), "topp:states/EPSG:4326/png/default/0/0/0.png"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	for mime, want := range map[string][2]string{
		"image/png8": {"png8", "png"}, "image/png; mode=24bit": {"png_24", "png"}, "image/jpeg": {"jpeg", "jpeg"},
	} {
		id, ext, _ := tilestore.Format(mime)
		if id != want[0] || ext != want[1] {
			t.Errorf("%s: got %s/%s, want %s/%s", mime, id, ext, want[0], want[1])
		}
	}
	if got, want := tilestore.ParametersKey("", "a", "x"), "a/parameters-x.properties"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestSetName: a tile set's id (persisted in usage records and task
// stores) names the layer by name, its keys by store id.
func TestSetName(t *testing.T) {
	ts := tilestore.TileSet{SetName: tilestore.SetName{Layer: "topp:states", GridSetID: "EPSG:4326", FormatID: "png8",
		ParametersID: "default"}, Prefix: "tiles", LayerID: "states-v2", Ext: "png"}
	if got, want := ts.ID(), "topp:states|EPSG:4326|png8|default"; got != want {
		t.Errorf("ID: got %s, want %s", got, want)
	}
	if got, want := ts.Key(3, 5, 2), "tiles/states-v2/EPSG:4326/png8/default/3/5/2.png"; got != want {
		t.Errorf("Key: got %s, want %s", got, want)
	}
}

func BenchmarkKey(b *testing.B) {
	ts := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, LayerID: "topp:states", Ext: "png"}
	b.ReportAllocs()
	for b.Loop() {
		_ = ts.Key(12, 4095, 2047)
	}
}

func TestParseKey(t *testing.T) {
	ts := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "png8", ParametersID: "default"}, Prefix: "tiles", LayerID: "topp:states", Ext: "png"}
	dir := "tiles/topp:states/EPSG:4326/png8/default/"
	tests := []struct {
		name   string
		key    string
		z      int
		x, y   int64
		wantOK bool
	}{
		{"tile", dir + "3/5/2.png", 3, 5, 2, true},
		{"origin", dir + "0/0/0.png", 0, 0, 0, true},
		{"largest", dir + "30/9223372036854775807/9223372036854775807.png", 30, 1<<63 - 1, 1<<63 - 1, true},
		{"leading zero row", dir + "3/5/02.png", 0, 0, 0, false},
		{"leading zero level", dir + "03/5/2.png", 0, 0, 0, false},
		{"zero written twice", dir + "3/00/2.png", 0, 0, 0, false},
		{"plus sign", dir + "3/+5/2.png", 0, 0, 0, false},
		{"minus sign", dir + "3/5/-2.png", 0, 0, 0, false},
		{"space", dir + "3/ 5/2.png", 0, 0, 0, false},
		{"underscore", dir + "3/1_0/2.png", 0, 0, 0, false},
		{"hex", dir + "3/0x5/2.png", 0, 0, 0, false},
		{"full-width digit", dir + "3/５/2.png", 0, 0, 0, false},
		{"overflow", dir + "3/9223372036854775808/2.png", 0, 0, 0, false},
		{"twenty digits", dir + "3/10000000000000000000/2.png", 0, 0, 0, false},
		{"empty number", dir + "3//2.png", 0, 0, 0, false},
		{"other extension", dir + "3/5/2.jpeg", 0, 0, 0, false},
		{"format id as extension", dir + "3/5/2.png8", 0, 0, 0, false},
		{"extension twice", dir + "3/5/2.png.png", 0, 0, 0, false},
		{"no extension", dir + "3/5/2", 0, 0, 0, false},
		{"empty extension", dir + "3/5/2.", 0, 0, 0, false},
		{"extra segment", dir + "3/5/2/1.png", 0, 0, 0, false},
		{"missing segment", dir + "3/2.png", 0, 0, 0, false},
		{"trailing slash", dir + "3/5/2.png/", 0, 0, 0, false},
		{"other parameters", "tiles/topp:states/EPSG:4326/png8/7510004a12f49fdd49a2ba366e9c4594be7e4358/3/5/2.png", 0, 0, 0, false},
		{"other format", "tiles/topp:states/EPSG:4326/png/default/3/5/2.png", 0, 0, 0, false},
		{"other layer", "tiles/topp:states2/EPSG:4326/png8/default/3/5/2.png", 0, 0, 0, false},
		{"without prefix", "topp:states/EPSG:4326/png8/default/3/5/2.png", 0, 0, 0, false},
		{"side object", "tiles/topp:states/parameters-default.properties", 0, 0, 0, false},
		{"directory", dir, 0, 0, 0, false},
		{"empty", "", 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z, x, y, ok := ts.ParseKey(tt.key)
			if ok != tt.wantOK || z != tt.z || x != tt.x || y != tt.y {
				t.Errorf("ParseKey(%q): got %d/%d/%d %v, want %d/%d/%d %v", tt.key, z, x, y, ok, tt.z, tt.x, tt.y, tt.wantOK)
			}
			if ok {
				if got := ts.Key(z, x, y); got != tt.key {
					t.Errorf("Key(%d, %d, %d): got %q, want %q", z, x, y, got, tt.key)
				}
			}
		})
	}
	// A prefix with a trailing slash and no prefix, as Key writes them.
	for _, prefix := range []string{"tiles/", "a/b", ""} {
		s := ts
		s.Prefix = prefix
		key := s.Key(12, 4095, 0)
		if z, x, y, ok := s.ParseKey(key); !ok || z != 12 || x != 4095 || y != 0 {
			t.Errorf("prefix %q: ParseKey(%q): got %d/%d/%d %v, want 12/4095/0 true", prefix, key, z, x, y, ok)
		}
		if !strings.HasPrefix(key, s.LevelDir(12)) {
			t.Errorf("prefix %q: key %q is not under LevelDir %q", prefix, key, s.LevelDir(12))
		}
	}
}

func TestParseLayerKey(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		key    string
		want   tilestore.TileSet // Prefix and LayerID are filled in
		z      int
		x, y   int64
		wantOK bool
	}{
		{"known format", "tiles", "tiles/l/EPSG:4326/png8/default/3/5/2.png",
			tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "png8", ParametersID: "default"}, Ext: "png"}, 3, 5, 2, true},
		{"prefix with a slash", "tiles/", "tiles/l/g/jpeg/abc/0/0/0.jpeg",
			tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "g", FormatID: "jpeg", ParametersID: "abc"}, Ext: "jpeg"}, 0, 0, 0, true},
		{"format of another writer", "", "l/g/pbf/default/7/1/9.pbf",
			tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "g", FormatID: "pbf", ParametersID: "default"}, Ext: "pbf"}, 7, 1, 9, true},
		{"known format, other extension", "", "l/g/png8/default/3/5/2.png8", tilestore.TileSet{}, 0, 0, 0, false},
		{"unknown format, no extension", "", "l/g/pbf/default/3/5/2.", tilestore.TileSet{}, 0, 0, 0, false},
		{"leading zero", "", "l/g/png/default/3/05/2.png", tilestore.TileSet{}, 0, 0, 0, false},
		{"negative row", "", "l/g/png/default/3/5/-2.png", tilestore.TileSet{}, 0, 0, 0, false},
		{"empty grid set", "", "l//png/default/3/5/2.png", tilestore.TileSet{}, 0, 0, 0, false},
		{"empty parameters", "", "l/g/png//3/5/2.png", tilestore.TileSet{}, 0, 0, 0, false},
		{"parameters file", "", "l/parameters-abc.properties", tilestore.TileSet{}, 0, 0, 0, false},
		{"tile map document", "", "l/g/png/default/tilemapresource.xml", tilestore.TileSet{}, 0, 0, 0, false},
		{"another layer", "", "l2/g/png/default/3/5/2.png", tilestore.TileSet{}, 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, z, x, y, ok := tilestore.ParseLayerKey(tt.prefix, "l", tt.key)
			want := tt.want
			if tt.wantOK {
				want.Prefix, want.LayerID = tt.prefix, "l"
			}
			if ok != tt.wantOK || set != want || z != tt.z || x != tt.x || y != tt.y {
				t.Errorf("got %+v %d/%d/%d %v, want %+v %d/%d/%d %v", set, z, x, y, ok, want, tt.z, tt.x, tt.y, tt.wantOK)
			}
			if ok {
				if got := set.Key(z, x, y); got != tt.key {
					t.Errorf("Key(%d, %d, %d): got %q, want %q", z, x, y, got, tt.key)
				}
			}
		})
	}
}

// FuzzParseKey checks that whatever the parsers accept is a key Key builds,
// byte for byte, so that one tile has one key.
func FuzzParseKey(f *testing.F) {
	f.Add("tiles", "topp:states", "tiles/topp:states/EPSG:4326/png/default/3/5/2.png")
	f.Add("", "l", "l/g/png8/default/0/0/0.png")
	f.Add("a/b/", "l", "a/b/l/g/pbf/7510004a12f49fdd49a2ba366e9c4594be7e4358/12/4095/9223372036854775807.pbf")
	f.Add("", "l", "l/g/png/default/3/05/2.png")
	f.Add("", "l", "l/parameters-default.properties")
	f.Fuzz(func(t *testing.T, prefix, layerID, key string) {
		set, z, x, y, ok := tilestore.ParseLayerKey(prefix, layerID, key)
		if ok {
			if got := set.Key(z, x, y); got != key {
				t.Fatalf("ParseLayerKey(%q, %q, %q) = %+v %d/%d/%d, whose Key is %q", prefix, layerID, key, set, z, x, y, got)
			}
			if z2, x2, y2, ok2 := set.ParseKey(key); !ok2 || z2 != z || x2 != x || y2 != y {
				t.Fatalf("ParseKey(%q) of %+v: got %d/%d/%d %v, want %d/%d/%d true", key, set, z2, x2, y2, ok2, z, x, y)
			}
			if z < 0 || x < 0 || y < 0 {
				t.Fatalf("ParseLayerKey(%q): negative tile %d/%d/%d", key, z, x, y)
			}
		}
		for _, ext := range []string{"png", "jpeg"} {
			ts := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "g", FormatID: "png8", ParametersID: "default"}, Prefix: prefix, LayerID: layerID, Ext: ext}
			z, x, y, ok := ts.ParseKey(key)
			if ok {
				if got := ts.Key(z, x, y); got != key {
					t.Fatalf("ParseKey(%q) of %+v = %d/%d/%d, whose Key is %q", key, ts, z, x, y, got)
				}
			}
			rz, rx, ry, rok := refParseKey(ts, key)
			if ok != rok || z != rz || x != rx || y != ry {
				t.Fatalf("ParseKey(%q) of %+v: got %d/%d/%d %v, the reference says %d/%d/%d %v", key, ts, z, x, y, ok, rz, rx, ry, rok)
			}
		}
	})
}

// refParseKey is ParseKey written the slow, obvious way, as the fuzz
// test's oracle: read the tile from the key's last three segments with
// strconv and accept the key when Key rebuilds it.
func refParseKey(s tilestore.TileSet, key string) (int, int64, int64, bool) {
	parts := strings.Split(key, "/")
	n := len(parts)
	if n < 3 {
		return 0, 0, 0, false
	}
	row, ext, ok := strings.Cut(parts[n-1], ".")
	if !ok || ext != s.Ext {
		return 0, 0, 0, false
	}
	z, err1 := strconv.Atoi(parts[n-3])
	x, err2 := strconv.ParseInt(parts[n-2], 10, 64)
	y, err3 := strconv.ParseInt(row, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || z < 0 || x < 0 || y < 0 || s.Key(z, x, y) != key {
		return 0, 0, 0, false
	}
	return z, x, y, true
}

func BenchmarkParseKey(b *testing.B) {
	ts := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, Prefix: "tiles", LayerID: "topp:states", Ext: "png"}
	key := ts.Key(12, 4095, 2047)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, ok := ts.ParseKey(key); !ok {
			b.Fatal("not parsed")
		}
	}
}

// FuzzParseCanonical checks ParseCanonical, on a string and on the same
// bytes, against strconv: ok exactly when s parses as a non-negative int64
// that FormatInt writes back as s.
func FuzzParseCanonical(f *testing.F) {
	for _, s := range []string{"", "0", "00", "01", "7", "42", "-1", "+1", " 1", "1 ", "1.0", "0x10",
		"9223372036854775807", "9223372036854775808", "18446744073709551616", "99999999999999999999", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := tilestore.ParseCanonical(s)
		bn, bok := tilestore.ParseCanonical([]byte(s))
		if n != bn || ok != bok {
			t.Fatalf("ParseCanonical(%q) = %d, %t as a string, %d, %t as bytes", s, n, ok, bn, bok)
		}
		want, err := strconv.ParseInt(s, 10, 64)
		wantOK := err == nil && want >= 0 && strconv.FormatInt(want, 10) == s
		if !wantOK {
			want = 0
		}
		if n != want || ok != wantOK {
			t.Fatalf("ParseCanonical(%q) = %d, %t, want %d, %t", s, n, ok, want, wantOK)
		}
	})
}
