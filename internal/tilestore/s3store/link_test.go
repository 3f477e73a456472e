package s3store_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/tilestore"
)

// TestLinkReadsWithoutCredentials: a link GETs the object with no
// credentials, as an attachment of the name given; a link to a missing
// object answers 404; a link cannot outlast S3's 7 days.
func TestLinkReadsWithoutCredentials(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	body := []byte(strings.Repeat("archive bytes ", 100))
	mustPut(t, s, "_tilecache/exports/world/7.pmtiles", body, tilestore.Meta{ContentType: "application/vnd.pmtiles"})
	u, err := s.Link(ctx, "_tilecache/exports/world/7.pmtiles", "world-7.pmtiles", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(got) != string(body) {
		t.Fatalf("GET of the link: %d, %d bytes, want 200 and the object's %d", res.StatusCode, len(got), len(body))
	}
	if cd := res.Header.Get("Content-Disposition"); cd != `attachment; filename=world-7.pmtiles` {
		t.Errorf("Content-Disposition %q, want the attachment's name", cd)
	}
	missing, err := s.Link(ctx, "_tilecache/exports/world/8.pmtiles", "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := http.Get(missing); err != nil || res.StatusCode != 404 {
		t.Errorf("GET of a missing object's link: %v %v, want 404", res, err)
	} else {
		res.Body.Close()
	}
	if _, err := s.Link(ctx, "x", "", 8*24*time.Hour); !apperr.Is(err, apperr.Invalid) {
		t.Errorf("a link of 8 days: %v, want Invalid", err)
	}
}
