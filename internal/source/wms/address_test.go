package wms_test

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/source/wms"
)

// TestUpstreamAddresses: a WMS on 127.0.0.1 is reached only by a layer of
// the layer file that sets allowPrivateUpstream, or when the process
// allows the network; a layer managed by the store that carries the
// setting does not get it. A refused GetMap never reaches the WMS and
// names the address's class.
func TestUpstreamAddresses(t *testing.T) {
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 256, 256))); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "image/png")
		w.Write(img.Bytes())
	}))
	defer srv.Close()
	layerWith := func(optIn string, managed layer.Managed) *layer.Layer {
		l := layerOf(t, `
layers:
  - name: l
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: wms, url: "`+srv.URL+`/wms?apikey=s3cret", layers: a, retries: -1`+optIn+`}
`)
		l.Managed = managed
		return l
	}
	loopback := upstream.Shared{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	tests := []struct {
		name    string
		l       *layer.Layer
		sh      upstream.Shared
		allowed bool
	}{
		{"file layer", layerWith("", layer.ManagedByFile), upstream.Shared{}, false},
		{"file layer, allowPrivateUpstream: false", layerWith(", allowPrivateUpstream: false", layer.ManagedByFile), upstream.Shared{}, false},
		{"file layer, allowPrivateUpstream: true", layerWith(", allowPrivateUpstream: true", layer.ManagedByFile), upstream.Shared{}, true},
		{"store layer, allowPrivateUpstream: true", layerWith(", allowPrivateUpstream: true", layer.ManagedByStore), upstream.Shared{}, false},
		{"store layer, the process allows 127.0.0.0/8", layerWith("", layer.ManagedByStore), loopback, true},
		{"file layer, the process allows 127.0.0.0/8", layerWith("", layer.ManagedByFile), loopback, true},
	}
	g, _ := grid.Builtin("EPSG:4326")
	for _, tt := range tests {
		s, err := wms.New(tt.l, tt.sh)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		calls.Store(0)
		tiles, err := s.Render(t.Context(), source.Request{Layer: "l", GridSet: g, Z: 1, Format: "image/png",
			Tiles: grid.TileRange{Z: 1, MinX: 0, MinY: 0, MaxX: 0, MaxY: 0}})
		if tt.allowed {
			if err != nil || len(tiles) != 1 || calls.Load() != 1 {
				t.Errorf("%s: got %d tiles, %v after %d requests; want the tile", tt.name, len(tiles), err, calls.Load())
			}
			continue
		}
		var ae *upstream.AddressError
		if !errors.As(err, &ae) || ae.Class != "loopback" || calls.Load() != 0 {
			t.Errorf("%s: got %v after %d requests; want the loopback address refused, no request", tt.name, err, calls.Load())
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "s3cret") || !strings.Contains(msg, "APIKEY=REDACTED") || !strings.Contains(msg, "127.0.0.1, a loopback address") {
			t.Errorf("%s: error %q: want the URL redacted and the address's class named", tt.name, msg)
		}
	}
}
