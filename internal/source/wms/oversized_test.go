package wms_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"tilecache/internal/grid"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/source/wms"
)

// hugePNG returns a small, valid-looking PNG whose header declares w×h
// pixels: what a hostile or broken upstream can send.
func hugePNG(t *testing.T, w, h uint32) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	binary.BigEndian.PutUint32(b[16:20], w)
	binary.BigEndian.PutUint32(b[20:24], h)
	binary.BigEndian.PutUint32(b[29:33], crc32.ChecksumIEEE(b[12:29])) // a consistent IHDR
	return b
}

// TestOversizedAnswersRefusedBeforeAllocating: an answer whose header
// declares an image other than the one asked for, or whose body is longer
// than the image asked for can take, is a tile failure naming the problem,
// found without allocating the declared image.
func TestOversizedAnswersRefusedBeforeAllocating(t *testing.T) {
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(body.Load().([]byte))
	}))
	defer srv.Close()
	l := layerOf(t, strings.Replace(base, "http://127.0.0.1:1/wms?map=/srv/world.map", srv.URL+"/wms", 1)+"      retries: -1\n      allowPrivateUpstream: true\n")
	s, err := wms.New(l, upstream.Shared{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := grid.Builtin("EPSG:4326")
	req := source.Request{Layer: "l", GridSet: g, Z: 2, Tiles: grid.TileRange{Z: 2, MinX: 0, MinY: 0, MaxX: 3, MaxY: 3}, Format: "image/png"}
	for _, c := range []struct {
		name, want string
		body       []byte
	}{
		{"header declares 8000×8000", "image is 8000×8000 pixels, asked for 1024×1024", hugePNG(t, 8000, 8000)},
		{"body longer than the image asked for", "more than the image asked for can take", bytes.Repeat([]byte{0}, 1024*1024*4+2<<20)},
	} {
		t.Run(c.name, func(t *testing.T) {
			body.Store(c.body)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := s.Render(t.Context(), req)
			runtime.ReadMemStats(&after)
			var ue *upstream.Error
			if !errors.As(err, &ue) || !strings.Contains(ue.Msg, c.want) {
				t.Fatalf("got %v, want an upstream error saying %q", err, c.want)
			}
			// 8000² RGBA would be 244 MiB (under the decoder's pixel limit);
			// a refused body is read to the limit at most (the metatile's
			// 4 MiB raw size plus 1 MiB, in a growing buffer). The count
			// includes the test server's allocations (and the race
			// detector's): the bound is generous, the difference is not.
			if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
				t.Errorf("allocated %d MiB to refuse it, want at most 64", got>>20)
			}
		})
	}
}
