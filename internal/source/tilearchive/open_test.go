package tilearchive_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/archive"
	"tilecache/internal/archive/mbtiles"
	"tilecache/internal/source/tilearchive"
	"tilecache/internal/source/upstream"
	"tilecache/internal/vectortile"
)

// TestOpenerLocations: an import's archive is opened where the Opener
// allows it — a file only with Files, a web server's PMTiles only at an
// address the upstreams' policy allows, an MBTiles never from a web
// server — its kind read from its bytes and its tiles counted and walked
// from any point; what it refuses is Invalid, naming the location.
func TestOpenerLocations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pm := writePMTiles(t)
	pmPath := filepath.Join(dir, "a.pmtiles")
	if err := os.WriteFile(pmPath, pm, 0o600); err != nil {
		t.Fatal(err)
	}
	mbPath := filepath.Join(dir, "a.mbtiles")
	w, err := mbtiles.Create(ctx, mbPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put(ctx, 0, 0, 0, []byte("tile")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx, archive.Metadata{Format: "pbf", VectorLayers: []byte(`[{"id":"a","fields":{}}]`)}); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"/a.pmtiles": pm}
	mb, err := os.ReadFile(mbPath)
	if err != nil {
		t.Fatal(err)
	}
	files["/a.mbtiles"] = mb
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, ok := files[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("ETag", fmt.Sprintf(`"%x"`, sha256.Sum256(b)))
		http.ServeContent(w, req, "a", time.Time{}, bytes.NewReader(b))
	}))
	defer srv.Close()
	access := tilearchive.Access{OpenMBTiles: openMBTiles}
	loopback := upstream.Shared{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

	for _, c := range []struct {
		name string
		op   tilearchive.Opener
		loc  string
		kind string
		n    int64
	}{
		{"PMTiles file", tilearchive.Opener{Access: access, Files: true}, pmPath, "pmtiles", 18},
		{"MBTiles file", tilearchive.Opener{Access: access, Files: true}, mbPath, "mbtiles", 1},
		{"PMTiles on a web server", tilearchive.Opener{Access: access, Shared: loopback}, srv.URL + "/a.pmtiles", "pmtiles", 18},
	} {
		o, err := c.op.Open(ctx, c.loc)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		n, err := o.Count(ctx, 0, 31)
		var walked int64
		werr := o.Walk(ctx, 0, 31, 1, func(z int, x, y int64, data []byte) error { walked++; return nil })
		if o.Kind != c.kind || err != nil || n != c.n || werr != nil || walked != c.n-1 {
			t.Errorf("%s: kind %s, %d tiles (%v), %d walked after the first (%v); want %s of %d", c.name, o.Kind, n, err, walked, werr, c.kind, c.n)
		}
		o.Close()
	}
	if o, err := (tilearchive.Opener{Access: access, Files: true}).Open(ctx, mbPath); err != nil || o.MIME() != vectortile.MVT || !o.Matches(vectortile.MVT) || o.Matches("image/png") {
		t.Errorf("MBTiles of pbf tiles: %v", err)
	} else {
		o.Close()
	}

	for _, c := range []struct {
		name, loc, says string
		op              tilearchive.Opener
	}{
		{"a file without Files", pmPath, "embedded backend", tilearchive.Opener{Access: access}},
		{"a loopback web server", srv.URL + "/a.pmtiles", "loopback", tilearchive.Opener{Access: access}},
		{"an MBTiles on a web server", srv.URL + "/a.mbtiles", "only PMTiles is read from a web server", tilearchive.Opener{Access: access, Shared: loopback}},
		{"no archive there", srv.URL + "/none.pmtiles", "404", tilearchive.Opener{Access: access, Shared: loopback}},
		{"a missing file", filepath.Join(dir, "none.pmtiles"), "no such file", tilearchive.Opener{Access: access, Files: true}},
		{"an object without a bucket", "s3://b/a.pmtiles", "AWS backend", tilearchive.Opener{Access: access}},
		{"another scheme", "ftp://host/a.pmtiles", "scheme", tilearchive.Opener{Access: access}},
	} {
		_, err := c.op.Open(ctx, c.loc)
		if !apperr.Is(err, apperr.Invalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want Invalid saying %q", c.name, err, c.says)
		}
	}
}
