package upstream_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"tilecache/internal/imaging"
	"tilecache/internal/source/upstream"
	"tilecache/internal/vectortile"
)

func TestDecodeFailure(t *testing.T) {
	const report = `<?xml version="1.0" encoding="UTF-8"?>
<ServiceExceptionReport version="1.1.1"><ServiceException code="LayerNotDefined">
msWMSLoadGetMapParams(): WMS server error. Invalid layer(s) given in the LAYERS parameter.
</ServiceException></ServiceExceptionReport>`
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"exception", report, []string{"answer is not an image (application/vnd.ogc.se_xml)", ": LayerNotDefined: ", "Invalid layer(s) given in the LAYERS parameter."}},
		{"html", "<html><body><h1>502 Bad Gateway</h1></body></html>", []string{"answer is not an image (application/vnd.ogc.se_xml)", "502 Bad Gateway"}},
		{"broken png", "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR", []string{"undecodable image (application/vnd.ogc.se_xml): ", "unexpected EOF"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := imaging.Decode([]byte(c.body))
			if err == nil {
				t.Fatal("Decode accepted the body")
			}
			e := upstream.DecodeFailure("http://wms.test/?REQUEST=GetMap", "application/vnd.ogc.se_xml", err)
			if e.Status != 200 || e.URL != "http://wms.test/?REQUEST=REDACTED" {
				t.Errorf("got %+v, want status 200 and the URL, redacted", e)
			}
			for _, w := range c.want {
				if !strings.Contains(e.Msg, w) {
					t.Errorf("Msg %q lacks %q", e.Msg, w)
				}
			}
			if strings.Count(e.Error(), "not an image") > 1 || strings.Contains(e.Msg, "imaging: not an image") {
				t.Errorf("Msg %q repeats itself or names the package", e.Msg)
			}
		})
	}
}

// TestVectorCountedAgainstTheBudget: checking a vector tile takes what it
// may cost from the decode budget: while the budget is taken the check
// waits, and it goes on once the budget is released; a wait whose
// context ends is that context's error, nothing of the tile returned.
func TestVectorCountedAgainstTheBudget(t *testing.T) {
	raw, err := os.ReadFile("../../vectortile/testdata/mapserver-z4.pbf")
	if err != nil {
		t.Fatal(err)
	}
	p, err := upstream.NewPipeline([]string{vectortile.MVT}, upstream.ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		budget := upstream.NewBudget(64 << 20)
		release, err := budget.Acquire(t.Context(), 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			tile, err := p.Vector(t.Context(), budget, vectortile.MVT, raw, vectortile.MVT, "http://up/0/0/0.pbf", 3, 4)
			if err == nil && (tile.X != 3 || tile.Y != 4 || len(tile.Data) != len(raw)) {
				err = fmt.Errorf("tile %+v", tile)
			}
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("checked while the budget was taken: %v", err)
		default:
		}
		release()
		synctest.Wait()
		if err := <-done; err != nil {
			t.Fatal(err)
		}

		release, err = budget.Acquire(t.Context(), 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err = p.Vector(ctx, budget, vectortile.MVT, raw, vectortile.MVT, "http://up/0/0/0.pbf", 3, 4)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a wait past its deadline: %v, want the context's error", err)
		}
		release()
	})
}

// TestVectorGzipOfTwoMembers: a gzip stream of two members decompresses
// to more than its trailer (the last member's size) says, which the check
// reserves first; it is checked again with room for the largest tile, and
// stored. A tile past a limit is refused naming it.
func TestVectorGzipOfTwoMembers(t *testing.T) {
	raw, err := os.ReadFile("../../vectortile/testdata/mapserver-z4.pbf")
	if err != nil {
		t.Fatal(err)
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	two := append(gz(raw[:len(raw)/2]), gz(raw[len(raw)/2:])...)
	p, err := upstream.NewPipeline([]string{vectortile.MVT}, upstream.ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	budget := upstream.NewBudget(64 << 20)
	tile, err := p.Vector(t.Context(), budget, vectortile.MVT, two, vectortile.MVT, "http://up/0/0/0.pbf", 0, 0)
	if err != nil || tile.Encoding != "gzip" || !bytes.Equal(tile.Data, two) {
		t.Errorf("two members: %v, want the tile as sent", err)
	}
	layers := bytes.Repeat([]byte{0x1a, 0x04, 0x0a, 0x02, 'a', 'b'}, 2000)
	_, err = p.Vector(t.Context(), budget, vectortile.MVT, layers, vectortile.MVT, "http://up/0/0/0.pbf", 0, 0)
	var ue *upstream.Error
	if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "2000 layers, more than the 1000 a tile may have") {
		t.Errorf("2000 layers: %v, want an upstream error naming the limit", err)
	}
}
