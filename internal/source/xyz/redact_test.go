package xyz_test

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
	"tilecache/internal/source/xyz"
)

const (
	secretPass = "s3cretpw"
	secretKey  = "K3Y-SECRET"
)

func newSecretSource(t *testing.T, u string) (*xyz.Source, error) {
	t.Helper()
	cat, err := layer.Parse([]byte(`
layers:
  - name: up
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: xyz, url: "`+u+`", retries: -1, allowPrivateUpstream: true}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := cat.Layer("up")
	return xyz.New(l, upstream.Shared{})
}

// TestRenderErrorsRedactTheURL: the error of a tile fetched from a
// template with a password and a key names the host, the tile's path and
// the parameter, not the secrets; the upstream still receives them.
func TestRenderErrorsRedactTheURL(t *testing.T) {
	var small bytes.Buffer
	if err := png.Encode(&small, image.NewGray(image.Rect(0, 0, 10, 10))); err != nil {
		t.Fatal(err)
	}
	answers := map[string]func(w http.ResponseWriter){
		"HTTP 500": func(w http.ResponseWriter) { http.Error(w, "tile server exploded", 500) },
		"not an image": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<h1>login</h1>"))
		},
		"tile of the wrong size": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "image/png")
			w.Write(small.Bytes())
		},
	}
	var answer func(w http.ResponseWriter)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, _ := r.BasicAuth(); user != "tileuser" || pass != secretPass || r.URL.Query().Get("key") != secretKey {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		answer(w)
	}))
	defer srv.Close()
	host := srv.Listener.Addr().String()
	s, err := newSecretSource(t, "http://tileuser:"+secretPass+"@"+host+"/tiles/{z}/{x}/{y}.png?key="+secretKey)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := grid.Builtin("EPSG:900913")
	for name, a := range answers {
		answer = a
		_, err := s.Render(t.Context(), source.Request{Layer: "up", GridSet: g, Z: 1, Format: "image/png",
			Tiles: grid.TileRange{Z: 1, MinX: 1, MinY: 0, MaxX: 1, MaxY: 0}})
		ue, ok := errors.AsType[*upstream.Error](err)
		if !ok {
			t.Errorf("%s: got %v, want an *upstream.Error", name, err)
			continue
		}
		for _, secret := range []string{secretPass, secretKey, "tileuser"} {
			if strings.Contains(err.Error(), secret) || strings.Contains(ue.URL, secret) {
				t.Errorf("%s: the error carries %q: %v", name, secret, err)
			}
		}
		if want := host + "/tiles/1/1/1.png?key=REDACTED"; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not mention %q", name, err, want)
		}
	}
}

func TestNewErrorRedactsTheURL(t *testing.T) {
	_, err := newSecretSource(t, "http://tileuser:"+secretPass+"@h/tiles/{x}/{y}.png?key="+secretKey)
	if err == nil || !strings.Contains(err.Error(), `"http://h/tiles/{x}/{y}.png?key=REDACTED" needs {z}`) ||
		strings.Contains(err.Error(), secretPass) || strings.Contains(err.Error(), secretKey) {
		t.Errorf("got %v, want the template redacted", err)
	}
}
