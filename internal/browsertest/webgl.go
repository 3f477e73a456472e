package browsertest

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// OpenWebGL is Open with WebGL drawn in software (SwiftShader through
// ANGLE), for pages that draw with WebGL (MapLibre GL): no GPU is used,
// as with Open.
func OpenWebGL(t testing.TB, url string, timeout time.Duration) *Page {
	t.Helper()
	return open(t, url, timeout, nil,
		chromedp.Flag("use-angle", "swiftshader"),
		chromedp.Flag("enable-unsafe-swiftshader", true),
		chromedp.Flag("ignore-gpu-blocklist", true),
	)
}
