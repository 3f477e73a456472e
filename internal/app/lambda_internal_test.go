package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/config"
	"tilecache/internal/layer"
)

func TestRecountRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		detail string
		layers []string
		ok     bool
	}{
		{``, nil, false},
		{`{}`, nil, false},
		{`{"recount":false}`, nil, false},
		{`{"recount":true}`, nil, true},
		{`{"recount":["a","b:c"]}`, []string{"a", "b:c"}, true},
		{`{"recount":[]}`, nil, false},
		{`{"recount":"yes"}`, nil, false},
		{`not json`, nil, false},
	}
	for _, tt := range tests {
		layers, ok := recountRequest(json.RawMessage(tt.detail))
		if ok != tt.ok || !slices.Equal(layers, tt.layers) {
			t.Errorf("recountRequest(%s): got %v, %v; want %v, %v", tt.detail, layers, ok, tt.layers, tt.ok)
		}
	}
}

// memKV is the edge path function's key-value store in memory: no
// emulator here serves CloudFront's KeyValueStore API (the adapter is
// tested against a fake of its wire protocol in internal/cdn/cloudfront).
type memKV struct {
	values  map[string]string
	version int
}

func (m *memKV) Read(context.Context) (map[string]string, string, error) {
	return maps.Clone(m.values), strconv.Itoa(m.version), nil
}

func (m *memKV) Write(_ context.Context, version string, put map[string]string, del []string) error {
	if version != strconv.Itoa(m.version) {
		return fmt.Errorf("version %s, not %d", version, m.version)
	}
	maps.Copy(m.values, put)
	for _, k := range del {
		delete(m.values, k)
	}
	m.version++
	return nil
}

// TestScheduleSyncsEdgeAfterALayerChange: the cleaner's invocation writes
// the edge function's grid sets after a cold start, and again when it sees
// a new layer configuration (a grid set added through the REST interface
// in another process is mapped at the edge within a minute).
func TestScheduleSyncsEdgeAfterALayerChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, err := config.Load(func(k string) (string, bool) {
		v, ok := map[string]string{"TILECACHE_DATA": dir, "TILECACHE_LAYERS_REFRESH": "1ms"}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewWorker(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	kv := &memKV{values: map[string]string{}}
	p.edge = kv
	if err := p.HandleSchedule(t.Context(), events.EventBridgeEvent{}); err != nil {
		t.Fatal(err)
	}
	has := func(part string) bool {
		for k := range kv.values {
			if strings.Contains(k, part) {
				return true
			}
		}
		return false
	}
	if !has("EPSG:4326") || has("Quarter") {
		t.Fatalf("after a cold start the edge holds %v", kv.values)
	}
	// Another registry on the same store (another process) adds a grid set
	// and a layer that uses it.
	other, err := layer.OpenRegistry(t.Context(), nil, "none", p.Config, time.Hour, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		if _, err := doc.PutGridSet("Quarter", []byte("id: Quarter\nepsg: 4326\nextent: [-180, -90, 180, 90]\ntileWidth: 512\ntileHeight: 512\nresolutions: [0.3515625, 0.17578125]\n")); err != nil {
			return err
		}
		_, err := doc.PutLayer("q", []byte("name: q\ngridSubsets: [{gridSet: Quarter}]\nformats: [image/png]\nsource: {type: testpattern}\n"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := kv.version
	time.Sleep(5 * time.Millisecond)
	if err := p.HandleSchedule(t.Context(), events.EventBridgeEvent{}); err != nil {
		t.Fatal(err)
	}
	if !has("Quarter") || kv.version != before+1 {
		t.Errorf("after the change the edge holds %v (written %d times since)", kv.values, kv.version-before)
	}
	// Nothing changed: nothing written.
	if err := p.HandleSchedule(t.Context(), events.EventBridgeEvent{}); err != nil {
		t.Fatal(err)
	}
	if kv.version != before+1 {
		t.Errorf("an invocation without a change wrote the edge")
	}
}
