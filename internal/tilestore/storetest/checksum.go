package storetest

import (
	"testing"

	"tilecache/internal/tilestore"
)

// testChecksum: after a Put, Stat and List report the MD5 of the data put
// (or, for a backend declared NoMD5, ""), and an overwrite changes it.
func testChecksum(t *testing.T, newStore func(t *testing.T) tilestore.Store, known bool) {
	s := newStore(t)
	objects := map[string][]byte{
		"sum/EPSG:4326/png/default/3/5/2.png":   randomBytes(3000, 40),
		"sum/EPSG:4326/png/default/3/5/3.png":   randomBytes(3000, 41), // same size, other content
		"sum/EPSG:4326/jpeg/default/0/0/0.jpeg": {},
		"sum/all.bin":                           allByteValues(),
	}
	want := func(data []byte) string {
		if !known {
			return ""
		}
		return tilestore.ContentMD5(data)
	}
	check := func(step string) {
		t.Helper()
		for key, data := range objects {
			obj, found, err := s.Stat(t.Context(), key)
			if err != nil || !found {
				t.Fatalf("%s: Stat(%q): got found=%v, err=%v; want found=true, err=nil", step, key, found, err)
			}
			if obj.MD5 != want(data) {
				t.Errorf("%s: Stat(%q).MD5: got %q, want %q", step, key, obj.MD5, want(data))
			}
		}
		listed := mustList(t, s, "sum/")
		if len(listed) != len(objects) {
			t.Fatalf("%s: List: got %d objects, want %d", step, len(listed), len(objects))
		}
		for _, o := range listed {
			if data := objects[o.Key]; o.MD5 != want(data) {
				t.Errorf("%s: List: %s has MD5 %q, want %q", step, o.Key, o.MD5, want(data))
			}
		}
	}
	for key, data := range objects {
		mustPut(t, s, key, data, tilestore.Meta{ContentType: "image/png"})
	}
	check("after Put")

	// An overwrite with other content (and meta) changes the MD5; one
	// with the same content keeps it.
	changed := "sum/EPSG:4326/png/default/3/5/2.png"
	objects[changed] = randomBytes(3000, 42)
	mustPut(t, s, changed, objects[changed], tilestore.Meta{ContentType: "image/png", CacheControl: "max-age=60"})
	same := "sum/all.bin"
	mustPut(t, s, same, objects[same], tilestore.Meta{ContentType: "application/octet-stream"})
	check("after overwrites")
}
