package layer_test

import (
	"testing"

	"tilecache/internal/imaging"
	"tilecache/internal/layer"
)

// TestMaxMetatilePixelsIsTheDecodersBound: a WMS layer is refused exactly
// when its metatile could not be decoded.
func TestMaxMetatilePixelsIsTheDecodersBound(t *testing.T) {
	if layer.MaxMetatilePixels != imaging.MaxPixels {
		t.Errorf("layer.MaxMetatilePixels = %d, imaging.MaxPixels = %d: keep them equal", layer.MaxMetatilePixels, imaging.MaxPixels)
	}
}
