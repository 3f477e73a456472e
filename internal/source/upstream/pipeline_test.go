package upstream_test

import (
	"strings"
	"testing"

	"tilecache/internal/imaging"
	"tilecache/internal/source/upstream"
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
