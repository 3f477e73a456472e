package tilestore_test

import (
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
	ts := tilestore.TileSet{Prefix: "tiles", LayerID: "topp:states", GridSetID: "EPSG:4326", FormatID: id, Ext: ext, ParametersID: "default"}
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

func BenchmarkKey(b *testing.B) {
	ts := tilestore.TileSet{LayerID: "topp:states", GridSetID: "EPSG:4326", FormatID: "png", Ext: "png", ParametersID: "default"}
	b.ReportAllocs()
	for b.Loop() {
		_ = ts.Key(12, 4095, 2047)
	}
}
