package discovery

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"tilecache/internal/layer"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/filestore"
	"tilecache/internal/tilestore/s3store"
)

// testLayers is a layer file with a custom grid of each kind next to the
// demo layer's built-in ones.
const testLayers = `
gridSets:
  - id: LAEA            # bottom-left, extent not a whole number of tiles
    epsg: 3035
    extent: [2000000, 1000000, 7000000, 6000000]
    resolutions: [4096, 2048, 1024, 512]
  - id: TopLeftWhole    # top-left, whole tiles at every level
    epsg: 2056
    extent: [0, 0, 1024, 512]
    tileWidth: 256
    tileHeight: 256
    resolutions: [2, 1, 0.5]
    alignTopLeft: true
  - id: TopLeftPartial  # top-left, 1100 units high: row 0 moves with the level
    epsg: 2056
    extent: [0, 0, 2048, 1100]
    resolutions: [4, 2, 1]
    alignTopLeft: true
layers:
  - name: demo:world
    title: Demo world
    attribution: tilecache test pattern
    gridSubsets:
      - gridSet: EPSG:4326
      - gridSet: EPSG:900913
    formats: [image/png, image/jpeg]
    parameterFilters:
      - {key: STYLES, default: "", values: ["", grid, plain]}
    source: {type: testpattern}
  - name: topo
    id: topo 50
    gridSubsets:
      - gridSet: LAEA
      - gridSet: TopLeftWhole
      - gridSet: TopLeftPartial
      - gridSet: EPSG:900913
        extent: [-1113194.91, 4163881.14, 3339584.72, 8399737.89]   # about 10°W..30°E, 35°N..60°N
        zoomStart: 2
        zoomStop: 9
    formats: [image/png8]
    source: {type: testpattern}
`

func testCatalogue(t testing.TB, yaml string) *layer.Catalogue {
	t.Helper()
	c, err := layer.Parse([]byte(yaml), "test layers")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testLayer(t testing.TB, c *layer.Catalogue, name string) *layer.Layer {
	t.Helper()
	l, ok := c.Layer(name)
	if !ok {
		t.Fatalf("layer %s missing", name)
	}
	return l
}

// forEachStore runs f against the filestore and, when the local AWS stack
// is up, against an S3 store on a prefix of its own.
func forEachStore(t *testing.T, f func(t *testing.T, s tilestore.Store)) {
	t.Run("filestore", func(t *testing.T) {
		s, err := filestore.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		f(t, s)
	})
	t.Run("s3store", func(t *testing.T) {
		testenv.RequireS3(t)
		bucket := os.Getenv("TILECACHE_S3_BUCKET")
		if bucket == "" {
			bucket = "tilecache-tiles"
		}
		s, err := s3store.NewFromEnv(os.LookupEnv, bucket, testenv.Name(t, "t"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var keys []string
			_ = s.List(ctx, "", func(o tilestore.Object) error { keys = append(keys, o.Key); return nil })
			if len(keys) > 0 {
				if _, err := s.Delete(ctx, keys); err != nil {
					t.Errorf("clean up: %v", err)
				}
			}
			s.Close()
		})
		f(t, s)
	})
}

// logBuffer collects a Publisher's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newTestPublisher(s tilestore.Store, c *layer.Catalogue, prefix, baseURL string) (*Publisher, *logBuffer) {
	var buf logBuffer
	p := NewPublisher(s, c, prefix, baseURL, slog.New(slog.NewJSONHandler(&buf, nil)))
	p.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	return p, &buf
}

func mustPut(t testing.TB, s tilestore.Store, key string, data []byte, meta tilestore.Meta) {
	t.Helper()
	if err := s.Put(t.Context(), key, data, meta); err != nil {
		t.Fatalf("Put(%q) error: %v", key, err)
	}
}

func mustGet(t testing.TB, s tilestore.Store, key string) ([]byte, tilestore.Meta) {
	t.Helper()
	data, meta, found, err := s.Get(t.Context(), key)
	if err != nil || !found {
		t.Fatalf("Get(%q): got found=%v, err=%v; want the object", key, found, err)
	}
	return data, meta
}

func exists(t testing.TB, s tilestore.Store, key string) bool {
	t.Helper()
	_, found, err := s.Stat(t.Context(), key)
	if err != nil {
		t.Fatalf("Stat(%q) error: %v", key, err)
	}
	return found
}

var pngMeta = tilestore.Meta{ContentType: "image/png"}

func newFileStore(t testing.TB) *filestore.Store {
	t.Helper()
	s, err := filestore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
