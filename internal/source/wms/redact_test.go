package wms_test

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/source/wms"
)

const (
	secretPass = "s3cretpw"
	secretKey  = "K3Y-SECRET"
)

func secretLayer(t *testing.T, u string) *layer.Layer {
	t.Helper()
	return layerOf(t, `
layers:
  - name: l
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: wms, url: "`+u+`", layers: a, retries: -1, allowPrivateUpstream: true}
`)
}

// TestRenderErrorsRedactTheURL: whatever fails, the error of a GetMap to
// a URL with a password and an API key names the WMS's host, path and
// parameters, but neither secret; the WMS still receives both.
func TestRenderErrorsRedactTheURL(t *testing.T) {
	var small bytes.Buffer
	if err := png.Encode(&small, image.NewGray(image.Rect(0, 0, 10, 10))); err != nil {
		t.Fatal(err)
	}
	answers := map[string]func(w http.ResponseWriter){
		"HTTP 500": func(w http.ResponseWriter) { http.Error(w, "map server exploded", 500) },
		"service exception": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/vnd.ogc.se_xml")
			w.Write([]byte(`<ServiceExceptionReport><ServiceException code="LayerNotDefined">no layer a</ServiceException></ServiceExceptionReport>`))
		},
		"image of the wrong size": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "image/png")
			w.Write(small.Bytes())
		},
	}
	var answer func(w http.ResponseWriter)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The source sends the URL's parameter names in upper case.
		if user, pass, _ := r.BasicAuth(); user != "wmsuser" || pass != secretPass || r.URL.Query().Get("APIKEY") != secretKey {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		answer(w)
	}))
	defer srv.Close()
	host := srv.Listener.Addr().String()
	s, err := wms.New(secretLayer(t, "http://wmsuser:"+secretPass+"@"+host+"/wms?apikey="+secretKey), upstream.Shared{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := grid.Builtin("EPSG:4326")
	for name, a := range answers {
		answer = a
		_, err := s.Render(t.Context(), source.Request{Layer: "l", GridSet: g, Z: 1, Format: "image/png",
			Tiles: grid.TileRange{Z: 1, MinX: 0, MinY: 0, MaxX: 0, MaxY: 0}})
		ue, ok := errors.AsType[*upstream.Error](err)
		if !ok {
			t.Errorf("%s: got %v, want an *upstream.Error", name, err)
			continue
		}
		for _, secret := range []string{secretPass, secretKey, "wmsuser"} {
			if strings.Contains(err.Error(), secret) || strings.Contains(ue.URL, secret) {
				t.Errorf("%s: the error carries %q: %v", name, secret, err)
			}
		}
		for _, want := range []string{host + "/wms?", "APIKEY=REDACTED", "LAYERS=REDACTED", "BBOX="} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not mention %q", name, err, want)
			}
		}
	}
}

func TestNewErrorRedactsTheURL(t *testing.T) {
	_, err := wms.New(secretLayer(t, "ftp://wmsuser:"+secretPass+"@x/wms?apikey="+secretKey), upstream.Shared{})
	if err == nil || !strings.Contains(err.Error(), `"ftp://x/wms?apikey=REDACTED" is not an http(s) URL`) ||
		strings.Contains(err.Error(), secretPass) || strings.Contains(err.Error(), secretKey) {
		t.Errorf("got %v, want the URL redacted", err)
	}
}
