package storetest

import (
	"bytes"
	"testing"

	"tilecache/internal/tilestore"
)

// testUpload: a stream of known size is stored as one object (larger
// than one part of an S3 multipart upload, 16 MiB), read back whole with
// its meta and size, and replaces an object as a Put does; a stream
// shorter than its size stores nothing.
func testUpload(t *testing.T, newStore func(t *testing.T) tilestore.Store) {
	s := newStore(t)
	u, ok := s.(tilestore.Uploader)
	if !ok {
		t.Fatalf("%T is no tilestore.Uploader", s)
	}
	ctx := t.Context()
	big := randomBytes(17<<20+12345, 52)
	meta := tilestore.Meta{ContentType: "application/vnd.pmtiles"}
	if err := u.Upload(ctx, "exports/a.pmtiles", bytes.NewReader(big), int64(len(big)), meta); err != nil {
		t.Fatalf("Upload: %v", err)
	}
	got, gm, found, err := s.Get(ctx, "exports/a.pmtiles")
	if err != nil || !found || !bytes.Equal(got, big) || gm.ContentType != meta.ContentType {
		t.Fatalf("Get after Upload: found %v, %d bytes (equal %v), meta %+v, %v; want the %d bytes uploaded",
			found, len(got), bytes.Equal(got, big), gm, err, len(big))
	}
	if o, found, err := s.Stat(ctx, "exports/a.pmtiles"); err != nil || !found || o.Size != int64(len(big)) {
		t.Errorf("Stat after Upload: %+v %v %v, want %d bytes", o, found, err, len(big))
	}
	small := []byte("replaced")
	if err := u.Upload(ctx, "exports/a.pmtiles", bytes.NewReader(small), int64(len(small)), meta); err != nil {
		t.Fatalf("Upload over an object: %v", err)
	}
	if got, _, _, err := s.Get(ctx, "exports/a.pmtiles"); err != nil || !bytes.Equal(got, small) {
		t.Errorf("Get after an Upload over an object: %q %v, want %q", got, err, small)
	}
	if err := u.Upload(ctx, "exports/short.pmtiles", bytes.NewReader(small), int64(len(small))+10, meta); err == nil {
		t.Errorf("Upload of a stream shorter than its size succeeded")
	}
	if _, found, err := s.Stat(ctx, "exports/short.pmtiles"); err != nil || found {
		t.Errorf("a short Upload left an object: found %v, %v", found, err)
	}
}
