package s3store_test

import (
	"bytes"
	"testing"

	"github.com/minio/minio-go/v7"

	"tilecache/internal/tilestore"
)

// TestChecksumOfUploadsInParts: an object written behind the store's back
// in one PUT has the MD5 of its content (its ETag); one uploaded in parts
// has an ETag that is no digest ("…-2") and reports MD5 "" (unknown).
func TestChecksumOfUploadsInParts(t *testing.T) {
	raw, bucket := setup(t)
	s := newStore(t)
	small := bytes.Repeat([]byte("tile"), 1000)
	big := bytes.Repeat([]byte("part"), (5<<20+1024)/4) // two parts of at most 5 MiB
	objects := []struct {
		key      string
		data     []byte
		partSize uint64
		want     string
	}{
		{"raw/0/0/0.png", small, 0, tilestore.ContentMD5(small)},
		{"raw/0/0/1.png", big, 5 << 20, ""},
	}
	for _, o := range objects {
		info, err := raw.PutObject(t.Context(), bucket, s.Prefix()+o.key, bytes.NewReader(o.data), int64(len(o.data)),
			minio.PutObjectOptions{ContentType: "image/png", PartSize: o.partSize})
		if err != nil {
			t.Fatalf("raw PutObject(%q): %v", o.key, err)
		}
		t.Logf("%s: %d bytes, ETag %s", o.key, len(o.data), info.ETag)
	}
	listed := map[string]string{}
	err := s.List(t.Context(), "raw/", func(obj tilestore.Object) error {
		listed[obj.Key] = obj.MD5
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		obj, found, err := s.Stat(t.Context(), o.key)
		if err != nil || !found {
			t.Fatalf("Stat(%q): found=%v, err=%v", o.key, found, err)
		}
		if obj.MD5 != o.want {
			t.Errorf("Stat(%q).MD5: got %q, want %q", o.key, obj.MD5, o.want)
		}
		if got, ok := listed[o.key]; !ok || got != o.want {
			t.Errorf("List: %s has MD5 %q (listed %v), want %q", o.key, got, ok, o.want)
		}
	}
}
