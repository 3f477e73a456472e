package xyz_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/source/xyz"
	"tilecache/internal/vectortile"
)

// TestVectorTiles: an XYZ source of Mapbox Vector Tiles stores a tile as
// the upstream sent it, gzip-compressed or not (Encoding says which); an
// answer that is not a vector tile (an HTML page, a truncated protobuf,
// an oversized body or one that decompresses past vectortile.MaxSize) is
// a tile failure naming the upstream's URL, with nothing to store; a tile
// the upstream does not have is empty, skipped when skipBlank allows.
// vectorUpstream serves the vector tile raw at z0, gzipped at
// 1/0/0 (compressed), and at the other z1 and z2 tiles answers no vector
// tile can be made of; nothing (404) elsewhere.
func vectorUpstream(t *testing.T) (srv *httptest.Server, raw, compressed []byte) {
	t.Helper()
	raw, err := os.ReadFile("../../vectortile/testdata/mapserver-z4.pbf")
	if err != nil {
		t.Fatal(err)
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	compressed = gz(raw)
	bomb := gz(bytes.Repeat(raw, vectortile.MaxSize/len(raw)+1)) // valid wire format, too large
	huge := bytes.Repeat([]byte{0x1a, 0x00}, 25<<20)             // 50 MB of empty layers
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", vectortile.MVT)
		switch r.URL.Path {
		case "/0/0/0.pbf":
			w.Write(raw)
		case "/1/0/0.pbf":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(compressed)
		case "/1/1/0.pbf":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html><body>Bad gateway</body></html>"))
		case "/1/0/1.pbf":
			w.Write(raw[:len(raw)/2])
		case "/1/1/1.pbf":
			w.Write(huge)
		case "/2/0/0.pbf":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb)
		case "/2/3/1.pbf":
			w.Write(bytes.Repeat([]byte{0x1a, 0x04, 0x0a, 0x02, 'a', 'b'}, 2000))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, raw, compressed
}

// vectorSource is the layer "up" on the xyz vector tiles under url, with
// skipBlank skip.
func vectorSource(t *testing.T, url, skip string) *xyz.Source {
	t.Helper()
	cat, err := layer.Parse([]byte(`
layers:
  - name: up
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [application/vnd.mapbox-vector-tile]
    metatiling: [1, 1]
    source: {type: xyz, url: "`+url+`/{z}/{x}/{y}.pbf", retries: -1, allowPrivateUpstream: true, skipBlank: `+skip+`}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := cat.Layer("up")
	src, err := xyz.New(l, upstream.Shared{})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// renderVector renders the tile at column x and row yTop from the top.
func renderVector(t *testing.T, src *xyz.Source, z int, x, yTop int64) ([]source.Tile, error) {
	t.Helper()
	g, _ := grid.Builtin("EPSG:900913")
	_, rows := g.Size(z)
	y := rows - 1 - yTop
	return src.Render(t.Context(), source.Request{Layer: "up", GridSet: g, Z: z, Format: vectortile.MVT,
		Tiles: grid.TileRange{Z: z, MinX: x, MinY: y, MaxX: x, MaxY: y}})
}

func TestVectorTiles(t *testing.T) {
	srv, raw, compressed := vectorUpstream(t)
	src := vectorSource(t, srv.URL, "none")
	t.Run("as sent", func(t *testing.T) {
		tiles, err := renderVector(t, src, 0, 0, 0)
		if err != nil || len(tiles) != 1 || !bytes.Equal(tiles[0].Data, raw) || tiles[0].Encoding != "" {
			t.Fatalf("plain tile: got %+v, %v; want it as sent, no encoding", tiles, err)
		}
		tiles, err = renderVector(t, src, 1, 0, 0)
		if err != nil || len(tiles) != 1 || !bytes.Equal(tiles[0].Data, compressed) || tiles[0].Encoding != "gzip" {
			t.Fatalf("gzip tile: got %v; want the compressed bytes with Encoding gzip", err)
		}
	})
	t.Run("not vector tiles", func(t *testing.T) {
		g, _ := grid.Builtin("EPSG:900913")
		for _, c := range []struct {
			name    string
			z       int
			x, y    int64
			message string
		}{
			{"html", 1, 1, 0, "Bad gateway"},
			{"truncated", 1, 0, 1, "truncated"},
			{"50 MB", 1, 1, 1, "more than the vector tile asked for can take"},
			{"gzip past MaxSize", 2, 0, 0, "more than"},
			{"2000 layers", 2, 3, 1, "2000 layers, more than the 1000 a tile may have"},
		} {
			tiles, err := renderVector(t, src, c.z, c.x, c.y)
			var ue *upstream.Error
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), c.message) || tiles != nil {
				t.Errorf("%s: got %d tiles, %v; want an upstream error naming the URL and %q", c.name, len(tiles), err, c.message)
			}
			// The failure names the tile that failed (rows from the bottom).
			_, rows := g.Size(c.z)
			if at := fmt.Sprintf("xyz tile z%d %d/%d:", c.z, c.x, rows-1-c.y); err == nil || !strings.Contains(err.Error(), at) {
				t.Errorf("%s: %v, want it to name %q", c.name, err, at)
			}
		}
	})
	// Not there (404): an empty tile, stored as such or skipped.
	t.Run("missing", func(t *testing.T) {
		tiles, err := renderVector(t, src, 3, 5, 5)
		if err != nil || len(tiles) != 1 || tiles[0].Skip || len(tiles[0].Data) != 0 {
			t.Errorf("missing tile, skipBlank none: got %+v, %v; want an empty tile", tiles, err)
		}
		tiles, err = renderVector(t, vectorSource(t, srv.URL, "transparent"), 3, 5, 5)
		if err != nil || len(tiles) != 1 || !tiles[0].Skip {
			t.Errorf("missing tile, skipBlank transparent: got %+v, %v; want it skipped", tiles, err)
		}
	})
}
