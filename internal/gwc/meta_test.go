package gwc_test

import (
	"context"
	"errors"
	"maps"
	"testing"

	"tilecache/internal/gwc"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/filestore"
)

func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		prefix, marker, layerMetadata, parameters string
	}{
		{"", "metadata.properties", "topp:states/metadata.properties", "topp:states/parameters-abc.properties"},
		{"tiles", "tiles/metadata.properties", "tiles/topp:states/metadata.properties",
			"tiles/topp:states/parameters-abc.properties"},
		{"tiles/", "tiles/metadata.properties", "tiles/topp:states/metadata.properties",
			"tiles/topp:states/parameters-abc.properties"},
		{"a/b", "a/b/metadata.properties", "a/b/topp:states/metadata.properties",
			"a/b/topp:states/parameters-abc.properties"},
	} {
		t.Run("prefix "+tc.prefix, func(t *testing.T) {
			if got := gwc.MarkerKey(tc.prefix); got != tc.marker {
				t.Errorf("MarkerKey: got %q, want %q", got, tc.marker)
			}
			if got := gwc.LayerMetadataKey(tc.prefix, "topp:states"); got != tc.layerMetadata {
				t.Errorf("LayerMetadataKey: got %q, want %q", got, tc.layerMetadata)
			}
			// The parameters object's key is the tile store's; checked here
			// beside the others because GeoWebCache needs all three alike.
			if got := tilestore.ParametersKey(tc.prefix, "topp:states", "abc"); got != tc.parameters {
				t.Errorf("ParametersKey: got %q, want %q", got, tc.parameters)
			}
		})
	}
}

func TestMarker(t *testing.T) {
	marker := gwc.Marker()
	want, err := gwc.Marshal(nil, "GeoWebCache blob store")
	if err != nil {
		t.Fatal(err)
	}
	if string(marker) != string(want) {
		t.Errorf("got %q, want %q", marker, want)
	}
	m, err := gwc.Unmarshal(marker)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 0 {
		t.Errorf("the marker has entries %q, want none", m)
	}
}

func TestParametersObject(t *testing.T) {
	params := map[string]string{"STYLES": "pophatch", "CQL_FILTER": "NAME = 'Été'", "TIME": "2020-01-01T00:00:00Z"}
	got, err := gwc.ParametersObject(params)
	if err != nil {
		t.Fatal(err)
	}
	want := `CQL_FILTER=NAME \= '\u00C9t\u00E9'` + "\nSTYLES=pophatch\nTIME=2020-01-01T00\\:00\\:00Z\n"
	if string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	again, err := gwc.ParametersObject(maps.Clone(params))
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(got) {
		t.Errorf("the same parameters gave %q, then %q", got, again)
	}
	if _, err := gwc.ParametersObject(map[string]string{"STYLES": "\xff"}); err == nil {
		t.Error("got no error for a value that is not UTF-8")
	}
	if ct := gwc.Meta().ContentType; ct != "text/plain; charset=ISO-8859-1" {
		t.Errorf("content type %q", ct)
	}
}

func TestEnsureMarker(t *testing.T) {
	for _, prefix := range []string{"", "cache"} {
		t.Run("prefix "+prefix, func(t *testing.T) {
			ctx := t.Context()
			s, err := filestore.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			key := gwc.MarkerKey(prefix)
			if err := gwc.EnsureMarker(ctx, s, prefix); err != nil {
				t.Fatal(err)
			}
			data, meta, found, err := s.Get(ctx, key)
			if err != nil || !found {
				t.Fatalf("marker %s: found %v, err %v", key, found, err)
			}
			if string(data) != string(gwc.Marker()) || meta.ContentType != gwc.ContentType {
				t.Errorf("marker %q (%s), want %q (%s)", data, meta.ContentType, gwc.Marker(), gwc.ContentType)
			}

			// A marker someone else wrote (GeoWebCache writes its own) is
			// left as it is.
			theirs := []byte("#\n#Thu Jan 01 00:00:00 UTC 2026\n")
			if err := s.Put(ctx, key, theirs, tilestore.Meta{ContentType: "text/plain"}); err != nil {
				t.Fatal(err)
			}
			if err := gwc.EnsureMarker(ctx, s, prefix); err != nil {
				t.Fatal(err)
			}
			data, _, _, err = s.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != string(theirs) {
				t.Errorf("the existing marker became %q", data)
			}
		})
	}
}

// markerStore is a MarkerStore whose calls can fail: a real store cannot
// be made to fail on demand.
type markerStore struct {
	stat func(key string) (bool, error)
	put  func(key string) error
}

var _ gwc.MarkerStore = markerStore{}

func (s markerStore) Stat(_ context.Context, key string) (tilestore.Object, bool, error) {
	found, err := s.stat(key)
	return tilestore.Object{Key: key}, found, err
}

func (s markerStore) Put(_ context.Context, key string, _ []byte, _ tilestore.Meta) error {
	return s.put(key)
}

func TestEnsureMarkerErrors(t *testing.T) {
	boom := errors.New("boom")
	t.Run("stat", func(t *testing.T) {
		s := markerStore{
			stat: func(string) (bool, error) { return false, boom },
			put:  func(string) error { t.Error("Put after a failed Stat"); return nil },
		}
		if err := gwc.EnsureMarker(t.Context(), s, "p"); !errors.Is(err, boom) {
			t.Errorf("got %v, want %v", err, boom)
		}
	})
	t.Run("put", func(t *testing.T) {
		var put string
		s := markerStore{
			stat: func(string) (bool, error) { return false, nil },
			put:  func(key string) error { put = key; return boom },
		}
		if err := gwc.EnsureMarker(t.Context(), s, "p"); !errors.Is(err, boom) {
			t.Errorf("got %v, want %v", err, boom)
		}
		if put != "p/metadata.properties" {
			t.Errorf("put %q, want p/metadata.properties", put)
		}
	})
}
