package discovery

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/tilestore"
)

// TestRefreshLayersIsRefresh: after a change of some layers, refreshing
// those alone leaves the store as a whole Refresh does (every document,
// byte for byte) and reports the same keys changed, while the other
// layers' tile sets are taken from the stored index, not looked for.
func TestRefreshLayersIsRefresh(t *testing.T) {
	withoutJPEG := strings.Replace(testLayers, "formats: [image/png, image/jpeg]", "formats: [image/png]", 1)
	withoutTopo := testLayers[:strings.Index(testLayers, "  - name: topo")]
	retitled := strings.Replace(testLayers, "title: Demo world", "title: The demo world", 1)
	both := [][3]string{{"demo:world", "EPSG:900913", "image/png"}, {"demo:world", "EPSG:4326", "image/png"}, {"topo", "LAEA", "image/png8"}}
	for _, tt := range []struct {
		name    string
		before  [][3]string
		tiles   []string
		layers  string
		changed []string
		// untouched is a layer id whose objects RefreshLayers must not read.
		untouched string
	}{
		{"a format removed", append(slices.Clone(both), [3]string{"demo:world", "EPSG:900913", "image/jpeg"}), nil, withoutJPEG, []string{"demo:world"}, "topo 50"},
		{"a layer deleted", both, nil, withoutTopo, []string{"topo"}, "demo:world"},
		{"a layer retitled", both, nil, retitled, []string{"demo:world"}, "topo 50"},
		{"a layer retitled, its tiles without documents", both[2:], []string{prefix + "/demo:world/EPSG:900913/jpeg/default/3/1/2.jpeg"}, retitled, []string{"demo:world"}, "topo 50"},
		{"nothing stored yet", nil, []string{prefix + "/topo 50/LAEA/png8/default/0/0/0.png"}, testLayers, []string{"topo"}, "demo:world"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var reads *readLog
			run := func(refresh func(p *Publisher) ([]string, error)) (tilestore.Store, []string) {
				s := newFileStore(t)
				p, _ := newTestPublisher(s, testCatalogue(t, testLayers), prefix, "")
				for _, b := range tt.before {
					if _, err := p.Ensure(t.Context(), b[0], b[1], b[2], nil); err != nil {
						t.Fatal(err)
					}
				}
				for _, k := range tt.tiles {
					mustPut(t, s, k, []byte("tile"), pngMeta)
				}
				reads = &readLog{Store: s}
				p2, _ := newTestPublisher(s, testCatalogue(t, tt.layers), prefix, "")
				p2.tiles = reads
				changed, err := refresh(p2)
				if err != nil {
					t.Fatal(err)
				}
				return s, sorted(changed)
			}
			whole, wantChanged := run(func(p *Publisher) ([]string, error) { return p.Refresh(t.Context()) })
			// The layers named by their store id, as the catalogue has them.
			part, gotChanged := run(func(p *Publisher) ([]string, error) { return p.RefreshLayers(t.Context(), tt.changed) })
			for _, k := range reads.keys {
				if strings.HasPrefix(k, prefix+"/"+tt.untouched+"/") || strings.HasPrefix(k, prefix+"/"+ogcDir+"collections/"+tt.untouched) {
					t.Errorf("RefreshLayers(%q) read %s, an object of another layer", tt.changed, k)
				}
			}
			if !slices.Equal(gotChanged, wantChanged) {
				t.Errorf("changed %q, want %q", gotChanged, wantChanged)
			}
			contents := func(s tilestore.Store) map[string][]byte {
				out := map[string][]byte{}
				if err := s.List(t.Context(), prefix+"/", func(o tilestore.Object) error {
					data, _ := mustGet(t, s, o.Key)
					out[o.Key] = data
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				return out
			}
			got, want := contents(part), contents(whole)
			for k, w := range want {
				if g, ok := got[k]; !ok || !bytes.Equal(g, w) {
					t.Errorf("%s: %q, want %q", k, g, w)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s stored, not by Refresh", k)
				}
			}
		})
	}
}

// readLog records the keys and prefixes a Publisher reads.
type readLog struct {
	tilestore.Store
	keys []string
}

func (r *readLog) Get(ctx context.Context, key string) ([]byte, tilestore.Meta, bool, error) {
	r.keys = append(r.keys, key)
	return r.Store.Get(ctx, key)
}

func (r *readLog) Stat(ctx context.Context, key string) (tilestore.Object, bool, error) {
	r.keys = append(r.keys, key)
	return r.Store.Stat(ctx, key)
}

func (r *readLog) List(ctx context.Context, prefix string, fn func(tilestore.Object) error) error {
	r.keys = append(r.keys, prefix)
	return r.Store.List(ctx, prefix, fn)
}
